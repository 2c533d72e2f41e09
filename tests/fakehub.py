"""A small stand-in for the Hugging Face hub's HTTP API, serving repositories from a folder, for tests.

The hub is out of reach where the tests run, so huggingface_hub and datasets are pointed at this server
(``endpoint=`` / ``HF_ENDPOINT``) and run their real download code against it: repository info, file metadata
(HEAD with ETag and size), downloads with Range (resume), tree listings and paths-info, and the hub's error
codes (RepoNotFound, RevisionNotFound, EntryNotFound).

Layout: ``<root>/<models|datasets>/<org>/<name>/...``; each repository has one revision, ``main``, whose commit id
is derived from its files' contents. ``rate`` (bytes a second) slows downloads so a test can interrupt one.
"""

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

    def __init__(self, root, rate=None, cuts=0, cut_after=0):
        self.root, self.rate = root, rate
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

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
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
