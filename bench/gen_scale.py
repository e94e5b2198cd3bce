#!/usr/bin/env python3
"""Generate one content set of the scaling study (python3 stdlib only).

    bench/gen_scale.py OUT --versions N          # scale/app: N chart versions 1.0.0 .. 1.0.N-1
    bench/gen_scale.py OUT --blob-mib M          # scale/big: one tag, one layer of M MiB

OUT is replaced as a whole. Versions are Helm-like manifests (config + one 4 KiB chart layer, as
in gen_content.py); the big layer is written in 64 MiB pieces, so memory stays small whatever M.
Bytes are deterministic (SHAKE-256 of a fixed seed). Prints the repository, the tag, the
manifest digest and the URL path that scale.sh fetches.
"""

import hashlib
import json
import os
import shutil
import sys

from gen_content import CHART_TYPE, CONFIG_TYPE, MANIFEST_TYPE, REF_NAME, Layout, compact, noise

PIECE = 64 * 1024 * 1024


def versions(out, count):
    app = Layout(out, "scale/app")
    first = None
    for i in range(count):
        manifest, _, _ = app.chart("app", f"1.0.{i}", noise(f"scale/app:{i}", 4096))
        first = first or manifest
    app.close()
    return "scale/app", "1.0.0", first["digest"]


def big_blob(out, mib):
    """One tag whose only layer is `mib` MiB, streamed to disk."""
    big = Layout(out, "scale/big")
    tmp = os.path.join(big.blobs, "partial")
    digest = hashlib.sha256()
    size = mib * 1024 * 1024
    with open(tmp, "wb") as f:
        for start in range(0, size, PIECE):
            piece = noise(f"scale/big:{start}", min(PIECE, size - start))
            digest.update(piece)
            f.write(piece)
    os.rename(tmp, os.path.join(big.blobs, digest.hexdigest()))
    layer = {"mediaType": CHART_TYPE, "digest": "sha256:" + digest.hexdigest(), "size": size}
    config = big.blob(compact({"name": "big", "version": "1.0.0", "apiVersion": "v2"}), CONFIG_TYPE)
    manifest_bytes = compact(
        {"schemaVersion": 2, "mediaType": MANIFEST_TYPE, "config": config, "layers": [layer]}
    )
    manifest = big.blob(manifest_bytes, MANIFEST_TYPE)
    big.manifests.append(dict(manifest, annotations={REF_NAME: "1.0.0"}))
    big.close()
    return "scale/big", "1.0.0", manifest["digest"]


def main():
    args = sys.argv[1:]
    if len(args) != 3 or args[1] not in ("--versions", "--blob-mib"):
        sys.exit(__doc__)
    out, kind, n = args[0], args[1], int(args[2])
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    name, tag, digest = versions(out, n) if kind == "--versions" else big_blob(out, n)
    path = f"/v2/{name}/manifests/{tag}"
    print(json.dumps({"name": name, "tag": tag, "manifest": digest, "path": path}))


if __name__ == "__main__":
    main()
