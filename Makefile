# chartreg: `make run` serves the embedded sample charts, `make test` runs every test.
CARGO ?= cargo
LISTEN ?= 0.0.0.0:5000
# The folder cargo builds into: target/ unless CARGO_TARGET_DIR (relative to this folder, or
# absolute) or cargo's configuration says otherwise, as cargo reports it (scripts/target-dir.sh);
# asked once, when a recipe first needs it.
TARGET_DIR = $(eval TARGET_DIR := $(shell CARGO=$(CARGO) scripts/target-dir.sh))$(or $(TARGET_DIR),$(error scripts/target-dir.sh found no target folder))
# The build tool (runs on the build machine) and the server it compiles with the content inside
# (statically linked: it goes into the image). The server is compiled as a team compiles it, by
# `chartreg-build build`, from the kit (scripts/make-kit.sh) at $(KIT): where the tool finds
# it beside itself ($(TARGET_DIR)/share/chartreg/kit, as bin/../share/chartreg/kit in the
# release archive), given as --kit so that KIT=... (with KIT_CACHE=...) shares another tree's.
BUILD_TOOL = $(TARGET_DIR)/release/chartreg-build
KIT = $(TARGET_DIR)/share/chartreg/kit
BIN = $(TARGET_DIR)/server/chartreg
# One cache for this tree's kit (`VERSION-dev`): an edit of the server recompiles what it touches.
KIT_CACHE = $(TARGET_DIR)/kit-cache
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)

.PHONY: all assets assets-check build-tool build check docs kit dist builder-image fetch image image-containerfile run test tools lint clean stress

# Every input of assets/ (charts, chart folders, image layouts), written down once.
CONTENT ?= content.yaml

all: build

# The build tool alone (the server is not compiled for it).
build-tool:
	$(CARGO) build --quiet --release -p chartreg-build

# Pack what $(CONTENT) lists into assets/ (rewrites only what changed; a bad input leaves assets/
# as it was).
assets: build-tool
	'$(BUILD_TOOL)' pack --config $(CONTENT) --out assets

# Fail, naming them, when the committed parts of assets/ (chart repositories, pack's record) are
# not what packing gives, writing nothing; then rebuild the image layouts, which are not committed.
assets-check: build-tool
	'$(BUILD_TOOL)' pack --config $(CONTENT) --out assets --check
	'$(BUILD_TOOL)' pack --config $(CONTENT) --out assets

# Take what mindthegap-style lists name from upstream into charts/ and images/, pinned by the lock
# beside CHARTS_FILE (see the README, "Fetching from upstream"). The only target that needs the
# network; FETCH_FLAGS=--locked takes exactly what the lock pins.
CHARTS_FILE ?=
IMAGES_FILE ?=
FETCH_FLAGS ?=
fetch: build-tool
	'$(BUILD_TOOL)' fetch $(if $(CHARTS_FILE),--helm-charts-file $(CHARTS_FILE)) \
		$(if $(IMAGES_FILE),--images-file $(IMAGES_FILE)) $(FETCH_FLAGS)

# The server kit of this tree (rewritten only when its sources change).
kit:
	CARGO=$(CARGO) scripts/make-kit.sh '$(KIT)' $(VERSION)-dev

# Pack, then compile the server with assets/ embedded (the folder beside $(CONTENT)), as a
# team's build machine does.
build: build-tool kit
	'$(BUILD_TOOL)' build --config $(CONTENT) --kit '$(KIT)' --out '$(BIN)' --cache '$(KIT_CACHE)'

# The release archives a build machine installs (the build tool, the kit, the deploy chart, the
# licences, SHA256SUMS), made from the source release beside them (the tree without .git):
# target/dist/chartreg-build-VERSION-ARCH-linux.tar.xz for this machine and for aarch64
# (cross-compiled: dist-aarch64, below), and chartreg-VERSION-src.tar.gz
# (scripts/make-dist.sh). `make dist-host` writes this machine's alone, which the builder
# image and `make test` use (the aarch64 tool is another cold compile: see dist-aarch64).
.PHONY: dist-host
dist: dist-host dist-aarch64
dist-host: build-tool
	CARGO=$(CARGO) scripts/make-dist.sh '$(BUILD_TOOL)' target/dist

