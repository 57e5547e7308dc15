"""The step helper: events, seq across a restart, the server's seq floor, unknown vs failed, heartbeats, stale
seq, completed steps (StepAlreadyCompleted, run_step) and the mark a reported exception carries."""

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
    ReportedOutcome,
    RerunGateError,
    RerunGateUnreachable,
    StaleSeq,
    Step,
    StepAlreadyCompleted,
    StepFailed,
    StepRun,
    Usage,
    classify_exception,
    reported_outcome,
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
    with pytest.raises(StepFailed):
        with first.step(PID, "register_order"):
            raise StepFailed("unavailable", "the order system was down")
    # "restart": a new client, a new FileStore object on the same file
    second = make_client(store=FileStore(tmp_path / "state.sqlite"))
    with second.step(PID, "register_order") as step:
        step.succeeded("order-1")
    assert kinds(gate) == [("started", 1, None, None), ("failed", 2, None, "unavailable"),
                           ("started", 3, None, None), ("succeeded", 4, "order-1", None)]
    # each start reads the operation once (the server's seq floor, the completion flag); the final events do not
    gets = [r for r in gate.requests if r.method == "GET"]
    assert len(gets) == 2


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


def test_a_store_behind_the_server_is_overtaken_with_one_warning(make_client: Callable[..., Client], gate: FakeGate,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    store = MemoryStore()
    client = registered(make_client(store=store))
    store.remember(PID, "register_order", 3)  # e.g. restored from an old backup
    gate.step(PID, "register_order")["last_seq"] = 9
    with caplog.at_level(logging.WARNING, logger="rerun_gate"):
        with client.step(PID, "register_order") as step:  # no StaleSeq: the server's seq is the floor
            step.succeeded("o")
    assert kinds(gate) == [("started", 10, None, None), ("succeeded", 11, "o", None)]
    warnings = [r.getMessage() for r in caplog.records if "had seq 3 but Rerun Gate has 9" in r.getMessage()]
    assert len(warnings) == 1 and "continuing from 10" in warnings[0] and "same FileStore" in warnings[0]
    assert store.current_seq(PID, "register_order") == 11


def test_next_seq_always_takes_the_server_floor(make_client: Callable[..., Client], gate: FakeGate) -> None:
    store = MemoryStore()
    client = registered(make_client(store=store))
    store.remember(PID, "register_order", 2)
    gate.step(PID, "register_order")["last_seq"] = 5
    assert client.next_seq(PID, "register_order") == 6
    store.remember(PID, "register_order", 20)  # a store ahead of the server (events lost in flight) wins
    assert client.next_seq(PID, "register_order") == 21


def test_stale_seq_is_raised_for_a_race_with_another_writer(make_client: Callable[..., Client], gate: FakeGate,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    store = MemoryStore()
    client = registered(make_client(store=store))
    # The read shows last_seq 3; another writer reports seq 9 before our `started` (seq 4) arrives.
    seen = json.loads(json.dumps(gate.operations[PID]))
    next(s for s in seen["steps"] if s["name"] == "register_order")["last_seq"] = 3
    gate.fail_next(httpx.Response(200, json=seen), method="GET")
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


# -- a completed step is not run again --------------------------------------------------------------------------

def completed(client: Client, gate: FakeGate, result_id: str = "order-1") -> None:
    with client.step(PID, "register_order") as step:
        step.succeeded(result_id)
    assert gate.step(PID, "register_order")["completed_at"] is not None


def test_entering_a_completed_step_raises_step_already_completed(client: Client, gate: FakeGate) -> None:
    registered(client)
    completed(client, gate)
    sent = len(gate.events(PID))
    ran = False
    with pytest.raises(StepAlreadyCompleted) as info:
        with client.step(PID, "register_order"):
            ran = True
    assert ran is False and len(gate.events(PID)) == sent  # nothing run, nothing sent
    e = info.value
    assert isinstance(e, RerunGateError)
    assert (e.result_id, e.process_id, e.step) == ("order-1", PID, "register_order") and e.completed_at
    assert "run_step" in str(e) and "rerun handlers" in str(e)


def test_a_step_completed_meanwhile_is_refused_at_started(client: Client, gate: FakeGate) -> None:
    registered(client)
    before = json.loads(json.dumps(gate.operations[PID]))  # read before the step was completed elsewhere
    completed(client, gate)
    gate.fail_next(httpx.Response(200, json=before), method="GET")
    ran = False
    with pytest.raises(StepAlreadyCompleted) as info:
        with client.step(PID, "register_order"):
            ran = True
    assert ran is False and info.value.result_id == "order-1"
    # `started` was sent (seq 3) and refused: Rerun Gate never undoes a confirmed success
    assert kinds(gate)[-1] == ("started", 3, None, None)
    assert gate.step(PID, "register_order")["state"] == "succeeded"


def test_run_step_runs_and_reports_the_returned_result_id(client: Client, gate: FakeGate) -> None:
    registered(client)
    keys: list[str] = []

    def place(step: StepRun) -> str:
        keys.append(step.idempotency_key)
        return "order-42"

    assert client.run_step(PID, "register_order", place, heartbeat_every=None) == "order-42"
    assert keys == [f"{PID}:register_order"]
    assert kinds(gate) == [("started", 1, None, None), ("succeeded", 2, "order-42", None)]
    assert len([r for r in gate.requests if r.method == "GET"]) == 1  # one read, reused for the start


def test_run_step_skips_a_completed_step_and_returns_its_result_id(client: Client, gate: FakeGate,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    registered(client)
    completed(client, gate, "order-1")
    sent = len(gate.events(PID))
    calls: list[StepRun] = []

    def never(step: StepRun) -> str:
        calls.append(step)
        return "never"

    with caplog.at_level(logging.WARNING, logger="rerun_gate"):
        result = client.run_step(PID, "register_order", never)
    assert result == "order-1" and calls == [] and len(gate.events(PID)) == sent
    assert any("already completed" in r.getMessage() and "not running it again" in r.getMessage()
               for r in caplog.records)


def test_run_step_when_the_step_completes_between_the_read_and_started(client: Client, gate: FakeGate) -> None:
    registered(client)
    before = json.loads(json.dumps(gate.operations[PID]))
    completed(client, gate, "order-1")
    gate.fail_next(httpx.Response(200, json=before), method="GET")
    calls: list[StepRun] = []

    def never(step: StepRun) -> str:
        calls.append(step)
        return "never"

    assert client.run_step(PID, "register_order", never) == "order-1"
    assert calls == []


def test_a_rerun_delivered_again_runs_only_the_step_not_completed(client: Client, gate: FakeGate) -> None:
    """First delivery: register_order succeeds, ai_summary fails. The same rerun again: only ai_summary runs."""
    registered(client)
    ran: list[str] = []

    def work(step: StepRun) -> str:
        ran.append(step.name)
        if step.name == "ai_summary" and ran.count("ai_summary") == 1:
            raise httpx.ConnectError("the AI service refused the connection")
        return f"{step.name}-id"

    def deliver() -> list[str | None]:
        return [client.run_step(PID, name, work, heartbeat_every=None) for name in ("register_order", "ai_summary")]

    with pytest.raises(httpx.ConnectError):
        deliver()
    assert gate.step(PID, "ai_summary")["state"] == "failed"
    assert deliver() == ["register_order-id", "ai_summary-id"]
    assert ran == ["register_order", "ai_summary", "ai_summary"]  # register_order ran once
    assert [e["type"] for e in gate.events(PID, "register_order")] == ["started", "succeeded"]


def test_run_step_when_fn_reports_itself(client: Client, gate: FakeGate) -> None:
    registered(client)

    def fn(step: StepRun) -> None:
        step.succeeded("order-7")

    assert client.run_step(PID, "register_order", fn, heartbeat_every=None) == "order-7"
    assert kinds(gate) == [("started", 1, None, None), ("succeeded", 2, "order-7", None)]


def test_run_step_reports_an_exception_and_marks_it(client: Client, gate: FakeGate) -> None:
    registered(client)

    def fn(step: StepRun) -> str:
        raise httpx.ReadTimeout("read timed out")

    with pytest.raises(httpx.ReadTimeout) as info:
        client.run_step(PID, "ai_summary", fn, heartbeat_every=None)
    assert reported_outcome(info.value) == ReportedOutcome(PID, "ai_summary", "unknown", "timeout",
                                                           "ReadTimeout: read timed out")
    assert gate.step(PID, "ai_summary")["state"] == "unknown"


# -- the mark on a reported exception (what the rerun receiver reads) -------------------------------------------

def test_a_reported_exception_carries_what_was_reported(client: Client) -> None:
    registered(client)
    with pytest.raises(StepFailed) as info:
        with client.step(PID, "register_order"):
            raise StepFailed("validation", "the order system refused the amount")
    mark = reported_outcome(info.value)
    assert mark == ReportedOutcome(PID, "register_order", "failed", "validation", "the order system refused the amount")
    assert mark.detail() == ("register_order: reported failed (validation): the order system refused the amount; "
                             "Rerun Gate shows the stall, nothing is resent")


def test_an_outcome_reported_before_the_block_raised_marks_the_exception(client: Client) -> None:
    registered(client)
    with pytest.raises(RuntimeError) as info:
        with client.step(PID, "ai_summary") as step:
            step.unknown("no_response", "the answer was cut off")
            raise RuntimeError("giving up")
    mark = reported_outcome(info.value)
    assert mark is not None and (mark.outcome, mark.error_class) == ("unknown", "no_response")


def test_an_exception_whose_report_was_not_sent_is_not_marked(make_client: Callable[..., Client],
                                                              gate: FakeGate) -> None:
    client = registered(make_client(retries=0))
    with pytest.raises(OutcomeUnknown) as info:
        with client.step(PID, "register_order", heartbeat_every=None):
            gate.fail_next(httpx.ConnectError("refused"), path="/events$")
            raise OutcomeUnknown("the order id never came back")
    assert reported_outcome(info.value) is None
    assert gate.step(PID, "register_order")["state"] == "started"


def test_an_exception_after_succeeded_or_outside_a_step_is_not_marked(client: Client) -> None:
    registered(client)
    with pytest.raises(RuntimeError) as info:
        with client.step(PID, "register_order") as step:
            step.succeeded("order-5")
            raise RuntimeError("local bookkeeping broke")
    assert reported_outcome(info.value) is None
    assert reported_outcome(StepFailed("validation", "raised outside any step")) is None


def test_the_default_timeout_is_10_seconds() -> None:
    client = Client("http://gate.test", "rg_x")
    try:
        assert client._http.timeout == httpx.Timeout(10.0)
    finally:
        client.close()
