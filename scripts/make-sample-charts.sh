#!/usr/bin/env bash
# Package the sample charts in samples/ into charts/:
#
#   charts/hello-<version>.tgz       several versions of the hello chart
#   charts/motd-1.0.0.tgz            the motd chart, signed...
#   charts/motd-1.0.0.tgz.prov       ...with this provenance file
#   tests/fixtures/sample-signing-pubring.gpg
#                                    public keyring to verify it with
#
# Run by hand when the samples change; tests never run it. Each run makes new
# archives (Helm stamps the current time into them) and a new throwaway
# signing key: commit charts/ and the public keyring together.
#
# The signing key is generated in a temporary GNUPGHOME and deleted on exit;
# the private key never touches the repository.
#
# Needs Helm (scripts/install-tools.sh) and gpg. HELM=/path/to/helm to use
# another Helm than the bundled 3.x.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
HELM="${HELM:-$ROOT/.tools/helm3/helm}"
OUT="$ROOT/charts"
PUBRING="$ROOT/tests/fixtures/sample-signing-pubring.gpg"

# hello versions and the app (image) version each one ships.
HELLO_VERSIONS=(
    "0.1.0         1.25.5"
    "0.2.0         1.26.3"
    "1.0.0         1.27.4"
    "1.0.1+build.7 1.27.4"
    "1.1.0-rc.1    1.28.0"
)

# Identity of the throwaway signing key; `helm package --key` matches on it.
SIGNER="chartreg sample charts (throwaway signing key) <samples@example.com>"

[[ -x "$HELM" ]] || { echo "$HELM not found; run scripts/install-tools.sh" >&2; exit 1; }
command -v gpg >/dev/null || { echo "gpg not found; run scripts/install-tools.sh" >&2; exit 1; }

TMP="$(mktemp -d)"
cleanup() {
    gpgconf --kill all >/dev/null 2>&1 || true   # stop this GNUPGHOME's agent
    rm -rf "$TMP"
}
trap cleanup EXIT

# Keep Helm away from the caller's repositories, registries and cache.
export HELM_CONFIG_HOME="$TMP/helm/config" HELM_CACHE_HOME="$TMP/helm/cache" \
       HELM_DATA_HOME="$TMP/helm/data"

# A private GnuPG home for the throwaway key. The exported secret keyring goes
# beside it, not in it: gpg would "migrate" a secring.gpg found in its home.
export GNUPGHOME="$TMP/gnupg"
mkdir -m 700 "$GNUPGHOME"
SECRING="$TMP/secring.gpg"

mkdir -p "$OUT" "$(dirname "$PUBRING")"
rm -f "$OUT"/hello-*.tgz "$OUT"/motd-*.tgz "$OUT"/motd-*.tgz.prov

# --- hello: unsigned, several versions --------------------------------------
for entry in "${HELLO_VERSIONS[@]}"; do
    read -r version app_version <<<"$entry"
    "$HELM" package "$ROOT/samples/hello" --destination "$OUT" \
        --version "$version" --app-version "$app_version" >/dev/null
done

# --- motd: signed -----------------------------------------------------------
# Helm signs with golang's openpgp, which needs an RSA key without passphrase
# in a legacy (binary, non-keybox) secret keyring.
gpg --batch --quiet --pinentry-mode loopback --passphrase '' \
    --quick-gen-key "$SIGNER" rsa3072 sign never
gpg --batch --quiet --export-secret-keys >"$SECRING"
gpg --batch --quiet --export >"$PUBRING"

"$HELM" package "$ROOT/samples/motd" --destination "$OUT" \
    --sign --key "$SIGNER" --keyring "$SECRING" >/dev/null

# --- check what we made ------------------------------------------------------
"$HELM" verify --keyring "$PUBRING" "$OUT/motd-1.0.0.tgz" >/dev/null
for tgz in "$OUT"/*.tgz; do
    "$HELM" lint --quiet "$tgz" >/dev/null
    "$HELM" template sample "$tgz" >/dev/null
done

(cd "$ROOT" && ls -1 charts/ && echo "${PUBRING#"$ROOT"/}")
