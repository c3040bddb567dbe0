"""Local fake servers on 127.0.0.1 that speak each provider's wire protocol, for tests and benchmarks.

Each server answers deterministically from the request (the text is ``answer:<custom_id>``), counts every
submission of every custom_id, and has knobs for the failure modes a real batch API shows: requests that
error, batches that expire part-way, a completed batch with no output file, results out of order, damaged
result lines (``damage_ids``), one-off HTTP errors on chosen routes (``http_errors``), an API that quotes the
caller's key back in answers and errors (``echo_key``) or rejects it quoting it (``reject_key``); and a
``SilentServer`` that accepts connections and never answers."""

from __future__ import annotations

import json
import re
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse


class FakeServer:
    """Base: a threaded HTTP server on 127.0.0.1 with a route table."""

    def __init__(self):
        self.lock = threading.RLock()
        self.submissions: dict[str, int] = {}  # custom_id -> times submitted
        self.succeeded: set[str] = set()  # custom_ids that got a succeeded result
        self.duplicate_after_success = 0  # submissions of ids that had already succeeded
        self.requests_seen: list[tuple[str, str]] = []
        self.polls_to_end = 1
        self.fail_ids: dict[str, int] = {}  # custom_id -> number of attempts that fail
        self.fail_status = 500  # the HTTP status of those online failures (SDKs retry 5xx with backoff, not 400)
        self.first_request_at = None  # time.monotonic() of the first request served
        self.latency = 0.0  # seconds added to every HTTP answer (to make runs long enough to interrupt)
        self.http_errors: list[tuple[str, str, int]] = []  # (method, path regex, status): each answered once
        self.echo_key = False  # quote the caller's API key in every answer text and error message
        self.reject_key = False  # answer every call 401 "Incorrect API key provided: <key>"
        self.current_key = None  # the API key of the latest call (Authorization, x-api-key or x-goog-api-key)
        self.damage_ids: dict[str, str] = {}  # custom_id -> "truncate" | "garbage": its first result line damaged
        self.reshape = None  # fn(answer body) -> body, applied to every online answer (null or missing fields)
        # fn(id) -> the usage object answered for that request in the provider's own shape (None: the answer has
        # no usage at all); id is the custom_id in a batch, the text after "id=" in the last message online
        self.usage_for = None
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, code, payload, content_type="application/json", headers=None):
                body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                try:
                    self.send_response(code)
                    for name, value in (headers or {}).items():  # a route may add its own (upload sessions)
                        self.send_header(name, value)
                    self.send_header("Content-Type", content_type)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client was killed while waiting (the kill tests)

            def _handle(self, method):
                path = urlparse(self.path).path
                # a request is seen (requests_seen) when it arrives, before the latency and the answer: a test
                # that kills the client on seeing a batch creation kills it before the client hears back
                with server.lock:
                    if server.first_request_at is None:
                        import time as _t
                        server.first_request_at = _t.monotonic()
                    server.requests_seen.append((method, path))
                    server.headers_seen = dict(self.headers)
                    lower = {k.lower(): v for k, v in self.headers.items()}
                    server.current_key = (lower.get("authorization", "").removeprefix("Bearer ") or
                                          lower.get("x-api-key") or lower.get("x-goog-api-key"))
                    injected = next((e for e in server.http_errors if e[0] == method and re.search(e[1], path)), None)
                    if injected:
                        server.http_errors.remove(injected)
                if server.latency:
                    import time
                    time.sleep(server.latency)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                if injected:
                    self._send(injected[2], {"error": {"code": injected[2], "message": "injected error",
                                                       "status": "UNAVAILABLE", "type": "overloaded_error"}})
                    return
                if server.reject_key:
                    self._send(401, {"type": "error", "error": {
                        "code": 401, "type": "authentication_error", "status": "UNAUTHENTICATED",
                        "message": f"Incorrect API key provided: {server.current_key}"}})
                    return
                extra = {}
                try:
                    code, payload, ctype, *more = server.route(method, path, raw, dict(self.headers), self.path)
                    extra = more[0] if more else {}
                except KeyError as err:
                    code, payload, ctype = 404, {"error": {"message": f"not found: {err}"}}, "application/json"
                self._send(code, payload, ctype, extra)

            def do_GET(self):
                self._handle("GET")

            def do_POST(self):
                self._handle("POST")

            def do_DELETE(self):
                self._handle("DELETE")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # bookkeeping shared by the providers' fakes
    def count_submission(self, custom_id: str) -> int:
        with self.lock:
            if custom_id in self.succeeded:
                self.duplicate_after_success += 1
            self.submissions[custom_id] = self.submissions.get(custom_id, 0) + 1
            return self.submissions[custom_id]

    def should_fail(self, custom_id: str, attempt: int) -> bool:
        return attempt <= self.fail_ids.get(custom_id, 0)

    def echo(self, text: str) -> str:
        """``text``, quoting the caller's key when ``echo_key`` is set."""
        return f"{text} (API key {self.current_key})" if self.echo_key else text

    def damaged(self, custom_id: str, attempt: int, line: str) -> str:
        """The result line of ``custom_id`` as sent: damaged on the first attempt when it is in damage_ids."""
        how = self.damage_ids.get(custom_id) if attempt == 1 else None
        if how == "truncate":  # cut short: not JSON, but the custom_id can still be read
            return line[: len(line) // 2]
        if how == "garbage":  # nothing readable
            return "<html>502 Bad Gateway</html>"
        return line

    def online_answer(self, body: dict) -> dict:
        """An online (synchronous) answer as sent: reshaped when ``reshape`` is set."""
        return self.reshape(body) if self.reshape else body

    def with_usage(self, body: dict, ident: str, key: str) -> dict:
        """``body`` with its usage object (under ``key``) replaced by ``usage_for(ident)`` when that is set."""
        if self.usage_for is None:
            return body
        usage = self.usage_for(ident)
        body.pop(key, None)
        if usage is not None:
            body[key] = dict(usage)
        return body

    def mark_succeeded(self, custom_id: str):
        with self.lock:
            self.succeeded.add(custom_id)

    def route(self, method, path, raw, headers, full_path):
        raise KeyError(path)


class SilentServer:
    """Accepts TCP connections on 127.0.0.1 (the kernel completes the handshake) and never answers."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(128)
        self.port = self.sock.getsockname()[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.sock.close()
