"""A real `git http-backend` behind HTTP Basic auth on 127.0.0.1, for git's
own `Username for`/`Password for` questions.

Python's http.server takes the requests (a thread of the test's process);
each is run through git http-backend as CGI, as a web server would, once its
Authorization header names the one account. Without it the answer is 401
with a Basic challenge: git asks for the username and the password on its
terminal, and fails with "could not read Username" where it has none."""

from __future__ import annotations

import base64
import os
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit


@dataclass(frozen=True)
class HttpGit:
    root: Path  # GIT_PROJECT_ROOT: the bare repositories served
    port: int
    user: str
    password: str

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/{name}"


def _handler(server: HttpGit) -> type[BaseHTTPRequestHandler]:
    expected = "Basic " + base64.b64encode(f"{server.user}:{server.password}".encode()).decode()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base's name
            pass  # the test's output is not the place for an access log

        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            self._serve(b"")

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            self._serve(self.rfile.read(length))

        def _serve(self, body: bytes) -> None:
            if self.headers.get("Authorization") != expected:
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="ttyoffer test"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            parts = urlsplit(self.path)
            env = {
                "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                "GIT_PROJECT_ROOT": str(server.root),
                "GIT_HTTP_EXPORT_ALL": "1",
                "REQUEST_METHOD": self.command,
                "PATH_INFO": parts.path,
                "QUERY_STRING": parts.query,
                "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                "CONTENT_LENGTH": str(len(body)),
                "REMOTE_USER": server.user,
                "REMOTE_ADDR": "127.0.0.1",
                "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
            }
            done = subprocess.run(
                ["git", "http-backend"], input=body, env=env, capture_output=True, timeout=60
            )
            head, _, payload = done.stdout.partition(b"\r\n\r\n")
            status = 200
            headers = []
            for line in head.decode("latin-1").split("\r\n"):
                name, _, value = line.partition(":")
                if name.lower() == "status":
                    status = int(value.split()[0])
                elif name:
                    headers.append((name, value.strip()))
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    return Handler


@contextmanager
def http_git(root: Path, user: str = "matrix", password: str = "http secret") -> Iterator[HttpGit]:
    """Serve the bare repositories under `root` until the end of the block."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    served = HttpGit(root, httpd.server_address[1], user, password)
    httpd.RequestHandlerClass = _handler(served)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield served
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(10)