# The container image (the static binary on $(IMAGE_BASE)), as an OCI image layout in
# target/image/oci, tagged VERSION-CONTENT (the version and the content digest's first 12 hex
# digits) unless IMAGE_TAG=... says otherwise; the tag is written to target/image/tag. See
# scripts/build-image.sh (IMAGE_SOURCE, IMAGE_OUT, CONTAINER_ENGINE).
IMAGE_BASE ?= scratch
BUILD_IMAGE = SERVER_BIN='$(BIN)' BUILD_TOOL='$(BUILD_TOOL)' IMAGE_BASE=$(IMAGE_BASE) scripts/build-image.sh
image: build
	$(BUILD_IMAGE)

# The same image from the Containerfile with an engine (CONTAINER_ENGINE: buildah by default),
# for teams that build images their own way; the same tag and labels.
CONTAINER_ENGINE ?= buildah
image-containerfile: build
	CONTAINER_ENGINE=$(CONTAINER_ENGINE) $(BUILD_IMAGE)

# The builder image (scripts/make-builder-image.sh, as root): the release archive's tool and kit,
# this machine's Rust toolchain, gcc and a warm build cache on Debian 12, as an OCI image layout,
# target/dist/builder-oci, tagged with the version (target/dist/builder-tag).
builder-image: dist-host
	scripts/make-builder-image.sh \
		target/dist/chartreg-build-$(VERSION)-$(shell uname -m)-linux.tar.xz target/dist/builder-oci
# The builder image that builds linux/arm64 servers as well (BUILDER_CROSS=arm64: Debian's
# rustc-web, the aarch64 standard library and cross gcc in its root file system, and a warm
# cache of both platforms), target/dist/builder-cross/oci; `make test-builder-cross` builds an
# arm64 server in it, offline (crates/chartreg-build/tests/builder_image.rs). Not part of `make
# test`: its warm-up is a cold aarch64 compile as well.
.PHONY: builder-image-cross test-builder-cross
builder-image-cross: tools-cross dist-host
	BUILDER_CROSS=arm64 scripts/make-builder-image.sh \
		target/dist/chartreg-build-$(VERSION)-$(shell uname -m)-linux.tar.xz target/dist/builder-cross/oci
test-builder-cross: tools builder-image-cross
	$(CARGO) test --release -p chartreg-build --test builder_image -- --ignored

# linux/arm64 beside linux/amd64, from this amd64 machine: Debian's Rust (rustc-web) with the
# aarch64 standard library, the aarch64 cross gcc and qemu-user (`make tools-cross`:
# scripts/install-cross.sh).
# `make build-arm64` compiles the server of the same content for linux/arm64
# ($(TARGET_DIR)/server/chartreg.linux-arm64; objects for large files at ARM64_LINK_THRESHOLD
# bytes and more: small, so that the sample content's layers take that path too);
# `make image-multiplatform` writes one image index of both platforms to
# target/image-multiplatform/oci (tag in target/image-multiplatform/tag), as `make image` writes
# one; `make test-arm64` runs the arm64 server under qemu-user against Helm 3 and 4, skopeo,
# curl and containerd (tests/arm64.rs), not part of `make test`: a cold aarch64 compile of the
# server is 884 s of CPU (about 7.5 minutes on two idle cores; 39 minutes measured beside other
# builds), which CI's 30 minutes do not hold; with a warm kit cache it is the embedding crate
# and the link.
BIN_ARM64 = $(TARGET_DIR)/server/chartreg.linux-arm64
ARM64_LINK_THRESHOLD ?= 8192
.PHONY: tools-cross build-arm64 image-multiplatform test-arm64
tools-cross:
	scripts/install-cross.sh
