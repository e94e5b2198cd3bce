# chartreg: `make run` serves the embedded sample charts, `make test` runs every test.
CARGO ?= cargo
LISTEN ?= 0.0.0.0:5000
# The server (goes into the image) and the build tool (runs on the build machine), side by side.
BIN := target/release/chartreg
BUILD_TOOL := target/release/chartreg-build

.PHONY: all assets build run test tools lint clean

all: build

# Pack charts/ into assets/charts (rewrites only what changed; a bad package leaves assets/ as it was).
# Builds only the build tool: neither the server nor its HTTP and TLS stack is compiled for this.
assets:
	$(CARGO) build --quiet --release -p chartreg-build
	$(BUILD_TOOL) pack charts --out assets --prefix charts

# Pack, then build the server with assets/ embedded.
build: assets
	$(CARGO) build --release -p chartreg

# Serve the embedded charts on $(LISTEN).
run: build
	$(BIN) serve --listen $(LISTEN)

# Helm 3.17 and 4.3 (into .tools/), skopeo, docker-registry and gnupg (Debian), when missing.
tools:
	scripts/install-tools.sh

# Formatting and lints, warnings as errors.
lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --release --workspace --all-targets -- -D warnings

# Every test, against the release binary. Never rewrites assets/: the test that checks it packs
# charts/ into a temporary folder and compares.
# Both binaries are built once, by this one cargo run; tests find the other binary beside theirs.
test: tools lint
	$(CARGO) test --release --workspace

clean:
	$(CARGO) clean

# chartreg against nginx (static files) and CNCF distribution on the same content, in one run,
# beside a bare actix-web control (examples/bare_actix.rs):
# installs the tools it needs, builds chartreg with generated content (target/bench), writes
# BENCHMARKS.md and bench/results/. About 14 minutes; see bench/run.sh for its settings.
.PHONY: bench
bench:
	bench/run.sh
