"""A fake Rerun Gate with the demo outside systems, served on 127.0.0.1, for running the examples as processes.

The Rerun Gate part is conftest.FakeGate (schema-checked); the demo part mimics `serve --demo`:
POST /demo/{service}/requests with Idempotency-Key: 201 first, 200 + idempotency-replayed for the same key and
content, 409 for the same key with other content; `demo-fault: drop-answer` does the work and closes the
connection without an answer.
"""

from __future__ import annotations

import json
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

from conftest import FakeGate, now


class LoopbackGate:
    def __init__(self, gate: FakeGate) -> None:
        self.gate = gate
        self.demo: dict[tuple[str, str], dict[str, Any]] = {}
        self.lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def _serve(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                if self.path.startswith("/demo/"):
                    owner._demo(self, body)
                    return
                request = httpx.Request(self.command, "http://127.0.0.1" + self.path,
                                        headers=list(self.headers.items()), content=body)
                with owner.lock:
                    response = owner.gate(request)
                self._send(response.status_code, response.content, dict(response.headers))

            def _send(self, status: int, content: bytes, headers: dict[str, str]) -> None:
                self.send_response(status)
                for k, v in headers.items():
                    if k.lower() not in ("content-length", "transfer-encoding", "connection"):
                        self.send_header(k, v)
                self.send_header("content-length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)

            do_GET = _serve
            do_POST = _serve

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "LoopbackGate":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _demo(self, handler: Any, body: bytes) -> None:
        parts = handler.path.split("?")[0].strip("/").split("/")
        if len(parts) != 3 or parts[2] != "requests" or handler.command != "POST":
            handler._send(404, b'{"detail":"not found"}', {"content-type": "application/json"})
            return
        service = parts[1]
        key = handler.headers.get("idempotency-key", "")
        content = json.loads(body or b"null")
        with self.lock:
            record = self.demo.get((service, key))
            if record is None:
                record = {"id": f"{service[:3]}_{uuid.uuid4().hex}", "idempotency_key": key, "status": "completed",
                          "content": content, "process_id": handler.headers.get("process-id"),
                          "created_at": now(), "replays": 0, "conflicts": 0}
                self.demo[(service, key)] = record
                status, headers = 201, {"content-type": "application/json"}
            elif record["content"] != content:
                record["conflicts"] += 1
                problem = {"type": "/problems/idempotency-key-mismatch", "title": "Conflict", "status": 409,
                           "detail": f"the {service} service already did other content under this Idempotency-Key"}
                handler._send(409, json.dumps(problem).encode(), {"content-type": "application/problem+json"})
                return
            else:
                record["replays"] += 1
                status, headers = 200, {"content-type": "application/json", "idempotency-replayed": "true"}
        if handler.headers.get("demo-fault") == "drop-answer":
            handler.close_connection = True  # the work is done; the answer is lost
            return
        handler._send(status, json.dumps(record).encode(), headers)
