#!/usr/bin/env python3
"""Writes images/sample: a small multi-platform image as an OCI image layout, with what an
air-gapped cluster pulls along with an image: an OCI 1.1 signature and SBOM (by `subject`) and a
cosign tag-schema attestation (`sha256-<hex>.att`).

    scripts/make-sample-image.py [OUT]     (default: images/sample)

Deterministic (fixed file times and owners, JSON with sorted keys): run it again and the layout
is byte for byte the same. Commit its output; `make assets` packs it (see content.yaml).
"""
import hashlib
import io
import json
import os
import shutil
import sys
import tarfile

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "images", "sample")
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
EMPTY = "application/vnd.oci.empty.v1+json"

blobs = {}


def put(data: bytes, media_type: str, **extra) -> dict:
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    blobs[digest] = data
    return {"mediaType": media_type, "digest": digest, "size": len(data), **extra}


def document(value) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def layer(text: str) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
        data = text.encode()
        info = tarfile.TarInfo("hello.txt")
        info.size, info.mtime, info.mode, info.uid, info.gid = len(data), 0, 0o644, 0, 0
        tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


platforms = [("linux", "amd64", None), ("linux", "arm64", "v8")]
entries = []
for os_name, arch, variant in platforms:
    content = layer(f"hello from {os_name}/{arch}\n")
    diff_id = "sha256:" + hashlib.sha256(content).hexdigest()
    config = {"architecture": arch, "os": os_name, "rootfs": {"type": "layers", "diff_ids": [diff_id]}, "config": {}}
    if variant:
        config["variant"] = variant
    manifest = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": put(document(config), "application/vnd.oci.image.config.v1+json"),
        "layers": [put(content, "application/vnd.oci.image.layer.v1.tar")],
    }
    platform = {"architecture": arch, "os": os_name}
    if variant:
        platform["variant"] = variant
    entries.append(put(document(manifest), OCI_MANIFEST, platform=platform))

index = put(document({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": entries}), OCI_INDEX)
subject = {"mediaType": OCI_INDEX, "digest": index["digest"], "size": index["size"]}
empty = put(b"{}", EMPTY)


def referrer(artifact_type: str, payload: bytes, layer_type: str, annotations=None) -> dict:
    manifest = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "artifactType": artifact_type,
        "config": empty,
        "layers": [put(payload, layer_type)],
        "subject": subject,
    }
    if annotations:
        manifest["annotations"] = annotations
    return put(document(manifest), OCI_MANIFEST, artifactType=artifact_type)


signature = referrer(
    "application/vnd.dev.cosign.artifact.sig.v1+json",
    document({"critical": {"identity": {"docker-reference": "images/sample"}, "image": {"docker-manifest-digest": index["digest"]}, "type": "cosign container image signature"}, "optional": None}),
    "application/vnd.dev.cosign.simplesigning.v1+json",
    {"dev.cosignproject.cosign/signature": "c2FtcGxlIHNpZ25hdHVyZQ=="},
)
sbom = referrer(
    "application/spdx+json",
    document({"spdxVersion": "SPDX-2.3", "name": "images/sample", "SPDXID": "SPDXRef-DOCUMENT", "dataLicense": "CC0-1.0", "packages": []}),
    "application/spdx+json",
)
# The cosign tag schema: an attestation found by the tag `sha256-<hex of the index>.att`.
attestation_manifest = {
    "schemaVersion": 2,
    "mediaType": OCI_MANIFEST,
    "config": put(document({"architecture": "", "os": "", "rootfs": {"type": "layers", "diff_ids": []}, "config": {}}), "application/vnd.oci.image.config.v1+json"),
    "layers": [put(document({"payloadType": "application/vnd.in-toto+json", "payload": "e30=", "signatures": []}), "application/vnd.dsse.envelope.v1+json")],
}
attestation = put(document(attestation_manifest), OCI_MANIFEST)

index["annotations"] = {"org.opencontainers.image.ref.name": "v1"}
attestation["annotations"] = {"org.opencontainers.image.ref.name": "sha256-" + index["digest"].split(":")[1] + ".att"}
layout_index = {"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": [index, signature, sbom, attestation]}

if os.path.isdir(OUT):
    shutil.rmtree(OUT)
os.makedirs(os.path.join(OUT, "blobs", "sha256"))
with open(os.path.join(OUT, "oci-layout"), "w") as f:
    f.write('{"imageLayoutVersion":"1.0.0"}')
with open(os.path.join(OUT, "index.json"), "wb") as f:
    f.write(document(layout_index))
for digest, data in sorted(blobs.items()):
    with open(os.path.join(OUT, "blobs", "sha256", digest.split(":")[1]), "wb") as f:
        f.write(data)
print(f"wrote {OUT}: image index {index['digest']} (v1), {len(platforms)} platforms, a signature, an SBOM and an attestation")
