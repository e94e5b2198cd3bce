#!/usr/bin/env python3
"""The registry read API as static files for nginx (python3 stdlib only).

    bench/nginx_site.py LAYOUTS OUT
        Writes OUT/html/v2/... from the OCI image layouts under LAYOUTS (a folder holding
        `oci-layout`, `index.json` and `blobs/sha256/*` is one repository named by its path):

          /v2/                                  (file v2/index.json) {}
          /v2/<name>/manifests/<tag>            the manifest bytes
          /v2/<name>/manifests/sha256:<hex>     the same bytes, by digest
          /v2/<name>/blobs/sha256:<hex>         every blob of the layout
          /v2/<name>/tags/list                  {"name":...,"tags":[...]} (byte order)
          /v2/_catalog                          {"repositories":[...]} (byte order, all of them)
          /_404.json                            the JSON error body for unknown paths

        and OUT/dcd-map.conf, `map $uri $dcd {...}`: the Docker-Content-Digest of each
        manifest-by-tag path (digest paths take it from the URI). Files are hard links to the
        layouts' blobs where the file system allows it (else copies). OUT is replaced.

    bench/nginx_site.py --conf RUNDIR SITE PORT [TLSPORT CERT KEY] [--workers N]
        Writes RUNDIR/nginx.conf serving SITE (an OUT above) on 127.0.0.1:PORT, and with TLS on
        127.0.0.1:TLSPORT, with `worker_processes auto` or N (nginx 1.22's `auto` counts the
        machine's CPUs, not those the process may run on: give N when pinning it). Run it with `nginx -p RUNDIR -c RUNDIR/nginx.conf -e stderr`: it stays
        in the foreground (daemon off), runs as the current user, keeps its pid, temp files and
        error log in RUNDIR, and writes no access log (`access_log off`; see bench/run.sh for
        how the other servers are set up to compare fairly).

Limits: a repository whose path has a component named `manifests`, `blobs` or `tags` would
collide with another's files; the benchmark content has none.
"""

import grp
import hashlib
import json
import os
import pwd
import shutil
import sys

MANIFEST_TYPE = "application/vnd.oci.image.manifest.v1+json"
REF_NAME = "org.opencontainers.image.ref.name"


def compact(obj):
    return json.dumps(obj, separators=(",", ":")).encode()


def find_layouts(root):
    """(repository name, layout folder) for every layout under root, sorted by name."""
    found = []
    for folder, dirs, files in os.walk(root):
        if "oci-layout" in files:
            found.append((os.path.relpath(folder, root).replace(os.sep, "/"), folder))
            dirs[:] = []  # blobs/ only below a layout
        dirs.sort()
    return sorted(found)