build-arm64: tools-cross build-tool kit
	CHARTREG_LINK_THRESHOLD=$(ARM64_LINK_THRESHOLD) '$(BUILD_TOOL)' build --config $(CONTENT) \
		--kit '$(KIT)' --out '$(BIN_ARM64)' --cache '$(KIT_CACHE)' --platform linux/arm64
image-multiplatform: build build-arm64
	SERVER_BIN_ARM64='$(BIN_ARM64)' IMAGE_OUT=target/image-multiplatform $(BUILD_IMAGE)
test-arm64: tools image-multiplatform
	CHARTREG_STATIC_BIN='$(BIN)' CHARTREG_ARM64_BIN='$(BIN_ARM64)' \
		$(CARGO) test --release -p chartreg-bin --test arm64 -- --ignored
# The build tool for aarch64 build machines, cross-compiled here as the arm64 server is
# (Debian's rustc, the aarch64 cross gcc; linked dynamically against glibc, as the x86_64 one),
# and its release archive, target/dist/chartreg-build-VERSION-aarch64-linux.tar.xz (the same
# kit, chart and licences as the x86_64 one; `make dist` writes both). Not part of `make test`:
# a cold compile of the tool for aarch64 (969 s of CPU here), which CI's 30 minutes do not hold.
# `make test-dist-aarch64` runs its tool under qemu-user.
BUILD_TOOL_AARCH64 = $(TARGET_DIR)/aarch64-unknown-linux-gnu/release/chartreg-build
.PHONY: build-tool-aarch64 dist-aarch64
build-tool-aarch64: tools-cross
	RUSTC=/usr/bin/rustc CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc \
		CC_aarch64_unknown_linux_gnu=aarch64-linux-gnu-gcc \
		$(CARGO) build --quiet --release -p chartreg-build --target aarch64-unknown-linux-gnu
dist-aarch64: build-tool-aarch64
	CARGO=$(CARGO) scripts/make-dist.sh '$(BUILD_TOOL_AARCH64)' target/dist
# The aarch64 archive's tool under qemu-user: init, pack, fetch from CNCF distribution
# (crates/chartreg-build/tests/dist_aarch64.rs).
.PHONY: test-dist-aarch64
test-dist-aarch64: tools dist-aarch64
	$(CARGO) test --release -p chartreg-build --test dist_aarch64 -- --ignored

# The largest content the arm64 server builds with and serves under qemu-user: image sets of
# ARM64_GIB GiB each (bench/arm64-large.sh: compile time and peak memory, binary size, the 1 GiB
# layer served byte-exact; 1 GiB builds and serves, 2 GiB does not link: see docs/building.md).
# Not part of `make test`.
ARM64_GIB ?= 1 2
.PHONY: arm64-large
arm64-large: build-arm64
	bench/arm64-large.sh '$(KIT)' '$(KIT_CACHE)' $(ARM64_GIB)

# Serve the embedded charts on $(LISTEN).
run: build
	'$(BIN)' serve --listen $(LISTEN)

# Helm 3.17 and 4.3 (into .tools/), skopeo, docker-registry, gnupg, containerd and the other
# Debian packages the tests drive (scripts/install-tools.sh), when missing.
tools:
	scripts/install-tools.sh

# Formatting and lints, warnings as errors.
lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --release --workspace --all-targets -- -D warnings

# The inner loop: formatting, lints and the tests that run in process or on the two binaries
# alone (every crate's unit tests; the API, operations, content and facts tests; pack's tests;
# the feature-set check; the fuzz corpus replay). No network, no apt, no image, no Helm: a few
# minutes when warm. `make test` is the full suite CI runs.
CHECK_TESTS = --lib --test api --test ops --test content --test facts --test pack \
	--test one_feature_set --test replay
check: assets
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --release --workspace --all-targets -- -D warnings
	$(CARGO) test --release --workspace $(CHECK_TESTS)

