# chartreg: `make run` serves the embedded sample charts, `make test` runs every test.
CARGO ?= cargo
LISTEN ?= 0.0.0.0:5000
BIN := target/release/chartreg

.PHONY: all assets build run test tools lint clean

all: build

# Pack charts/ into assets/charts (rewrites only what changed; a bad package leaves assets/ as it was).
assets:
	$(CARGO) run --quiet --release -- pack charts --out assets --prefix charts

# Pack, then build the release binary with assets/ embedded.
build: assets
	$(CARGO) build --release

# Serve the embedded charts on $(LISTEN).
run: build
	$(BIN) serve --listen $(LISTEN)

# Helm 3.17 and 4.3 (into .tools/), skopeo, docker-registry and gnupg (Debian), when missing.
tools:
	scripts/install-tools.sh

# Formatting and lints, warnings as errors.
lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --release --all-targets -- -D warnings

# Every test, against the release binary. Never rewrites assets/: the test that checks it packs
# charts/ into a temporary folder and compares.
test: tools lint
	$(CARGO) test --release

clean:
	$(CARGO) clean

# chartreg against nginx (static files) and CNCF distribution on the same content, in one run,
# beside a bare actix-web control (examples/bare_actix.rs):
# installs the tools it needs, builds chartreg with generated content (target/bench), writes
# BENCHMARKS.md and bench/results/. About 14 minutes; see bench/run.sh for its settings.
.PHONY: bench
bench:
	bench/run.sh
