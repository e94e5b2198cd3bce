#!/usr/bin/env python3
"""Generate one content set of the scaling study (python3 stdlib only).

    bench/gen_scale.py OUT --versions N          # scale/app: N chart versions 1.0.0 .. 1.0.N-1
    bench/gen_scale.py OUT --blob-mib M          # scale/big: one tag, one layer of M MiB
    bench/gen_scale.py OUT --images-gib G        # an add-on set: images adding up to G GiB,
                                                 # and charts
    bench/gen_scale.py OUT --bump-chart          # one more version of one chart of that set

OUT is replaced as a whole (but by --bump-chart). Versions are Helm-like manifests (config + one
4 KiB chart layer, as in gen_content.py); big layers are written in 64 MiB pieces, so memory
stays small whatever their size. Bytes are deterministic (SHAKE-256 of a fixed seed). Prints
the repository, the tag, the manifest digest and the URL path that scale.sh fetches.

An image set is what an add-on set with its images looks like: ten charts
(scale/charts/addon-0..9, three versions each) and images scale/images/app-0, app-1, ... each
an image index over one linux/amd64 manifest whose layers are a base layer every image shares
(48 MiB), layers of their own from 192 MiB down to 40 KiB, and in app-0 one layer of 1 GiB
(whose URL path is printed as `layer_path`), until the distinct bytes reach G GiB.
"""

import hashlib
import json
import os
import shutil
import sys

from gen_content import (
    CHART_TYPE,
    CONFIG_TYPE,
    INDEX_TYPE,
    MANIFEST_TYPE,
    REF_NAME,
    Layout,
    compact,
    noise,
)

PIECE = 64 * 1024 * 1024
MIB = 1024 * 1024
LAYER_TYPE = "application/vnd.oci.image.layer.v1.tar+gzip"
IMAGE_CONFIG_TYPE = "application/vnd.oci.image.config.v1+json"
BASE_LAYER = 48 * MIB
BIG_LAYER = 1024 * MIB
OWN_LAYERS = [192 * MIB, 64 * MIB, 16 * MIB, 2 * MIB, 500 * 1024, 40 * 1024]
CHARTS = 10


def versions(out, count):
    app = Layout(out, "scale/app")
    first = None
    for i in range(count):
        manifest, _, _ = app.chart("app", f"1.0.{i}", noise(f"scale/app:{i}", 4096))
        first = first or manifest
    app.close()
    return "scale/app", "1.0.0", first["digest"]


def streamed_blob(layout, label, size, media_type):
    """A blob of `size` pseudo-random bytes, streamed to disk in pieces: each piece is one
    64 MiB block of noise made once, led by its own label (so no two pieces are the same)."""
    block = noise("scale/block", PIECE)
    tmp = os.path.join(layout.blobs, "partial")
    digest = hashlib.sha256()
    with open(tmp, "wb") as f:
        for start in range(0, size, PIECE):
            head = hashlib.sha256(f"{label}:{start}".encode()).digest()
            piece = (head + block[len(head) :])[: min(PIECE, size - start)]
            digest.update(piece)
            f.write(piece)
    os.rename(tmp, os.path.join(layout.blobs, digest.hexdigest()))
    return {"mediaType": media_type, "digest": "sha256:" + digest.hexdigest(), "size": size}


def image(out, name, layer_sizes, shared):
    """One image: an index over one linux/amd64 manifest with the shared base layer and layers
    of `layer_sizes`. Returns its index descriptor and the distinct bytes it added."""
    layout = Layout(out, name)
    base = streamed_blob(layout, "scale/base", BASE_LAYER, LAYER_TYPE)
    layers = [base]
    added = 0 if shared else BASE_LAYER
    for i, size in enumerate(layer_sizes):
        layers.append(streamed_blob(layout, f"{name}:{i}", size, LAYER_TYPE))
        added += size
    config = layout.blob(
        compact({"architecture": "amd64", "os": "linux", "rootfs": {"type": "layers",
                 "diff_ids": [l["digest"] for l in layers]}, "config": {}}),
        IMAGE_CONFIG_TYPE,
    )
    manifest = layout.blob(
        compact({"schemaVersion": 2, "mediaType": MANIFEST_TYPE, "config": config,
                 "layers": layers}),
        MANIFEST_TYPE,
    )
    manifest["platform"] = {"architecture": "amd64", "os": "linux"}
    index = layout.blob(
        compact({"schemaVersion": 2, "mediaType": INDEX_TYPE, "manifests": [manifest]}),
        INDEX_TYPE,
    )
    layout.manifests.append(dict(index, annotations={REF_NAME: "v1.0.0"}))
    layout.close()
    return layers, added


def image_set(out, gib):
    """Charts and images adding up to `gib` GiB of distinct bytes (see the module's doc)."""
    for i in range(CHARTS):
        charts = Layout(out, f"scale/charts/addon-{i}")
        for v in range(3):
            charts.chart(f"addon-{i}", f"1.{v}.0", noise(f"addon-{i}:{v}", 4096))
        charts.close()
    target = gib * 1024 * MIB
    layers, total = image(out, "scale/images/app-0", [BIG_LAYER, 300 * 1024, 12 * 1024], False)
    big = layers[1]
    n = 1
    while total < target:
        _, added = image(out, f"scale/images/app-{n}", OWN_LAYERS, True)
        total += added
        n += 1
    return {
        "name": "scale/charts/addon-0",
        "tag": "1.0.0",
        "layer_path": f"/v2/scale/images/app-0/blobs/{big['digest']}",
        "layer_size": big["size"],
        "images": n,
        "bytes": total,
    }


def bump_chart(out):
    """One more version of scale/charts/addon-0, written into its layout in place."""
    name = "scale/charts/addon-0"
    charts = Layout.__new__(Layout)
    charts.name = name
    charts.dir = os.path.join(out, name)
    charts.blobs = os.path.join(charts.dir, "blobs", "sha256")
    with open(os.path.join(charts.dir, "index.json")) as f:
        charts.manifests = json.load(f)["manifests"]
    version = f"1.{len(charts.manifests)}.0"
    manifest, _, _ = charts.chart("addon-0", version, noise(f"addon-0:{version}", 4096))
    charts.close()
    return name, version, manifest["digest"]


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
    if args[1:] == ["--bump-chart"]:
        name, tag, digest = bump_chart(args[0])
        path = f"/v2/{name}/manifests/{tag}"
        print(json.dumps({"name": name, "tag": tag, "manifest": digest, "path": path}))
        return
    if len(args) != 3 or args[1] not in ("--versions", "--blob-mib", "--images-gib"):
        sys.exit(__doc__)
    out, kind, n = args[0], args[1], int(args[2])
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    if kind == "--images-gib":
        found = image_set(out, n)
        found["path"] = f"/v2/{found['name']}/manifests/{found['tag']}"
        print(json.dumps(found))
        return
    name, tag, digest = versions(out, n) if kind == "--versions" else big_blob(out, n)
    path = f"/v2/{name}/manifests/{tag}"
    print(json.dumps({"name": name, "tag": tag, "manifest": digest, "path": path}))


if __name__ == "__main__":
    main()