# Every test. Never rewrites committed files (see assets-check). The static server is compiled
# by `make build` (the image tests use it; tests/make.rs shares its kit and cache) and cold from
# the release archive in the builder image (dist.rs and builder_image.rs use the archive);
# cargo test reuses the build tool `make build-tool` compiled (one feature set: see
# crates/feature-set; scripts/one-compile.sh checks it) and builds what the in-process tests
# link.
test: tools lint assets-check image builder-image
	CHARTREG_STATIC_BIN='$(BIN)' $(CARGO) test --release --workspace
	CARGO=$(CARGO) scripts/one-compile.sh

# docs/commands.md, the command reference, from the binaries' own --help (tests/readme.rs
# fails when it is stale).
docs:
	CHARTREG_WRITE_DOCS=1 $(CARGO) test --release -p chartreg-bin --test readme -- the_command_reference

clean:
	$(CARGO) clean

# chartreg against nginx (static files) and CNCF distribution on the same content, in one run,
# beside a bare actix-web control (examples/bare_actix.rs):
# installs the tools it needs, builds chartreg with generated content (target/bench), writes
# BENCHMARKS.md and bench/results/. About 14 minutes; see bench/run.sh for its settings.
.PHONY: bench
bench:
	bench/run.sh

# The runner's bounds on a real cgroup v2 kernel (this project's machines are cgroup v1): Debian
# 12's kernel booted under QEMU's TCG on a root made by mmdebstrap (cached in
# $(TARGET_DIR)/cgroup-v2-vm), the release build tool, its unit tests and Helm 3 and 4 inside;
# runs a runaway chart and the unit tests as root, as a user with a delegated subtree and as one
# without, and prints which bound held each run, its peak and its time to stop
# (scripts/cgroup-v2-vm.sh). About 10 minutes, 5 more the first time; not part of `make test`.
# Needs root.
.PHONY: cgroup-v2-vm
cgroup-v2-vm: build-tool tools
	scripts/install-vm-tools.sh
	CARGO=$(CARGO) scripts/cgroup-v2-vm.sh '$(BUILD_TOOL)' '$(TARGET_DIR)/cgroup-v2-vm'

# Every fuzz target for FUZZ_SECONDS (default 60) each, on the stable toolchain (cargo-fuzz -s
# none; installed if missing); minimises the committed corpus in fuzz/corpus/, which `cargo
# test` replays (scripts/fuzz.sh).
.PHONY: fuzz
fuzz:
	scripts/fuzz.sh

# The hardening tests at full size (CHARTREG_STRESS=10: 200,000 requests, 1,000 idle
# connections, 20,000 connections and 2,000 TLS handshakes of churn, 4,100 slow clients, 1,000
# stalled TLS handshakes, 64 clients downloading a 256 MiB blob); writes their figures into
# RELIABILITY.md (scripts/stress.sh). `make test` runs them at a tenth. Packs first: the tests
# serve assets/, image layouts included, which are not committed.
.PHONY: stress
stress: assets
	CARGO=$(CARGO) scripts/stress.sh

# A fresh clone builds with plain cargo from an empty cargo cache, and the release archive's
# licence step runs there (scripts/fresh-clone.sh; about 8 minutes here: not part of `make test`).
.PHONY: fresh-clone
fresh-clone:
	CARGO=$(CARGO) scripts/fresh-clone.sh

# Every crash point of fetch, pack and image, both ways between two list states (tests/crash:
# each run killed just before each of its file-changing system calls with strace, checked at
# rest, then re-run), beside its failures without a kill; `make test` runs a sample of the
# points. Installs the tools first (strace among them); prints the figures of each sweep;
# CHARTREG_CRASH_TOOL=PATH sweeps another build.
.PHONY: crash-points
crash-points: tools
	CHARTREG_CRASH_POINTS=all $(CARGO) test --release -p chartreg-build --test crash -- --nocapture
