#!/usr/bin/env python3
"""Generate the benchmark content set as OCI image layouts (python3 stdlib only).

    bench/gen_content.py OUT [--summary SUMMARY.json]

writes, under OUT (which is replaced as a whole):

    OUT/bench/app/          one repository with 1,000 tags 1.0.0 .. 1.0.999, each a Helm-like
                            manifest: a small config and one ~4 KiB chart layer
    OUT/bench/r0000 .. OUT/bench/r0999
                            1,000 repositories with one tag (1.0.0) each
    OUT/bench/big/          one repository, tag 1.0.0, whose layer is a 32 MiB blob

Each folder holds `oci-layout`, `index.json` and `blobs/sha256/<hex>`: a repository named by
its path (`bench/app`, ...) when OUT is embedded with `CHARTREG_ASSETS=OUT cargo build`.

Bytes are pseudo-random but deterministic (SHAKE-256 of a fixed seed), so the same script
always writes byte-identical output. A summary of what was written (names,
tags, digests and sizes of the objects the benchmark fetches) goes to SUMMARY.json when
`--summary SUMMARY.json` is given (not inside OUT: chartreg refuses files outside a layout).
"""

import hashlib
import json
import os
import shutil
import sys

CONFIG_TYPE = "application/vnd.cncf.helm.config.v1+json"
CHART_TYPE = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
MANIFEST_TYPE = "application/vnd.oci.image.manifest.v1+json"
INDEX_TYPE = "application/vnd.oci.image.index.v1+json"
REF_NAME = "org.opencontainers.image.ref.name"

APP = "bench/app"
APP_TAGS = 1000
REPOS = 1000
BIG = "bench/big"
CHART_SIZE = 4096
BIG_SIZE = 32 * 1024 * 1024
SEED = b"chartreg-bench-v1"


def compact(obj):
    return json.dumps(obj, separators=(",", ":")).encode()


def noise(label, size):
    """`size` deterministic pseudo-random bytes for `label`."""
    return hashlib.shake_256(SEED + b"\0" + label.encode()).digest(size)


class Layout:
    """One OCI image layout being written: blobs go straight to disk, the index at the end."""

    def __init__(self, root, name):
        self.name = name
        self.dir = os.path.join(root, name)
        self.blobs = os.path.join(self.dir, "blobs", "sha256")
        os.makedirs(self.blobs)
        self.manifests = []

    def blob(self, data, media_type):
        hexdigest = hashlib.sha256(data).hexdigest()
        with open(os.path.join(self.blobs, hexdigest), "wb") as f:
            f.write(data)
        return {"mediaType": media_type, "digest": "sha256:" + hexdigest, "size": len(data)}

    def chart(self, chart_name, version, layer_bytes):
        """A Helm-like chart manifest tagged `version`; returns (manifest, config, layer)."""
        config = self.blob(
            compact(
                {
                    "name": chart_name,
                    "version": version,
                    "description": "chartreg benchmark chart",
                    "apiVersion": "v2",
                    "appVersion": version,
                    "type": "application",
                }
            ),
            CONFIG_TYPE,
        )
        layer = self.blob(layer_bytes, CHART_TYPE)
        manifest_bytes = compact(
            {
                "schemaVersion": 2,
                "mediaType": MANIFEST_TYPE,
                "config": config,
                "layers": [layer],
                "annotations": {
                    "org.opencontainers.image.title": chart_name,
                    "org.opencontainers.image.version": version,
                    "org.opencontainers.image.description": "chartreg benchmark chart",
                },
            }
        )
        manifest = self.blob(manifest_bytes, MANIFEST_TYPE)
        self.manifests.append(dict(manifest, annotations={REF_NAME: version}))
        return manifest, config, layer

    def close(self):
        with open(os.path.join(self.dir, "oci-layout"), "wb") as f:
            f.write(compact({"imageLayoutVersion": "1.0.0"}))
        index = {"schemaVersion": 2, "mediaType": INDEX_TYPE, "manifests": self.manifests}
        with open(os.path.join(self.dir, "index.json"), "wb") as f:
            f.write(compact(index))


def generate(out, summary_path=None):
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    summary = {"repositories": [], "objects": {}}

    app = Layout(out, APP)
    tags = [f"1.0.{i}" for i in range(APP_TAGS)]
    for tag in tags:
        manifest, config, layer = app.chart("app", tag, noise(f"{APP}:{tag}", CHART_SIZE))
        if tag == "1.0.0":
            summary["objects"]["app_manifest"] = dict(manifest, name=APP, tag=tag)
            summary["objects"]["app_layer"] = dict(layer, name=APP)
            summary["objects"]["app_config"] = dict(config, name=APP)
    app.close()
    summary["repositories"].append(APP)
    summary["app_tags"] = sorted(tags)

    for i in range(REPOS):
        name = f"bench/r{i:04d}"
        repo = Layout(out, name)
        repo.chart(f"r{i:04d}", "1.0.0", noise(f"{name}:1.0.0", CHART_SIZE))
        repo.close()
        summary["repositories"].append(name)

    big = Layout(out, BIG)
    manifest, _, layer = big.chart("big", "1.0.0", noise(f"{BIG}:1.0.0", BIG_SIZE))
    big.close()
    summary["repositories"].append(BIG)
    summary["objects"]["big_manifest"] = dict(manifest, name=BIG, tag="1.0.0")
    summary["objects"]["big_layer"] = dict(layer, name=BIG)

    summary["repositories"].sort()
    if summary_path:
        with open(summary_path, "w") as f:
            json.dump(summary, f, indent=1, sort_keys=True)
            f.write("\n")


def main():
    args = sys.argv[1:]
    summary = None
    if len(args) == 3 and args[1] == "--summary":
        summary = args[2]
        args = args[:1]
    if len(args) != 1:
        sys.exit(f"usage: {sys.argv[0]} OUT [--summary SUMMARY.json]")
    generate(args[0], summary)


if __name__ == "__main__":
    main()
