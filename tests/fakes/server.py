"""A tiny threaded HTTP server on 127.0.0.1 that answers from a handler and records requests.

Role:       the transport half of the provider fakes; the vendor modules build the responses.
Invariants: binds loopback only; every request is recorded (method, path, headers, JSON body);
            a `Hang` response blocks until the server stops, so timeout tests never sleep.
"""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterable

import attrs


@attrs.frozen
class Recorded:
    method: str
    path: str
    headers: dict
    body: Any  # parsed JSON, or the raw text when it is not JSON


@attrs.frozen
class Response:
    """`body` is bytes/str/JSON-able; `chunks` (iterable of bytes/str) streams instead."""

    status: int = 200
    body: Any = None
    headers: tuple = ()
    chunks: Iterable | None = None
    content_type: str = "application/json"


class Hang:
    """Send nothing until the server stops: the client's timeout must fire."""


Handler = Callable[[Recorded], "Response | Hang"]


class QuietServer(ThreadingHTTPServer):
    """A threaded server that says nothing when a client hangs up mid-answer (a client that
    timed out, or stopped reading at its size cap: what the tests make clients do); any other
    error in a handler is printed as `socketserver` does."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)


class FakeServer:
    """`with FakeServer(handler) as s:` then point a client at `s.url`."""

    def __init__(self, handler: Handler):
        self.handler = handler
        self.requests: list[Recorded] = []
        self.stopped = threading.Event()
        self._httpd = QuietServer(("127.0.0.1", 0), _make_handler(self))
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,),
                                        daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> "FakeServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stopped.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    @property
    def bodies(self) -> list:
        return [r.body for r in self.requests]


def _make_handler(server: FakeServer) -> type:
    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:  # quiet
            pass

        def _serve(self) -> None:
            n = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(n).decode("utf-8", "replace") if n else ""
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = raw
            rec = Recorded(self.command, self.path, {k.lower(): v for k, v in self.headers.items()},
                           body)
            server.requests.append(rec)
            out = server.handler(rec)
            if isinstance(out, Hang):
                server.stopped.wait(30)
                return
            self._send(out)

        do_GET = do_POST = do_HEAD = do_DELETE = _serve

        def _send(self, out: Response) -> None:
            self.send_response(out.status)
            self.send_header("content-type", out.content_type)
            for k, v in out.headers:
                self.send_header(k, v)
            if out.chunks is not None:
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                for c in out.chunks:
                    data = c.encode() if isinstance(c, str) else c
                    if data:
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
                return
            body = out.body
            if not isinstance(body, (bytes, str)):
                body = json.dumps(body)
            data = body.encode() if isinstance(body, str) else body
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return H


def free_port() -> int:
    """A loopback port with nothing listening on it (bound, then closed)."""
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
