"""A small stand-in for the Hugging Face hub's HTTP API, serving repositories from a folder, for tests.

The hub is out of reach where the tests run, so huggingface_hub and datasets are pointed at this server
(``endpoint=`` / ``HF_ENDPOINT``) and run their real download code against it: repository info, file metadata
(HEAD with ETag and size), downloads with Range (resume), tree listings and paths-info, and the hub's error
codes (RepoNotFound, RevisionNotFound, EntryNotFound).

It also takes uploads the way huggingface_hub makes them (its ``create_repo``, ``create_commit`` and
``upload_folder``): ``whoami-v2``, ``repos/create`` (409 with the repository's url when it exists), ``preupload``
(each file's upload mode and the oid the server holds for it), the LFS batch endpoint (an object the server holds
already gets no upload action, so an upload cut off halfway resends only what is missing; the transfer is always
``basic``: no Xet is offered), the PUT of each LFS object, and the commit (NDJSON: header, file, lfsFile,
deletedFile). With ``token`` set, a write without ``Authorization: Bearer <token>`` is refused (401).
``fail_puts_after`` / ``fail_commits`` make an upload fail partway (an HTTP 400, which the client does not retry).

As a process, for a simulated host: ``python tests/fakehub.py serve --root DIR --port N [--host H] [--token T]``.

Layout: ``<root>/<models|datasets>/<org>/<name>/...``; each repository has one revision, ``main``, whose commit id
is derived from its files' contents. ``rate`` (bytes a second) slows downloads so a test can interrupt one.
"""

import argparse
import base64
import hashlib
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _git_sha1(path):
    """A file's git blob id, as the hub gives a regular (non-LFS) file."""
    with open(path, "rb") as handle:
        data = handle.read()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class Repo:
    def __init__(self, kind, repo_id, path):
        self.kind, self.repo_id, self.path = kind, repo_id, path
        self.files = sorted(os.path.relpath(os.path.join(r, f), path).replace(os.sep, "/")
                            for r, _d, fs in os.walk(path) for f in fs)
        self.sha256 = {f: _sha256(os.path.join(path, f)) for f in self.files}
        self.commit = hashlib.sha1("".join(self.sha256[f] + f for f in self.files).encode()).hexdigest()

    def size(self, name):
        return os.path.getsize(os.path.join(self.path, name))

    def entry(self, name):
        return {"type": "file", "path": name, "size": self.size(name), "oid": self.sha256[name][:40],
                "lfs": {"oid": self.sha256[name], "size": self.size(name), "pointerSize": 134}}

    def info(self):
        return {"id": self.repo_id, "_id": self.commit[:24], "sha": self.commit, "private": False,
                "disabled": False, "gated": False, "downloads": 0, "likes": 0, "tags": [],
                "lastModified": "2026-01-01T00:00:00.000Z", "cardData": {},
                "siblings": [{"rfilename": f, "size": self.size(f), "blobId": self.sha256[f][:40],
                              "lfs": {"sha256": self.sha256[f], "size": self.size(f), "pointerSize": 134}}
                             for f in self.files]}


