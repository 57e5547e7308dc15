"""Client.register / Client.operation: keys, replay, the 409 kinds, retries with Retry-After."""

from __future__ import annotations

import json
import logging
from typing import Any, Callable

import httpx
import pytest

from conftest import FakeGate, Sleeps, operation_view, problem_response
from rerun_gate import (
    Client,
    IdempotencyKeyInFlight,
    IdempotencyKeyMismatch,
    IdempotencyKeyTaken,
    InvalidToken,
    NotFound,
    ProcessIdExists,
    RateLimited,
    RerunGateError,
    RerunGateUnreachable,
    ServerError,
    Step,
    TokenMissing,
    UnexpectedAnswer,
    ValidationFailed,
)

ORDER = {"amount": 4000, "currency": "JPY"}


def register(client: Client, pid: str = "ORD-1", **kwargs: Any) -> Any:
    return client.register(
        pid, "order-intake", "sales",
        [Step("register_order", content=kwargs.pop("order", ORDER)), Step("ai_summary", content={"order": pid})],
        business_key=f"ORDER-{pid}", **kwargs,
    )


def test_register_derives_the_keys_and_reads_the_answer(client: Client, gate: FakeGate, sleeps: Sleeps) -> None:
    reg = register(client)
    (request,) = gate.requests
    assert request.headers["idempotency-key"] == "register:order-intake:ORD-1"
    assert request.headers["authorization"] == "Bearer rg_test-token"
    body = json.loads(request.content)
    assert [s["idempotency_key"] for s in body["steps"]] == ["ORD-1:register_order", "ORD-1:ai_summary"]
    assert body["steps"][0]["content"] == ORDER
    assert body["business_key"] == "ORDER-ORD-1"
    assert reg.replayed is False and reg.warnings == []
    assert reg.process_id == "ORD-1" and reg.status == "running" and reg.business_key == "ORDER-ORD-1"
    assert [s.name for s in reg.steps] == ["register_order", "ai_summary"]
    assert reg.step("ai_summary").idempotency_key == "ORD-1:ai_summary"
    assert sleeps.delays == []


def test_explicit_keys_are_sent_as_given(client: Client, gate: FakeGate) -> None:
    client.register("ORD-2", "order-intake", "sales",
                    [Step("register_order", "custom-order-key"), "ai_summary"], idempotency_key="my-reg-key")
    body = json.loads(gate.requests[0].content)
    assert gate.requests[0].headers["idempotency-key"] == "my-reg-key"
    assert [s["idempotency_key"] for s in body["steps"]] == ["custom-order-key", "ORD-2:ai_summary"]
    assert "content" not in body["steps"][0] and "content" not in body and "business_key" not in body


def test_a_lost_answer_is_retried_with_the_same_key_and_replayed(client: Client, gate: FakeGate,
                                                                  sleeps: Sleeps) -> None:
    gate.fail_next("lose", method="POST", path="/operations$")
    reg = register(client)
    first, second = gate.requests
    assert first.headers["idempotency-key"] == second.headers["idempotency-key"] == "register:order-intake:ORD-1"
    assert first.content == second.content
    assert reg.replayed is True
    assert len(sleeps.delays) == 1


def test_registering_again_is_a_replay_not_an_error(client: Client) -> None:
    assert register(client).replayed is False
    assert register(client).replayed is True


def test_retry_after_is_honoured(make_client: Callable[..., Client], gate: FakeGate, sleeps: Sleeps) -> None:
    client = make_client(backoff=0.01)
    gate.fail_next(problem_response(429, "rate-limited", "over the rate", headers={"retry-after": "7"}))
    gate.fail_next(httpx.Response(503, text="maintenance", headers={"retry-after": "2"}))
    gate.fail_next(httpx.Response(502, text="bad gateway"))
    gate.fail_next(httpx.Response(504, text="gateway timeout"))
    reg = register(client)
    assert reg.replayed is False
    assert len(gate.requests) == 5
    assert sleeps.delays[0] >= 7 and sleeps.delays[1] >= 2
    assert all(0 < d <= 0.08 for d in sleeps.delays[2:]), sleeps.delays


def test_backoff_grows_with_jitter_and_is_capped(make_client: Callable[..., Client], gate: FakeGate,
                                                  sleeps: Sleeps) -> None:
    client = make_client(retries=6, backoff=1.0, max_backoff=4.0)
    for _ in range(6):
        gate.fail_next(httpx.ConnectError("connection refused"))
    register(client)
    bounds = [(0.5, 1.0), (1.0, 2.0), (2.0, 4.0), (2.0, 4.0), (2.0, 4.0), (2.0, 4.0)]
    assert len(sleeps.delays) == 6
    for d, (lo, hi) in zip(sleeps.delays, bounds):
        assert lo <= d <= hi, sleeps.delays


def test_rate_limited_after_all_retries(make_client: Callable[..., Client], gate: FakeGate, sleeps: Sleeps) -> None:
    client = make_client(retries=2)
    for _ in range(3):
        gate.fail_next(problem_response(429, "rate-limited", "over the rate", headers={"retry-after": "3"}))
    with pytest.raises(RateLimited) as info:
        register(client)
    assert info.value.retry_after == 3 and info.value.status == 429
    assert len(gate.requests) == 3 and len(sleeps.delays) == 2
    assert "What to do" in str(info.value)