def place(src, dst):
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def site(layouts, out):
    if os.path.exists(out):
        shutil.rmtree(out)
    html = os.path.join(out, "html")
    v2 = os.path.join(html, "v2")
    write(os.path.join(v2, "index.json"), b"{}")
    write(
        os.path.join(html, "_404.json"),
        compact({"errors": [{"code": "NOT_FOUND", "message": "not found"}]}),
    )
    names = []
    dcd = []  # (uri, digest)
    for name, folder in find_layouts(layouts):
        names.append(name)
        repo = os.path.join(v2, *name.split("/"))
        blobs = os.path.join(folder, "blobs", "sha256")
        for hexdigest in sorted(os.listdir(blobs)):
            place(os.path.join(blobs, hexdigest), os.path.join(repo, "blobs", "sha256:" + hexdigest))
        with open(os.path.join(folder, "index.json"), "rb") as f:
            index = json.load(f)
        tags = []
        for desc in index.get("manifests", []):
            digest = desc["digest"]
            algorithm, hexdigest = digest.split(":", 1)
            assert algorithm == "sha256", digest
            src = os.path.join(blobs, hexdigest)
            place(src, os.path.join(repo, "manifests", digest))
            tag = desc.get("annotations", {}).get(REF_NAME)
            if tag:
                tags.append(tag)
                place(src, os.path.join(repo, "manifests", tag))
                dcd.append((f"/v2/{name}/manifests/{tag}", digest))
        tags.sort(key=lambda t: t.encode())
        write(os.path.join(repo, "tags", "list"), compact({"name": name, "tags": tags}))
    names.sort(key=lambda n: n.encode())
    write(os.path.join(v2, "_catalog"), compact({"repositories": names}))
    lines = ["map $uri $dcd {", '    default "";']
    lines += [f"    {uri} {digest};" for uri, digest in dcd]
    lines.append("}")
    with open(os.path.join(out, "dcd-map.conf"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return len(names), len(dcd)


API = "add_header Docker-Distribution-API-Version registry/2.0 always;"


def conf(rundir, site_dir, port, tls=None, workers="auto"):
    rundir = os.path.abspath(rundir)
    site_dir = os.path.abspath(site_dir)
    os.makedirs(rundir, exist_ok=True)
    user = ""
    if os.geteuid() == 0:
        # A root master would hand the workers to `nobody`: keep them as the caller.
        user = "user {} {};".format(
            pwd.getpwuid(os.getuid()).pw_name, grp.getgrgid(os.getgid()).gr_name
        )
    listen_tls = ""
    if tls:
        tls_port, cert, key = tls
        listen_tls = f"""
        listen 127.0.0.1:{tls_port} ssl http2;
        ssl_certificate {os.path.abspath(cert)};
        ssl_certificate_key {os.path.abspath(key)};
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_session_cache shared:tls:1m;"""
    text = f"""# Generated by bench/nginx_site.py: the registry read API as static files.
{user}
daemon off;
worker_processes {workers};
pid {rundir}/nginx.pid;
error_log stderr warn;

events {{
    worker_connections 4096;
}}

http {{
    # No access log: chartreg and distribution run with theirs off too (bench/run.sh).
    access_log off;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_timeout 65s;
    keepalive_requests 1000000;
    open_file_cache max=10000 inactive=60s;
    open_file_cache_valid 60s;
    server_tokens off;
    client_body_temp_path {rundir}/client_body;
    proxy_temp_path {rundir}/proxy;
    fastcgi_temp_path {rundir}/fastcgi;
    uwsgi_temp_path {rundir}/uwsgi;
    scgi_temp_path {rundir}/scgi;

    types {{ }}
    default_type application/octet-stream;

    map_hash_max_size 16384;
    map_hash_bucket_size 128;
    include {site_dir}/dcd-map.conf;

    server {{
        listen 127.0.0.1:{port};{listen_tls}
        root {site_dir}/html;
        error_page 404 /_404.json;

        location = /_404.json {{
            internal;
            default_type application/json;
            {API}
        }}
        location = /v2/ {{
            default_type application/json;
            {API}
            try_files /v2/index.json =404;
        }}
        location = /v2 {{
            default_type application/json;
            {API}
            try_files /v2/index.json =404;
        }}
        location = /v2/_catalog {{
            default_type application/json;
            {API}
        }}
        location ~ "^/v2/.+/tags/list$" {{
            default_type application/json;
            {API}
        }}
        location ~ "^/v2/.+/manifests/(?<mdigest>sha256:[0-9a-f]{{64}})$" {{
            default_type {MANIFEST_TYPE};
            {API}
            add_header Docker-Content-Digest $mdigest;
        }}
        location ~ "^/v2/.+/manifests/[^/]+$" {{
            default_type {MANIFEST_TYPE};
            {API}
            add_header Docker-Content-Digest $dcd;
        }}
        location ~ "^/v2/.+/blobs/(?<bdigest>sha256:[0-9a-f]{{64}})$" {{
            default_type application/octet-stream;
            {API}
            add_header Docker-Content-Digest $bdigest;
        }}
        # chartreg's page, copied in by bench/run.sh.
        location = / {{
            default_type "text/html; charset=utf-8";
            try_files /index.html =404;
        }}
        location / {{
            {API}
            return 404;
        }}
    }}
}}
"""
    with open(os.path.join(rundir, "nginx.conf"), "w") as f:
        f.write(text)


def main():
    args = sys.argv[1:]
    workers = "auto"
    if len(args) >= 2 and args[-2] == "--workers":
        workers = str(int(args[-1]))
        args = args[:-2]
    if args[:1] == ["--conf"] and len(args) in (4, 7):
        rundir, site_dir, port = args[1:4]
        conf(rundir, site_dir, int(port), tuple(args[4:7]) if len(args) == 7 else None, workers)
    elif len(args) == 2 and not args[0].startswith("-"):
        repos, tags = site(args[0], args[1])
        print(f"nginx site: {repos} repositories, {tags} tags in {args[1]}")
    else:
        sys.exit(
            f"usage: {sys.argv[0]} LAYOUTS OUT\n"
            f"       {sys.argv[0]} --conf RUNDIR SITE PORT [TLSPORT CERT KEY] [--workers N]"
        )


if __name__ == "__main__":
    main()
