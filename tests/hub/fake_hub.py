#!/usr/bin/env python3
"""fake_hub.py DIR PORTFILE LOG: a local imitation of the Hugging Face hub for `hymt pull` tests.

Serves the files of DIR as several model repos at one commit, with the hub's API and resolve
endpoints as huggingface_hub reads them:
  GET /api/models/ORG/NAME/revision/REV[?blobs=true]  {"sha", "siblings": [{rfilename, size,
      blobId, lfs: {sha256, size, pointerSize}}]}  (lfs only for files over LFS_MIN bytes)
  HEAD|GET /ORG/NAME/resolve/REV/PATH  a plain file: 200, ETag "<git blob id>"; an LFS file:
      302 to an absolute http://localhost:PORT/cdn/<sha256> URL (another host name, as a
      CDN is) with X-Linked-Etag "<sha256>" and X-Linked-Size;
      both with X-Repo-Commit
  GET /cdn/SHA256  the bytes, with Range (206)
Repos: test/tiny (the files), test/gated (the same, 401 without "Bearer secret-token"),
test/corrupt (the CDN flips one byte of each LFS file), test/truncate (the first GET of each
LFS file sends half its bytes and closes), test/holes (lists a file the resolve endpoint
answers 404), test/renamed (resolve answers a relative 307 to test/tiny, as a renamed repo).
Anything else is 404. Revisions: main, v1 and the commit itself. Every request is logged to
LOG as "METHOD PATH range=... auth=...". Binds 127.0.0.1 on a free port, written to PORTFILE.
"""
import hashlib
import http.server
import json
import os
import sys
import threading

LFS_MIN = 4096
COMMIT = "0123456789abcdef0123456789abcdef01234567"
REPOS = {"test/tiny", "test/gated", "test/corrupt", "test/truncate", "test/holes", "test/renamed"}
TOKEN = "secret-token"

root, portfile, logfile = sys.argv[1], sys.argv[2], sys.argv[3]
files = {}
for name in sorted(os.listdir(root)):
    p = os.path.join(root, name)
    if os.path.isfile(p):
        data = open(p, "rb").read()
        files[name] = {
            "data": data,
            "blob": hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest(),
            "sha256": hashlib.sha256(data).hexdigest(),
            "lfs": len(data) >= LFS_MIN,
        }
files["sub/notes.txt"] = {"data": b"a file in a folder\n"}
files["sub/notes.txt"].update(blob=hashlib.sha1(b"blob 19\0" + files["sub/notes.txt"]["data"]).hexdigest(),
                              sha256=hashlib.sha256(files["sub/notes.txt"]["data"]).hexdigest(), lfs=False)
by_sha = {f["sha256"]: f for f in files.values()}
lock = threading.Lock()
truncated = set()
log = open(logfile, "a", buffering=1)


class Hub(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send(self, code, body=b"", headers=()):
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def split(self):
        path = self.path.split("?")[0]
        with lock:
            log.write("%s %s range=%s auth=%s\n" % (self.command, self.path,
                      self.headers.get("Range", "-"), self.headers.get("Authorization", "-")))
        return path.strip("/").split("/")

    def authorized(self, repo):
        return repo != "test/gated" or self.headers.get("Authorization") == "Bearer " + TOKEN

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        parts = self.split()
        if parts[:2] == ["api", "models"] and len(parts) >= 6 and parts[4] == "revision":
            return self.api("/".join(parts[2:4]), "/".join(parts[5:]))
        if len(parts) >= 5 and parts[2] == "resolve":
            return self.resolve("/".join(parts[:2]), parts[3], "/".join(parts[4:]))
        if len(parts) == 2 and parts[0] == "cdn":
            return self.cdn(parts[1])
        self.send(404, b"Not Found")

    def api(self, repo, rev):
        if repo not in REPOS or rev.replace("%2F", "/") not in ("main", "v1", COMMIT):
            return self.send(404, b'{"error":"Repository not found"}')
        if not self.authorized(repo):
            return self.send(401, b'{"error":"Access to model test/gated is restricted"}')
        sib = []
        for name, f in files.items():
            s = {"rfilename": name, "size": len(f["data"]), "blobId": f["blob"]}
            if f["lfs"]:
                s["lfs"] = {"sha256": f["sha256"], "size": len(f["data"]), "pointerSize": 134}
            sib.append(s)
        if repo == "test/holes":
            sib.append({"rfilename": "gone.bin", "size": 5, "blobId": "f" * 40})
        self.send(200, json.dumps({"id": repo, "sha": COMMIT, "siblings": sib}).encode(),
                  [("Content-Type", "application/json")])

    def resolve(self, repo, rev, name):
        if repo not in REPOS or rev not in ("main", "v1", COMMIT):
            return self.send(404, b"Repository not found")
        if not self.authorized(repo):
            return self.send(401, b"Unauthorized")
        if repo == "test/renamed":
            return self.send(307, b"", [("Location", "/test/tiny/resolve/%s/%s" % (rev, name))])
        f = files.get(name)
        if f is None:
            return self.send(404, b"Entry not found", [("X-Error-Code", "EntryNotFound")])
        common = [("X-Repo-Commit", COMMIT)]
        if not f["lfs"]:
            return self.send(200, f["data"], common + [("ETag", '"%s"' % f["blob"])])
        # another host name than the API's, as a CDN is: the token must not follow
        host = "http://localhost:%d" % self.server.server_address[1]
        cdn = "%s/cdn/%s?repo=%s" % (host, f["sha256"], repo)
        self.send(302, b"", common + [("Location", cdn), ("ETag", '"pointer-%s"' % f["blob"]),
                                      ("X-Linked-Etag", '"%s"' % f["sha256"]),
                                      ("X-Linked-Size", str(len(f["data"])))])

    def cdn(self, sha):
        sha, _, query = sha.partition("?")
        f = by_sha.get(sha)
        if f is None:
            return self.send(404, b"NoSuchKey")
        data = f["data"]
        if "repo=test/corrupt" in self.path:
            data = data[:100] + bytes([data[100] ^ 1]) + data[101:]
        start = 0
        rng = self.headers.get("Range")
        if rng and rng.startswith("bytes=") and rng.endswith("-"):
            start = int(rng[6:-1])
            if start >= len(data):
                return self.send(416, b"", [("Content-Range", "bytes */%d" % len(data))])
        body = data[start:]
        self.send_response(206 if start else 200)
        if start:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, len(data) - 1, len(data)))
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command == "HEAD":
            return
        if "repo=test/truncate" in self.path and sha not in truncated:
            with lock:
                truncated.add(sha)
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(2)
            return
        self.wfile.write(body)


srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hub)
with open(portfile + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(portfile + ".tmp", portfile)
srv.serve_forever()