@pytest.mark.parametrize("error", [
    httpx.ConnectError("connection refused"),
    httpx.ReadTimeout("timed out"),
    httpx.RemoteProtocolError("Server disconnected without sending a response."),
    httpx.ReadError("connection reset"),
])
def test_network_errors_are_retried_then_unreachable(make_client: Callable[..., Client], gate: FakeGate,
                                                      sleeps: Sleeps, error: Exception) -> None:
    client = make_client(retries=3)
    for _ in range(4):
        gate.fail_next(error)
    with pytest.raises(RerunGateUnreachable) as info:
        register(client)
    assert len(gate.requests) == 4 and len(sleeps.delays) == 3
    assert info.value.status is None and isinstance(info.value.__cause__, type(error))


def test_a_broken_answer_is_retried(client: Client, gate: FakeGate, sleeps: Sleeps) -> None:
    gate.fail_next("garbage", method="POST")
    reg = register(client)
    assert reg.replayed is True and len(gate.requests) == 2


def test_a_correction_under_the_same_key_is_a_mismatch(client: Client, gate: FakeGate) -> None:
    register(client)
    with pytest.raises(IdempotencyKeyMismatch) as info:
        register(client, order={"amount": 5000, "currency": "JPY"})
    e = info.value
    assert (e.status, e.slug) == (409, "idempotency-key-mismatch")
    assert "different request body" in e.detail and "new process_id" in str(e)
    assert len(gate.requests) == 2


def test_process_id_under_another_key(client: Client, gate: FakeGate) -> None:
    register(client)
    with pytest.raises(ProcessIdExists) as info:
        register(client, idempotency_key="another-key")
    assert info.value.slug == "process-id-exists" and len(gate.requests) == 2


@pytest.mark.parametrize("slug, cls", [
    ("idempotency-key-in-flight", IdempotencyKeyInFlight),
    ("idempotency-key-taken", IdempotencyKeyTaken),
    ("idempotency-key-mismatch", IdempotencyKeyMismatch),
    ("process-id-exists", ProcessIdExists),
])
def test_409_kinds_are_typed_and_never_retried(client: Client, gate: FakeGate, sleeps: Sleeps, slug: str,
                                               cls: type[RerunGateError]) -> None:
    gate.fail_next(problem_response(409, slug, f"the {slug} detail"))
    with pytest.raises(cls) as info:
        register(client)
    assert (info.value.status, info.value.slug, info.value.detail) == (409, slug, f"the {slug} detail")
    assert "What to do:" in str(info.value)
    assert len(gate.requests) == 1 and sleeps.delays == []


def test_token_missing_and_invalid(make_client: Callable[..., Client], gate: FakeGate) -> None:
    with pytest.raises(InvalidToken) as info:
        register(make_client(token="rg_wrong"))
    assert info.value.slug == "invalid-token" and "server token create" in str(info.value)
    with pytest.raises(TokenMissing):
        register(make_client(token=""))
    assert len(gate.requests) == 2


def test_validation_failed_lists_the_fields(client: Client) -> None:
    with pytest.raises(ValidationFailed) as info:
        client.register("ORD-3", "order-intake", "sales", [Step("register_order")])
    e = info.value
    assert e.status == 422 and e.errors and e.errors[0].field == "steps"


def test_not_found_and_server_error_are_not_retried(client: Client, gate: FakeGate, sleeps: Sleeps) -> None:
    with pytest.raises(NotFound):
        client.operation("NOPE")
    gate.fail_next(problem_response(500, "internal", "boom"))
    with pytest.raises(ServerError):
        register(client)
    assert len(gate.requests) == 2 and sleeps.delays == []


def test_warnings_are_returned_and_logged_with_what_to_do(client: Client, gate: FakeGate,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    answer = operation_view("ORD-4")
    answer["warnings"] = [{"kind": "step_content_missing", "step": "register_order",
                           "message": "register_order calls a system that compares fields, but has no content"}]
    gate.fail_next(httpx.Response(201, json=answer))
    with caplog.at_level(logging.WARNING, logger="rerun_gate"):
        reg = client.register("ORD-4", "order-intake", "sales", ["register_order", "ai_summary"])
    assert [(w.kind, w.step) for w in reg.warnings] == [("step_content_missing", "register_order")]
    (record,) = [r for r in caplog.records if "warns" in r.getMessage()]
    assert record.levelno == logging.WARNING
    assert "step_content_missing" in record.getMessage() and "content=" in record.getMessage()


def test_operation_reads_the_view(client: Client) -> None:
    register(client)
    op = client.operation("ORD-1")
    assert op.process_id == "ORD-1" and op.step("register_order").last_seq is None
    with pytest.raises(KeyError, match="its steps are register_order, ai_summary"):
        op.step("nope")


def test_an_answer_of_the_wrong_shape_is_unexpected(client: Client, gate: FakeGate) -> None:
    gate.fail_next(httpx.Response(200, json={"process_id": "ORD-1"}), method="GET")
    gate.schema_errors.clear()
    with pytest.raises(UnexpectedAnswer):
        client.operation("ORD-1")
    gate.schema_errors.clear()  # the canned answer is deliberately not an OperationView
