"""Fixtures: the OpenAPI document, and a fake Rerun Gate behind httpx.MockTransport.

FakeGate behaves like the server for what the kit uses (registration with Idempotency-Key replay and the 409
kinds, operations, step events with the seq rule) and checks EVERY request body the kit sends, and every answer
it gives (canned ones too), against the OpenAPI document. A schema problem fails the test that caused it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Iterator
from urllib.parse import unquote

import httpx
import pytest

from _openapi import OpenApi
from rerun_gate import Client, MemoryStore, SeqStore

TOKEN = "rg_test-token"
BASE = "http://gate.test"

WORKFLOW_STEPS = {"order-intake": ["register_order", "ai_summary"]}


def now() -> str:
    return datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")


def problem(status: int, slug: str, detail: str, **extra: Any) -> dict[str, Any]:
    titles = {400: "Bad Request", 401: "Unauthorized", 404: "Not Found", 409: "Conflict",
              422: "Unprocessable Entity", 429: "Too Many Requests", 500: "Internal Server Error",
              502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout"}
    return {"type": f"/problems/{slug}", "title": titles.get(status, "Error"), "status": status, "detail": detail,
            **extra}


def problem_response(status: int, slug: str, detail: str, headers: dict[str, str] | None = None,
                     **extra: Any) -> httpx.Response:
    return httpx.Response(status, json=problem(status, slug, detail, **extra),
                          headers={"content-type": "application/problem+json", **(headers or {})})


def step_view(position: int, name: str, key: str) -> dict[str, Any]:
    return {"position": position, "name": name, "state": "not_started", "idempotency_key": key, "result_id": None,
            "attempts": 0, "last_seq": None, "completed_at": None, "error": None, "latest_verdict": None}


def operation_view(process_id: str, workflow: str = "order-intake", department: str = "sales",
                   steps: list[tuple[str, str]] | None = None, business_key: str | None = None) -> dict[str, Any]:
    steps = steps if steps is not None else [(n, f"{process_id}:{n}") for n in WORKFLOW_STEPS[workflow]]
    t = now()
    return {"process_id": process_id, "workflow": workflow, "department": department, "business_key": business_key,
            "status": "running", "event": None, "failure_class": None, "possible_duplicate_of": None,
            "created_at": t, "updated_at": t,
            "steps": [step_view(i + 1, n, k) for i, (n, k) in enumerate(steps)]}


Fault = Any  # an Exception (raised before the server sees the call), "lose" (done, answer lost), "garbage"
#              (done, answer not JSON), or an httpx.Response (answered instead)


@dataclass
class FakeGate:
    api: OpenApi
    operations: dict[str, dict[str, Any]] = field(default_factory=dict)
    keys: dict[str, tuple[Any, str, dict[str, Any]]] = field(default_factory=dict)
    requests: list[httpx.Request] = field(default_factory=list)
    faults: list[tuple[Callable[[httpx.Request], bool], Fault]] = field(default_factory=list)
    schema_errors: list[str] = field(default_factory=list)
    heartbeats: int = 0

    # -- scripting -------------------------------------------------------------------------------------

    def fail_next(self, fault: Fault, *, method: str | None = None, path: str | None = None) -> None:
        """The next request matching (method, a regex on the path) gets ``fault``; faults queue up in order."""
        def match(r: httpx.Request) -> bool:
            return (method is None or r.method == method) and (path is None or re.search(path, r.url.path) is not None)
        self.faults.append((match, fault))

    def events(self, process_id: str | None = None, step: str | None = None) -> list[dict[str, Any]]:
        """The step-event bodies the kit sent (each attempt), in order."""
        out = []
        for r in self.requests:
            m = re.match(r"^/api/v1/operations/([^/]+)/steps/([^/]+)/events$", r.url.raw_path.decode().split("?")[0])
            if m and (process_id is None or unquote(m.group(1)) == process_id) and (step is None or unquote(m.group(2)) == step):
                out.append({**json.loads(r.content), "_step": unquote(m.group(2))})
        return out

    def step(self, process_id: str, name: str) -> dict[str, Any]:
        return next(s for s in self.operations[process_id]["steps"] if s["name"] == name)

    # -- the transport ---------------------------------------------------------------------------------

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        self._check_request(request)
        fault: Fault = None
        for i, (match, f) in enumerate(self.faults):
            if match(request):
                fault = f
                del self.faults[i]
                break
        if isinstance(fault, BaseException):
            raise fault
        if isinstance(fault, httpx.Response):
            self._check_response(request, fault)
            return fault
        response = self._handle(request)
        self._check_response(request, response)
        if fault == "lose":
            raise httpx.RemoteProtocolError("Server disconnected without sending a response.", request=request)
        if fault == "garbage":
            return httpx.Response(response.status_code, content=b'{"process_id": "trunc',
                                  headers={"content-type": "application/json"})
        return response

    def _check_request(self, request: httpx.Request) -> None:
        path = request.url.path
        if not self.api.operation_known(request.method, path):
            self.schema_errors.append(f"{request.method} {path}: not in the OpenAPI document")
            return
        for header in self.api.required_headers(request.method, path):
            if header.lower() not in {k.lower() for k in request.headers}:
                self.schema_errors.append(f"{request.method} {path}: required header {header} missing")
        schema = self.api.request_schema(request.method, path)
        if schema is not None:
            if request.headers.get("content-type") != "application/json":
                self.schema_errors.append(f"{request.method} {path}: content-type {request.headers.get('content-type')}")
            try:
                body = json.loads(request.content)
            except ValueError as e:
                self.schema_errors.append(f"{request.method} {path}: body is not JSON ({e})")
                return
            for problem_text in self.api.errors(body, *schema):
                self.schema_errors.append(f"request {request.method} {path}: {problem_text}")

    def _check_response(self, request: httpx.Request, response: httpx.Response) -> None:
        path = request.url.path
        ctype = response.headers.get("content-type", "").split(";")[0].strip()
        status = response.status_code
        if str(status) not in self.api.documented_statuses(request.method, path) and status not in (500, 502, 503, 504):
            # 5xx may come from a gateway or a crash: not in the document; the kit retries 502/503/504.
            self.schema_errors.append(f"answer {status} to {request.method} {path} is not documented")
        schema = self.api.response_schema(request.method, path, status, ctype)
        if schema is None:
            if status < 500:
                self.schema_errors.append(f"answer {status} {ctype} to {request.method} {path}: no schema documented")
            return
        for problem_text in self.api.errors(json.loads(response.content), *schema):
            self.schema_errors.append(f"answer {status} to {request.method} {path}: {problem_text}")

    # -- the fake server -------------------------------------------------------------------------------

    def _handle(self, request: httpx.Request) -> httpx.Response:
        auth = request.headers.get("authorization")
        if not auth:
            return problem_response(401, "token-missing", "send the API token in the header `Authorization: Bearer <token>`",
                                    headers={"www-authenticate": "Bearer"})
        if auth != f"Bearer {TOKEN}":
            return problem_response(401, "invalid-token", "the API token is not valid",
                                    headers={"www-authenticate": 'Bearer error="invalid_token"'})
        raw = request.url.raw_path.decode().split("?")[0]
        if request.method == "POST" and raw == "/api/v1/operations":
            return self._register(request)
        m = re.match(r"^/api/v1/operations/([^/]+)$", raw)
        if m and request.method == "GET":
            op = self.operations.get(unquote(m.group(1)))
            return httpx.Response(200, json=op) if op else problem_response(404, "not-found", "not found")
        m = re.match(r"^/api/v1/operations/([^/]+)/steps/([^/]+)/events$", raw)
        if m and request.method == "POST":
            return self._event(unquote(m.group(1)), unquote(m.group(2)), json.loads(request.content))
        return problem_response(404, "not-found", "not found")

    def _register(self, request: httpx.Request) -> httpx.Response:
        key = request.headers.get("idempotency-key")
        if not key:
            return problem_response(400, "bad-request", "the header Idempotency-Key is required")
        body = json.loads(request.content)
        if key in self.keys:
            stored_body, pid, answer = self.keys[key]
            if stored_body != body:
                return problem_response(409, "idempotency-key-mismatch",
                                        "this Idempotency-Key was used with a different request body; nothing was changed")
            return httpx.Response(201, json=answer, headers={"idempotency-replayed": "true"})
        pid = body["process_id"]
        if pid in self.operations:
            return problem_response(409, "process-id-exists",
                                    f"process_id '{pid}' is already registered under another Idempotency-Key")
        names = [s["name"] for s in body["steps"]]
        expected = WORKFLOW_STEPS.get(body["workflow"])
        if expected is None or names != expected:
            msg = f"steps must be exactly {json.dumps(expected)} in this order (got {json.dumps(names)})"
            return problem_response(422, "validation", msg, errors=[{"field": "steps", "message": msg}])
        op = operation_view(pid, body["workflow"], body["department"],
                            [(s["name"], s["idempotency_key"]) for s in body["steps"]], body.get("business_key"))
        self.operations[pid] = op
        self.keys[key] = (body, pid, op)
        return httpx.Response(201, json=op)

    def _event(self, pid: str, name: str, event: dict[str, Any]) -> httpx.Response:
        op = self.operations.get(pid)
        if op is None:
            return problem_response(404, "not-found", "not found")
        step = next((s for s in op["steps"] if s["name"] == name), None)
        if step is None:
            msg = f"operation {pid} has no step '{name}': its steps are {', '.join(s['name'] for s in op['steps'])}"
            return problem_response(422, "validation", msg, errors=[{"field": "step", "message": msg}])
        last = step["last_seq"]
        seq = event["seq"]
        if event["type"] == "heartbeat":  # liveness only; its seq is not kept; an ended step is not revived
            self.heartbeats += 1
            return httpx.Response(200, json={"applied": step["state"] in ("not_started", "started"), "step": step})
        if last is not None and seq <= last:
            return httpx.Response(200, json={"applied": False, "step": step})
        if step["state"] == "succeeded" and event["type"] != "succeeded":
            # As the server (domain::operations::may_leave_success): a confirmed success is never undone.
            return httpx.Response(200, json={"applied": False, "step": step})
        step["last_seq"] = seq
        step["state"] = event["type"]
        if event["type"] == "started":
            step["attempts"] += 1
            step["completed_at"] = None
        if event["type"] == "succeeded":
            step["result_id"] = event.get("result_id")
            step["completed_at"] = now()
            step["error"] = None
        if event["type"] in ("failed", "unknown"):
            step["error"] = event["error"]
        op["updated_at"] = now()
        return httpx.Response(200, json={"applied": True, "step": step})


@pytest.fixture(scope="session")
def api() -> OpenApi:
    return OpenApi.load()


@pytest.fixture
def gate(api: OpenApi) -> Iterator[FakeGate]:
    g = FakeGate(api)
    yield g
    assert not g.schema_errors, "schema check failed:\n" + "\n".join(g.schema_errors)


@dataclass
class Sleeps:
    delays: list[float] = field(default_factory=list)

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def make_client(gate: FakeGate, sleeps: Sleeps) -> Iterator[Callable[..., Client]]:
    made: list[Client] = []

    def make(store: SeqStore | None = None, token: str = TOKEN, **kwargs: Any) -> Client:
        http = httpx.Client(transport=httpx.MockTransport(gate))
        client = Client(BASE, token, http=http, store=store if store is not None else MemoryStore(), sleep=sleeps,
                        **kwargs)
        made.append(client)
        return client

    yield make
    for c in made:
        c._http.close()


@pytest.fixture
def client(make_client: Callable[..., Client]) -> Client:
    return make_client()
