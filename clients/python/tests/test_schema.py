"""The kit against the OpenAPI document ($RERUN_GATE_OPENAPI, else tests/openapi.json).

Every request body the kit sends is also checked by FakeGate in every other test; here each kind of body and
each canned answer is checked explicitly, and the kit's lists are compared with the document's.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime, timezone
from typing import Any

import httpx
import pytest

from _openapi import OpenApi
from conftest import operation_view, problem, step_view
from rerun_gate import ERROR_CLASSES, EVENT_TYPES, Client, MemoryStore, Rerun, Step, Usage
from test_receiver import call_body

SCHEMAS = ("components", "schemas")


def test_the_document_is_the_one_configured(api: OpenApi) -> None:
    assert api.doc["openapi"].startswith("3.1"), api.source
    for path in ("/api/v1/operations", "/api/v1/operations/{process_id}",
                 "/api/v1/operations/{process_id}/steps/{step}/events"):
        assert path in api.doc["paths"], f"{path} missing from {api.source}"


def test_event_types_match_the_document(api: OpenApi) -> None:
    assert list(EVENT_TYPES) == api.doc["components"]["schemas"]["StepEventType"]["enum"]


def test_error_classes_match_the_document(api: OpenApi) -> None:
    assert sorted(api.error_class_enum) == sorted(ERROR_CLASSES)


class Capture:
    """A transport that records each body and answers a valid canned answer."""

    def __init__(self) -> None:
        self.bodies: list[tuple[str, str, Any]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else None
        self.bodies.append((request.method, request.url.path, body))
        if request.url.path == "/api/v1/operations":
            return httpx.Response(201, json=operation_view(body["process_id"]))
        if request.method == "GET":
            return httpx.Response(200, json=operation_view("ORD-1"))
        step = step_view(1, "register_order", "ORD-1:register_order")
        step["last_seq"] = body["seq"]
        return httpx.Response(200, json={"applied": True, "step": step})


def test_every_kind_of_body_the_kit_sends_is_valid(api: OpenApi) -> None:
    capture = Capture()
    client = Client("http://gate.test", "rg_x", http=httpx.Client(transport=httpx.MockTransport(capture)),
                    store=MemoryStore())
    client.register("ORD-1", "order-intake", "sales",
                    [Step("register_order", content={"amount": 4000, "currency": "JPY"}), Step("ai_summary")],
                    business_key="ORDER-1", content={"customer": "株式会社サンプル"})
    client.register("ORD-2", "order-intake", "sales", ["register_order", "ai_summary"])
    seq = 0
    for event_type in EVENT_TYPES:
        classes: tuple[str | None, ...] = ERROR_CLASSES if event_type in ("failed", "unknown") else (None,)
        for error_class in classes:
            seq += 1
            client.report("ORD-1", "register_order", event_type, seq=seq, error_class=error_class,
                          message="what happened" if error_class else None,
                          result_id="order-77" if event_type == "succeeded" else None,
                          usage=Usage(10, 5) if event_type == "succeeded" else None,
                          at=datetime.now(timezone.utc))
    with client.step("ORD-1", "register_order", heartbeat_every=None) as step:
        step.succeeded("order-78")
    assert len(capture.bodies) > 2 * len(ERROR_CLASSES)
    for method, path, body in capture.bodies:
        schema = api.request_schema(method, path)
        if body is None:
            assert schema is None
            continue
        assert schema is not None, f"{method} {path} has no request schema"
        assert api.errors(body, *schema) == [], (method, path, body)


def test_canned_answers_are_valid(api: OpenApi) -> None:
    view = operation_view("ORD-1", business_key="ORDER-1")
    api.validate(view, *SCHEMAS, "OperationView")
    with_warnings = {**view, "warnings": [{"kind": "step_content_missing", "step": "register_order",
                                           "message": "no content"}]}
    answer_201 = api.response_schema("POST", "/api/v1/operations", 201, "application/json")
    assert answer_201 is not None
    api.validate(with_warnings, *answer_201)
    step = {**step_view(1, "register_order", "ORD-1:register_order"), "last_seq": 2, "state": "unknown",
            "error": {"class": "timeout", "message": "read timed out"}}
    api.validate({"applied": False, "step": step}, *SCHEMAS, "StepEventAnswer")
    for status, slug in [(401, "invalid-token"), (401, "token-missing"), (404, "not-found"),
                         (409, "idempotency-key-mismatch"), (409, "idempotency-key-in-flight"),
                         (409, "process-id-exists"), (409, "idempotency-key-taken"), (429, "rate-limited")]:
        api.validate(problem(status, slug, "detail"), *SCHEMAS, "ProblemBody")
    api.validate(problem(422, "validation", "bad", errors=[{"field": "steps", "message": "bad"}]),
                 *SCHEMAS, "ProblemBody")


def _resolve(api: OpenApi, node: Any) -> Any:
    while isinstance(node, dict) and "$ref" in node and node["$ref"].startswith("#/"):
        target: Any = api.wire
        for part in node["$ref"][2:].split("/"):
            target = target[part.replace("~1", "/").replace("~0", "~")]
        node = target
    return node


def _check_rerun_call_schema(api: OpenApi, parts: tuple[str, ...]) -> None:
    for body in (call_body(), call_body("rt_1", "rerun.test")):
        api.validate(body, *parts)
    schema = _resolve(api, _node(api, parts))
    fields = {f.name for f in dataclasses.fields(Rerun)}
    documented = set((schema or {}).get("properties", {})) - {"type"}
    assert documented <= fields, f"RerunCall fields the kit's Rerun lacks: {sorted(documented - fields)}"


def _node(api: OpenApi, parts: tuple[str, ...]) -> Any:
    node: Any = api.wire
    for p in parts:
        node = node[p]
    return node


def test_rerun_call_matches_the_webhook_in_the_document(api: OpenApi) -> None:
    hook = api.rerun_webhook()
    assert hook is not None, "`webhooks` has no POST operation"
    parts = (*hook, "requestBody", "content", "application/json", "schema")
    assert api.has(*parts), f"{'/'.join(hook)} has no application/json request schema"
    _check_rerun_call_schema(api, parts)
    responses = _node(api, (*hook,)).get("responses", {})
    for code, outcome in [("200", {"outcome": "done"}), ("200", {"outcome": "duplicate"}), ("200", {"outcome": "test"}),
                          ("401", {"outcome": "refused", "detail": "signature refused"}),
                          ("500", {"outcome": "failed", "detail": "boom"})]:
        answer_schema = (*hook, "responses", code, "content", "application/json", "schema")
        assert code in responses and api.has(*answer_schema), f"the webhook documents no answer for {code}"
        api.validate(outcome, *answer_schema)


def test_rerun_call_and_answer_components(api: OpenApi) -> None:
    _check_rerun_call_schema(api, (*SCHEMAS, "RerunCall"))
    for outcome in ({"outcome": "done"}, {"outcome": "duplicate"}, {"outcome": "test"},
                    {"outcome": "refused", "detail": "signature refused"}, {"outcome": "failed", "detail": "x"}):
        api.validate(outcome, *SCHEMAS, "RerunAnswer")


def test_every_warning_kind_has_advice_in_the_kit(api: OpenApi) -> None:
    from rerun_gate.client import _WARNING_ADVICE
    missing = set(api.doc["components"]["schemas"]["WarningKind"]["enum"]) - set(_WARNING_ADVICE)
    assert not missing, f"warning kinds the kit logs without specific advice: {sorted(missing)}"


# What the receiver answers: (status, outcome). The contract (contract.md, section 2) asks for all of them.
RECEIVER_ANSWERS = [(200, "done"), (200, "duplicate"), (200, "test"), (401, "refused"), (422, "refused"),
                    (500, "failed"), (503, "in_progress")]


def test_every_receiver_answer_is_documented(api: OpenApi) -> None:
    hook = api.rerun_webhook()
    assert hook is not None, "the document publishes the rerun call under `webhooks`"
    responses = _node(api, hook).get("responses", {})
    outcomes = set(_resolve(api, {"$ref": "#/components/schemas/RerunOutcome"}).get("enum", []))
    gaps = [f"status {status} not in the webhook's responses" for status in sorted({s for s, _ in RECEIVER_ANSWERS})
            if str(status) not in responses]
    gaps += [f"outcome {outcome!r} not in RerunOutcome" for _, outcome in RECEIVER_ANSWERS
             if outcome not in outcomes]
    assert not gaps, "the document does not describe every answer receivers give: " + "; ".join(gaps)
