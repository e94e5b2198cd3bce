#!/usr/bin/env python3
"""Write OCI image layouts as CNCF distribution's filesystem storage (python3 stdlib only).

    bench/dist_storage.py LAYOUTS DATA

DATA is the `storage.filesystem.rootdirectory` of a distribution (docker-registry) config,
as scripts/run-distribution.sh sets it (ROOTDIR/data); DATA/docker is replaced. For each
layout under LAYOUTS (a folder holding `oci-layout`, `index.json` and `blobs/sha256/*` is one
repository named by its path) it writes what `docker push` / `skopeo copy` would have left:

    docker/registry/v2/blobs/sha256/<2 hex>/<hex>/data                      every blob
    docker/registry/v2/repositories/<name>/_layers/sha256/<hex>/link        config and layers
    .../<name>/_manifests/revisions/sha256/<hex>/link                       each manifest
    .../<name>/_manifests/tags/<tag>/current/link                           the tag's manifest
    .../<name>/_manifests/tags/<tag>/index/sha256/<hex>/link

Link files hold `sha256:<hex>`. Blob data are hard links to the layouts' files where the file
system allows it (else copies). This takes seconds where pushing 2,000 manifests through the
API would take minutes.
"""

import json
import os
import shutil
import sys

REF_NAME = "org.opencontainers.image.ref.name"


def find_layouts(root):
    found = []
    for folder, dirs, files in os.walk(root):
        if "oci-layout" in files:
            found.append((os.path.relpath(folder, root).replace(os.sep, "/"), folder))
            dirs[:] = []
        dirs.sort()
    return sorted(found)


def link_file(path, digest):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(digest)


def store_blob(v2, src, hexdigest):
    dst = os.path.join(v2, "blobs", "sha256", hexdigest[:2], hexdigest, "data")
    if os.path.exists(dst):
        return
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)


def write_storage(layouts, data):
    top = os.path.join(data, "docker")
    if os.path.exists(top):
        shutil.rmtree(top)
    v2 = os.path.join(top, "registry", "v2")
    repos = tags = 0
    for name, folder in find_layouts(layouts):
        repos += 1
        blobs = os.path.join(folder, "blobs", "sha256")
        repo = os.path.join(v2, "repositories", *name.split("/"))
        with open(os.path.join(folder, "index.json"), "rb") as f:
            index = json.load(f)
        for desc in index.get("manifests", []):
            digest = desc["digest"]
            hexdigest = digest.split(":", 1)[1]
            store_blob(v2, os.path.join(blobs, hexdigest), hexdigest)
            with open(os.path.join(blobs, hexdigest), "rb") as f:
                manifest = json.load(f)
            for ref in [manifest["config"]] + manifest.get("layers", []):
                ref_hex = ref["digest"].split(":", 1)[1]
                store_blob(v2, os.path.join(blobs, ref_hex), ref_hex)
                link_file(os.path.join(repo, "_layers", "sha256", ref_hex, "link"), ref["digest"])
            manifests = os.path.join(repo, "_manifests")
            link_file(os.path.join(manifests, "revisions", "sha256", hexdigest, "link"), digest)
            tag = desc.get("annotations", {}).get(REF_NAME)
            if tag:
                tags += 1
                tag_dir = os.path.join(manifests, "tags", tag)
                link_file(os.path.join(tag_dir, "current", "link"), digest)
                link_file(os.path.join(tag_dir, "index", "sha256", hexdigest, "link"), digest)
    return repos, tags


def main():
    if len(sys.argv) != 3:
        sys.exit(f"usage: {sys.argv[0]} LAYOUTS DATA")
    repos, tags = write_storage(sys.argv[1], sys.argv[2])
    print(f"distribution storage: {repos} repositories, {tags} tags in {sys.argv[2]}")


if __name__ == "__main__":
    main()
