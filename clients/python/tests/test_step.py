"""The step helper: events, seq across a restart, unknown vs failed, heartbeats, stale seq."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any, Callable

import httpx
import pytest

from conftest import FakeGate, Sleeps
from rerun_gate import (
    Client,
    FileStore,
    MemoryStore,
    OutcomeUnknown,
    RerunGateUnreachable,
    StaleSeq,
    Step,
    StepFailed,
    Usage,
    classify_exception,
)

PID = "ORD-7"


def registered(client: Client, pid: str = PID) -> Client:
    client.register(pid, "order-intake", "sales",
                    [Step("register_order", content={"amount": 4000, "currency": "JPY"}),
                     Step("ai_summary", content={"order": pid})])
    return client


def kinds(gate: FakeGate, step: str = "register_order") -> list[tuple[Any, ...]]:
    return [(e["type"], e["seq"], e.get("result_id"), (e.get("error") or {}).get("class"))
            for e in gate.events(PID, step) if e["type"] != "heartbeat"]


def test_started_then_succeeded_with_the_result_id(client: Client, gate: FakeGate) -> None:
    registered(client)
    with client.step(PID, "register_order") as step:
        assert step.idempotency_key == f"{PID}:register_order"  # the key Rerun Gate holds
        assert gate.step(PID, "register_order")["state"] == "started"
        step.succeeded("order-77")
        assert gate.step(PID, "register_order")["state"] == "succeeded"  # reported at once
    assert kinds(gate) == [("started", 1, None, None), ("succeeded", 2, "order-77", None)]
    assert step.outcome == "succeeded" and step.seq == 2
    assert gate.step(PID, "register_order")["result_id"] == "order-77"


def test_the_result_id_attribute_idiom(client: Client, gate: FakeGate) -> None:
    registered(client)
    with client.step(PID, "ai_summary") as step:
        step.result_id = "resp_1"
        step.usage = Usage(input_tokens=120, output_tokens=30)
    events = gate.events(PID, "ai_summary")
    assert [(e["type"], e.get("result_id")) for e in events] == [("started", None), ("succeeded", "resp_1")]
    assert events[1]["usage"] == {"input_tokens": 120, "output_tokens": 30}


def test_a_block_without_result_id_is_succeeded_with_a_warning(client: Client, gate: FakeGate,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    registered(client)
    with caplog.at_level(logging.WARNING, logger="rerun_gate"):
        with client.step(PID, "register_order"):
            pass
    assert kinds(gate) == [("started", 1, None, None), ("succeeded", 2, None, None)]
    assert any("step.succeeded(" in r.getMessage() for r in caplog.records)


def test_seq_survives_a_restart_with_the_same_file_store(make_client: Callable[..., Client], gate: FakeGate,
                                                         tmp_path: Path) -> None:
    first = registered(make_client(store=FileStore(tmp_path / "state.sqlite")))
    with first.step(PID, "register_order") as step:
        step.succeeded("order-1")
    # "restart": a new client, a new FileStore object on the same file
    second = make_client(store=FileStore(tmp_path / "state.sqlite"))
    with second.step(PID, "register_order") as step:
        step.succeeded("order-1")
    assert kinds(gate) == [("started", 1, None, None), ("succeeded", 2, "order-1", None),
                           ("started", 3, None, None), ("succeeded", 4, "order-1", None)]
    # the second client never needed to ask the server for last_seq
    gets = [r for r in gate.requests if r.method == "GET"]
    assert len(gets) == 1


def test_with_nothing_stored_the_server_last_seq_is_the_floor(make_client: Callable[..., Client],
                                                               gate: FakeGate) -> None:
    registered(make_client())
    gate.step(PID, "register_order")["last_seq"] = 41  # e.g. another store file, now lost
    fresh = make_client(store=MemoryStore())
    with fresh.step(PID, "register_order") as step:
        step.succeeded("x")
    assert kinds(gate) == [("started", 42, None, None), ("succeeded", 43, "x", None)]


def test_the_seq_is_stored_before_the_event_is_sent(make_client: Callable[..., Client], gate: FakeGate,
                                                    tmp_path: Path) -> None:
    store = FileStore(tmp_path / "s.sqlite")
    client = registered(make_client(store=store, retries=0))
    gate.fail_next(httpx.ConnectError("refused"), path="/events$")
    ran = False
    with pytest.raises(RerunGateUnreachable):
        with client.step(PID, "register_order"):
            ran = True  # never: the work does not start unless `started` is recorded
    assert ran is False
    assert store.current_seq(PID, "register_order") == 1  # consumed even though it never arrived
    with make_client(store=FileStore(tmp_path / "s.sqlite")).step(PID, "register_order") as step:
        step.succeeded("o")
    assert kinds(gate) == [("started", 1, None, None), ("started", 2, None, None), ("succeeded", 3, "o", None)]


def test_a_lost_event_answer_resent_with_the_same_seq_is_success(client: Client, gate: FakeGate,
                                                                  sleeps: Sleeps) -> None:
    registered(client)
    gate.fail_next("lose", path="/events$")  # `started` is applied, its answer lost
    with client.step(PID, "register_order") as step:
        gate.fail_next("lose", path="/events$")  # `succeeded` too
        step.succeeded("order-9")
    assert kinds(gate) == [("started", 1, None, None), ("started", 1, None, None),
                           ("succeeded", 2, "order-9", None), ("succeeded", 2, "order-9", None)]
    assert step.answer is not None and step.answer.applied is False and step.answer.accepted is True
    assert len(sleeps.delays) == 2


def test_stale_seq_raises_says_what_to_do_and_moves_the_store(make_client: Callable[..., Client], gate: FakeGate,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    store = MemoryStore()
    client = registered(make_client(store=store))
    store.remember(PID, "register_order", 3)
    gate.step(PID, "register_order")["last_seq"] = 9
    ran = False
    with caplog.at_level(logging.ERROR, logger="rerun_gate"), pytest.raises(StaleSeq) as info:
        with client.step(PID, "register_order"):
            ran = True
    assert ran is False
    e = info.value
    assert (e.seq, e.server_seq) == (4, 9)
    assert "seq store is behind" in str(e) and "same FileStore" in str(e)
    assert any("seq store is behind" in r.getMessage() for r in caplog.records)
    assert store.current_seq(PID, "register_order") == 9
    with client.step(PID, "register_order") as step:
        step.succeeded("o")
    assert kinds(gate)[-2:] == [("started", 10, None, None), ("succeeded", 11, "o", None)]


@pytest.mark.parametrize("error, expected", [
    (httpx.ReadTimeout("read timed out"), ("unknown", "timeout")),
    (httpx.WriteTimeout("write timed out"), ("unknown", "timeout")),
    (httpx.RemoteProtocolError("Server disconnected without sending a response."), ("unknown", "no_response")),
    (httpx.ReadError("connection reset by peer"), ("unknown", "no_response")),
    (json.JSONDecodeError("Expecting value", "{", 1), ("unknown", "no_response")),
    (OutcomeUnknown("the order id never came back"), ("unknown", "result_unknown")),
    (OutcomeUnknown("still generating", "in_progress"), ("unknown", "in_progress")),
    (httpx.ConnectError("connection refused"), ("failed", "unavailable")),
    (httpx.ConnectTimeout("connect timed out"), ("failed", "unavailable")),
    (StepFailed("validation", "the order system refused the amount"), ("failed", "validation")),
    (ValueError("a bug"), ("failed", "other")),
])
def test_unknown_vs_failed(client: Client, gate: FakeGate, error: Exception, expected: tuple[str, str]) -> None:
    registered(client)
    with pytest.raises(type(error)):
        with client.step(PID, "register_order"):
            raise error
    (started, final) = [e for e in gate.events(PID, "register_order") if e["type"] != "heartbeat"]
    assert started["type"] == "started"
    assert (final["type"], final["error"]["class"]) == expected
    assert final["seq"] == started["seq"] + 1 and final["error"]["message"]
    assert gate.step(PID, "register_order")["state"] == expected[0]


@pytest.mark.parametrize("status, expected", [
    (401, ("failed", "auth_expired")), (403, ("failed", "unauthorized")), (429, ("failed", "rate_limited")),
    (500, ("failed", "server_error")), (503, ("failed", "unavailable")), (504, ("unknown", "timeout")),
    (400, ("failed", "validation")), (409, ("failed", "validation")),
])
def test_http_status_errors_of_the_outside_system(status: int, expected: tuple[str, str]) -> None:
    request = httpx.Request("POST", "http://outside.test/orders")
    error = httpx.HTTPStatusError("x", request=request, response=httpx.Response(status, request=request))
    assert classify_exception(error) == expected


def test_step_failed_refuses_an_unknown_class() -> None:
    with pytest.raises(ValueError, match="auth_expired"):
        StepFailed("Timeout", "not a wire class")


def test_succeeded_then_an_exception_keeps_succeeded(client: Client, gate: FakeGate) -> None:
    registered(client)
    with pytest.raises(RuntimeError, match="local bookkeeping"):
        with client.step(PID, "register_order") as step:
            step.succeeded("order-5")
            raise RuntimeError("local bookkeeping broke after the order was placed")
    assert kinds(gate) == [("started", 1, None, None), ("succeeded", 2, "order-5", None)]


def test_keyboard_interrupt_is_not_reported(client: Client, gate: FakeGate) -> None:
    registered(client)
    with pytest.raises(KeyboardInterrupt):
        with client.step(PID, "register_order", heartbeat_every=0.01):
            raise KeyboardInterrupt
    assert kinds(gate) == [("started", 1, None, None)]


def test_reporting_twice_is_refused(client: Client) -> None:
    registered(client)
    with pytest.raises(RuntimeError, match="already reported succeeded"):
        with client.step(PID, "register_order") as step:
            step.succeeded("a")
            step.succeeded("b")


def test_heartbeats_use_the_current_seq_and_stop_with_the_step(client: Client, gate: FakeGate) -> None:
    registered(client)
    with client.step(PID, "register_order", heartbeat_every=0.02) as step:
        deadline = time.monotonic() + 5
        while gate.heartbeats < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        step.succeeded("order-1")
        after = gate.heartbeats
        time.sleep(0.1)
    assert gate.heartbeats >= 3 and gate.heartbeats == after  # none after the final event
    events = gate.events(PID, "register_order")
    heartbeats = [e for e in events if e["type"] == "heartbeat"]
    assert heartbeats and all(e["seq"] == 1 for e in heartbeats)  # the started seq, never a new number
    assert [e["type"] for e in events][-1] == "succeeded" and events[-1]["seq"] == 2


def test_a_lost_heartbeat_is_not_fatal(client: Client, gate: FakeGate, caplog: pytest.LogCaptureFixture) -> None:
    registered(client)
    with caplog.at_level(logging.WARNING, logger="rerun_gate"):
        with client.step(PID, "register_order", heartbeat_every=0.02) as step:
            for _ in range(2):  # heartbeat_retries=1: both attempts of the next heartbeat fail
                gate.fail_next(httpx.ConnectError("refused"), path="/events$")
            deadline = time.monotonic() + 5
            while gate.heartbeats < 2 and time.monotonic() < deadline:
                time.sleep(0.01)
            step.succeeded("o")
    assert any("heartbeat for step register_order" in r.getMessage() for r in caplog.records)
    assert kinds(gate)[-1] == ("succeeded", 2, "o", None)


def test_an_unknown_step_is_refused_by_the_server(client: Client, gate: FakeGate) -> None:
    registered(client)
    from rerun_gate import ValidationFailed
    with pytest.raises(ValidationFailed, match="its steps are register_order, ai_summary"):
        with client.step(PID, "nope"):
            pass


def test_report_with_an_explicit_time(client: Client, gate: FakeGate) -> None:
    from datetime import datetime, timezone
    registered(client)
    answer = client.report(PID, "register_order", "started", seq=1,
                           at=datetime(2026, 12, 5, 10, 0, tzinfo=timezone.utc))
    assert answer.applied and gate.events(PID)[0]["at"] == "2026-12-05T10:00:00Z"