class FakeHub:
    """``with FakeHub(root) as hub:`` serves ``root`` at ``hub.url`` until the block ends."""

    def __init__(self, root, rate=None, cuts=0, cut_after=0, host="127.0.0.1", port=0, token=None,
                 fail_puts_after=None, fail_commits=0):
        self.root, self.rate = root, rate
        self.token = token
        self.puts = []  # oids of LFS objects uploaded, in order
        self.commits = []  # (repo_id, [paths written]) of each commit made
        self.created = []  # repo ids created
        self.private = {}
        self.validated = []  # README texts whose front matter was checked
        self.fail_puts_after, self.fail_commits = fail_puts_after, fail_commits
        self.requests = []
        self.ranges = []  # Range headers of downloads, in order
        # a link that drops: the next `cuts` downloads end after `cut_after` bytes of their body (the connection
        # closed, fewer bytes than Content-Length said)
        self.cuts, self.cut_after = cuts, cut_after
        self.served = 0  # bytes of file bodies sent, in all
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def do_HEAD(self):
                hub.handle(self, head=True)

            def do_GET(self):
                hub.handle(self, head=False)

            def do_POST(self):
                hub.handle(self, head=False)

            def do_PUT(self):
                hub.handle(self, head=False)

        self.server = ThreadingHTTPServer((host, port), Handler)
        self.server.daemon_threads = True
        self.url = "http://%s:%d" % ("127.0.0.1" if host in ("0.0.0.0", "") else host, self.server.server_address[1])
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    def repo(self, kind, repo_id):
        path = os.path.join(self.root, kind, repo_id)
        return Repo(kind, repo_id, path) if os.path.isdir(path) else None

    @staticmethod
    def _send(req, status, body=b"", headers=None, head=False):
        req.send_response(status)
        for key, value in (headers or {}).items():
            req.send_header(key, value)
        if "Content-Length" not in (headers or {}):
            req.send_header("Content-Length", str(len(body)))
        req.end_headers()
        if not head and body:
            req.wfile.write(body)

    def _json(self, req, obj, head=False, status=200, headers=None):
        self._send(req, status, json.dumps(obj).encode(), dict({"Content-Type": "application/json"},
                                                                **(headers or {})), head)

    def _error(self, req, code, head):
        self._json(req, {"error": code}, head, status=404, headers={"X-Error-Code": code})

    def handle(self, req, head):
        url = urlsplit(req.path)
        parts = [unquote(p) for p in url.path.strip("/").split("/")]
        self.requests.append((req.command, url.path))
        upload = self._upload(req, parts, url)
        if upload is not False:
            return upload
        if parts[0] == "api" and len(parts) >= 4 and parts[1] in ("models", "datasets"):
            return self._api(req, parts[1], parts[2:], parse_qs(url.query), head)
        kind = "models"
        if parts[0] == "datasets":
            kind, parts = "datasets", parts[1:]
        if len(parts) >= 5 and parts[2] == "resolve":
            return self._resolve(req, kind, "/".join(parts[:2]), parts[3], "/".join(parts[4:]), head)
        return self._error(req, "RepoNotFound", head)

    def _api(self, req, kind, rest, query, head):
        repo = self.repo(kind, "/".join(rest[:2]))
        if repo is None:
            return self._error(req, "RepoNotFound", head)
        action = rest[2] if len(rest) > 2 else "revision"
        revision = rest[3] if len(rest) > 3 else "main"
        if revision not in ("main", repo.commit):
            return self._error(req, "RevisionNotFound", head)
        if action == "revision":
            return self._json(req, repo.info(), head)
        if action == "tree":
            prefix = "/".join(rest[4:]).strip("/")
            recursive = query.get("recursive", ["false"])[0].lower() == "true"
            entries, dirs = [], set()
            for name in repo.files:
                if prefix and not name.startswith(prefix + "/"):
                    continue
                tail = name[len(prefix) + 1:] if prefix else name
                if "/" in tail and not recursive:
                    dirs.add((prefix + "/" if prefix else "") + tail.split("/", 1)[0])
                    continue
                if recursive:
                    segs = tail.split("/")[:-1]
                    for i in range(1, len(segs) + 1):
                        dirs.add((prefix + "/" if prefix else "") + "/".join(segs[:i]))
                entries.append(repo.entry(name))
            entries += [{"type": "directory", "path": d, "size": 0, "oid": "0" * 40} for d in sorted(dirs)]
            return self._json(req, entries, head)
        if action == "paths-info":
            length = int(req.headers.get("Content-Length") or 0)
            body = req.rfile.read(length).decode() if length else ""
            fields = parse_qs(body)
            if not fields and body.startswith("{"):
                fields = json.loads(body)
            paths = fields.get("paths", [])
            out = []
            for path in paths:
                if path in repo.files:
                    out.append(repo.entry(path))
                elif any(f.startswith(path.rstrip("/") + "/") for f in repo.files) or path in ("", "."):
                    out.append({"type": "directory", "path": path, "size": 0, "oid": "0" * 40})
            return self._json(req, out, head)
        return self._error(req, "EntryNotFound", head)

    # --- uploads ---------------------------------------------------------------------------------------------------

    def _body(self, req):
        length = int(req.headers.get("Content-Length") or 0)
        return req.rfile.read(length) if length else b""

    def _authorized(self, req):
        return not self.token or req.headers.get("Authorization") == "Bearer %s" % self.token

    def _lfs_path(self, oid):
        return os.path.join(self.root, ".lfs", oid)

    @staticmethod
    def upload_mode(path, size):
        """What the hub's .gitattributes would say: weights and big files go to LFS, the rest to git."""
        return "lfs" if path.endswith((".safetensors", ".bin", ".pt", ".gguf")) or size > 10 * 1024 * 1024 \
            else "regular"

    def _upload(self, req, parts, url):
        """Serve an upload call; False when the request is not one (the download API's, above)."""
        cmd = req.command
        if cmd == "GET" and parts[:2] == ["api", "whoami-v2"]:
            if not self._authorized(req) or not req.headers.get("Authorization"):
                return self._json(req, {"error": "Invalid credentials in Authorization header"}, status=401)
            return self._json(req, {"type": "user", "name": "publisher", "fullname": "Publisher", "orgs": [],
                                    "auth": {"type": "access_token", "accessToken": {"role": "write"}}})
        if cmd == "POST" and parts[:3] == ["api", "repos", "create"]:
            spec = json.loads(self._body(req) or b"{}")
            if not self._authorized(req):
                return self._json(req, {"error": "Invalid credentials"}, status=401)
            kind = (spec.get("type") or "model") + "s"
            repo_id = "%s/%s" % (spec.get("organization") or "publisher", spec["name"])
            repo_url = "%s/%s%s" % (self.url, "" if kind == "models" else kind + "/", repo_id)
            path = os.path.join(self.root, kind, repo_id)
            if os.path.isdir(path):
                return self._json(req, {"error": "You already created this model repo", "url": repo_url},
                                  status=409)
            os.makedirs(path)
            self.created.append(repo_id)
            self.private[repo_id] = bool(spec.get("private"))
            return self._json(req, {"url": repo_url, "name": repo_id})
        if cmd == "POST" and parts[:2] == ["api", "validate-yaml"]:
            # the hub checks a README's front matter (a mapping of YAML) before a commit that has one
            content = json.loads(self._body(req) or b"{}").get("content", "")
            problems = []
            if content.startswith("---\n") and "\n---" in content[4:]:
                try:
                    import yaml  # pylint: disable=import-outside-toplevel
                    front = yaml.safe_load(content[4:content.index("\n---", 4)])
                    if not isinstance(front, dict):
                        problems.append({"message": "the metadata is not a mapping"})
                except Exception as err:  # pylint: disable=broad-except
                    problems.append({"message": "invalid YAML: %s" % err})
            self.validated.append(content)
            return self._json(req, {"errors": problems, "warnings": []}, status=400 if problems else 200)
        if cmd == "PUT" and parts[0] == "lfs-upload" and len(parts) == 2:
            oid, body = parts[1], self._body(req)
            if self.fail_puts_after is not None and len(self.puts) >= self.fail_puts_after:
                return self._json(req, {"error": "upload cut off (test)"}, status=400)
            if hashlib.sha256(body).hexdigest() != oid:
                return self._json(req, {"error": "sha256 mismatch"}, status=400)
            os.makedirs(os.path.dirname(self._lfs_path(oid)), exist_ok=True)
            with open(self._lfs_path(oid) + ".tmp", "wb") as handle:
                handle.write(body)
            os.replace(self._lfs_path(oid) + ".tmp", self._lfs_path(oid))
            self.puts.append(oid)
            return self._send(req, 200)
        if cmd == "POST" and len(parts) >= 6 and parts[-4:] == ["info", "lfs", "objects", "batch"]:
            if not self._authorized(req):
                return self._json(req, {"message": "Invalid credentials"}, status=401)
            batch = json.loads(self._body(req))
            objects = []
            for obj in batch.get("objects", []):
                held = os.path.isfile(self._lfs_path(obj["oid"])) and \
                    os.path.getsize(self._lfs_path(obj["oid"])) == obj["size"]
                entry = {"oid": obj["oid"], "size": obj["size"]}
                if not held:
                    entry["authenticated"] = True
                    entry["actions"] = {"upload": {"href": "%s/lfs-upload/%s" % (self.url, obj["oid"])}}
                objects.append(entry)
            return self._json(req, {"transfer": "basic", "objects": objects})
        if cmd == "POST" and len(parts) >= 6 and parts[0] == "api" and parts[4] in ("preupload", "commit"):
            kind, repo_id = parts[1], "/".join(parts[2:4])
            if not self._authorized(req):
                return self._json(req, {"error": "Invalid credentials"}, status=401)
            repo = self.repo(kind, repo_id)
            if repo is None:
                return self._error(req, "RepoNotFound", False)
            body = self._body(req)
            if parts[4] == "preupload":
                files = []
                for item in json.loads(body).get("files", []):
                    mode = self.upload_mode(item["path"], item["size"])
                    oid = None
                    if item["path"] in repo.files:
                        oid = repo.sha256[item["path"]] if mode == "lfs" else _git_sha1(
                            os.path.join(repo.path, item["path"]))
                    files.append({"path": item["path"], "uploadMode": mode, "shouldIgnore": False, "oid": oid})
                return self._json(req, {"files": files})
            return self._commit(req, repo, body)
        return False

    def _commit(self, req, repo, body):
        if self.fail_commits > 0:
            self.fail_commits -= 1
            return self._json(req, {"error": "commit cut off (test)"}, status=400)
        lines = [json.loads(line) for line in body.decode().splitlines() if line.strip()]
        if not lines or lines[0].get("key") != "header":
            return self._json(req, {"error": "the commit's first line is not its header"}, status=400)
        for line in lines[1:]:
            path = line["value"]["path"]
            if line["key"] == "lfsFile" and not os.path.isfile(self._lfs_path(line["value"]["oid"])):
                return self._json(req, {"error": "LFS object %s not uploaded" % line["value"]["oid"]}, status=400)
            if ".." in path.split("/") or path.startswith("/"):
                return self._json(req, {"error": "bad path %s" % path}, status=400)
        written = []
        for line in lines[1:]:
            value = line["value"]
            target = os.path.join(repo.path, value["path"])
            if line["key"] in ("file", "lfsFile"):
                os.makedirs(os.path.dirname(target), exist_ok=True)
                if line["key"] == "file":
                    with open(target, "wb") as handle:
                        handle.write(base64.b64decode(value["content"]))
                else:
                    with open(self._lfs_path(value["oid"]), "rb") as src, open(target, "wb") as handle:
                        handle.write(src.read())
                written.append(value["path"])
            elif line["key"] == "deletedFile" and os.path.isfile(target):
                os.remove(target)
        self.commits.append((repo.repo_id, written))
        after = self.repo(repo.kind, repo.repo_id)
        return self._json(req, {"commitUrl": "%s/%s/commit/%s" % (self.url, repo.repo_id, after.commit),
                                "commitOid": after.commit, "success": True})

    def _resolve(self, req, kind, repo_id, revision, name, head):
        repo = self.repo(kind, repo_id)
        if repo is None:
            return self._error(req, "RepoNotFound", head)
        if revision not in ("main", repo.commit):
            return self._error(req, "RevisionNotFound", head)
        if name not in repo.files:
            return self._error(req, "EntryNotFound", head)
        size = repo.size(name)
        start, end = 0, size - 1
        status = 200
        ranged = req.headers.get("Range")
        if ranged and not head:
            self.ranges.append(ranged)
        if ranged and ranged.startswith("bytes="):
            first, _, last = ranged[6:].partition("-")
            start = int(first or 0)
            end = int(last) if last else size - 1
            status = 206
        headers = {"X-Repo-Commit": repo.commit, "ETag": '"%s"' % repo.sha256[name],
                   "X-Linked-Etag": '"%s"' % repo.sha256[name], "X-Linked-Size": str(size),
                   "Content-Length": str(max(0, end - start + 1)), "Accept-Ranges": "bytes",
                   "Content-Type": "application/octet-stream"}
        if status == 206:
            headers["Content-Range"] = "bytes %d-%d/%d" % (start, end, size)
        self._send(req, status, b"", headers, head=True)
        if head:
            return None
        with open(os.path.join(repo.path, name), "rb") as handle:
            handle.seek(start)
            left = end - start + 1
            cut = None
            if self.cuts > 0 and left > self.cut_after:
                self.cuts -= 1
                cut = self.cut_after
            chunk = 65536 if not self.rate else max(1024, int(self.rate) // 10)
            while left > 0:
                if cut is not None and cut <= 0:
                    req.wfile.flush()
                    req.close_connection = True
                    req.connection.shutdown(2)  # the link drops mid-file
                    return None
                block = handle.read(min(chunk, left, cut if cut is not None else left))
                if not block:
                    break
                try:
                    req.wfile.write(block)
                except (BrokenPipeError, ConnectionResetError):
                    return None
                self.served += len(block)
                left -= len(block)
                if cut is not None:
                    cut -= len(block)
                if self.rate:
                    time.sleep(len(block) / self.rate)
        return None


def main(argv=None):
    parser = argparse.ArgumentParser(description="Serve a folder as a stand-in for the Hugging Face hub's API.")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve ROOT until stopped")
    serve.add_argument("--root", required=True, help="the hub's repositories: ROOT/models/ORG/NAME/...")
    serve.add_argument("--port", type=int, default=8765)
    serve.add_argument("--host", default="0.0.0.0")
    serve.add_argument("--token", default=os.environ.get("FAKEHUB_TOKEN"),
                       help="refuse writes without it (default: FAKEHUB_TOKEN, else none)")
    args = parser.parse_args(argv)
    os.makedirs(args.root, exist_ok=True)
    hub = FakeHub(args.root, host=args.host, port=args.port, token=args.token)
    print("serving %s at http://%s:%d" % (args.root, args.host, hub.server.server_address[1]), flush=True)
    try:
        hub.server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
