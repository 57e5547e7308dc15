"""RerunReceiver: signatures, staleness, dedup, test calls, handler failures (reported ones end the delivery,
others are retried), WSGI and ASGI."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable

import httpx
import pytest
from standardwebhooks import Webhook

from _openapi import OpenApi
from conftest import FakeGate
from rerun_gate import (
    Client,
    FileStore,
    MemoryStore,
    OutcomeUnknown,
    Rerun,
    RerunReceiver,
    RerunStep,
    Reply,
    Step,
    StepAlreadyCompleted,
    StepFailed,
    StepRun,
)

SECRET = "whsec_YXBpLWZ1enotb25seS1yZXJ1bi1zaWduaW5nLTIwMjY="
OTHER_SECRET = "whsec_b3RoZXItc2VjcmV0LW5vdC10aGUtd29ya2Zsb3dzLTIwMjY="


def call_body(rerun_id: str = "rr_01", kind: str = "rerun.approved", **overrides: Any) -> dict[str, Any]:
    prefix = "test:" if kind == "rerun.test" else ""
    body: dict[str, Any] = {
        "type": kind, "rerun_id": rerun_id, "process_id": "ORD-1107", "workflow": "order-intake",
        "steps": [{"name": "ai_summary", "idempotency_key": f"{prefix}ORD-1107:ai_summary"}],
        "requested_by": "佐藤 花子", "approved_by": ["鈴木 一郎"], "requested_by_id": 3, "approved_by_ids": [5],
        "approved_at": "2026-12-05T10:00:00Z",
    }
    body.update(overrides)
    return body


def signed(body: dict[str, Any] | bytes, webhook_id: str = "rr_01", *, secret: str = SECRET,
           at: datetime | None = None) -> tuple[bytes, dict[str, str]]:
    raw = body if isinstance(body, bytes) else json.dumps(body, ensure_ascii=False).encode()
    at = at or datetime.now(timezone.utc)
    return raw, {
        "Webhook-Id": webhook_id,
        "Webhook-Timestamp": str(int(at.timestamp())),
        "Webhook-Signature": Webhook(secret).sign(webhook_id, at, raw),
        "Idempotency-Key": webhook_id,
        "Content-Type": "application/json",
    }


class Recorder:
    def __init__(self, fail: int = 0) -> None:
        self.calls: list[Rerun] = []
        self.fail = fail

    def __call__(self, rerun: Rerun) -> None:
        self.calls.append(rerun)
        if self.fail > 0:
            self.fail -= 1
            raise ConnectionError("the AI service is down")


def answer(reply: Reply) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(reply.body)
    return data


@pytest.fixture
def handler() -> Recorder:
    return Recorder()


@pytest.fixture
def replies(api: OpenApi) -> Any:
    """Every Reply a receiver gave in the test, checked against the document at teardown (not inside on_reply,
    whose exceptions the receiver logs and swallows)."""
    seen: list[Reply] = []
    yield seen
    for reply in seen:
        check_answer(api, reply)


@pytest.fixture
def receiver(handler: Recorder, replies: list[Reply]) -> RerunReceiver:
    return RerunReceiver(SECRET, handler, MemoryStore(), on_reply=replies.append)


def check_answer(api: OpenApi, reply: Reply) -> None:
    """Every answer is JSON with an outcome; valid against the webhook's answer schema for its status when the
    document has one (statuses the document gives no schema are reported by test_schema.py)."""
    data = answer(reply)
    assert reply.headers["content-type"] == "application/json"
    assert isinstance(data.get("outcome"), str)
    hook = api.rerun_webhook()
    if hook is not None:
        parts = (*hook, "responses", str(reply.status), "content", "application/json", "schema")
        if api.has(*parts):
            api.validate(data, *parts)
    elif api.has("components", "schemas", "RerunAnswer") and reply.status in (200, 401, 500):
        api.validate(data, "components", "schemas", "RerunAnswer")


def test_a_signed_call_runs_the_handler_with_only_the_listed_steps(receiver: RerunReceiver,
                                                                   handler: Recorder) -> None:
    reply = receiver.receive(*signed(call_body()))
    assert (reply.status, answer(reply)) == (200, {"outcome": "done"})
    (rerun,) = handler.calls
    assert rerun.steps == [RerunStep("ai_summary", "ORD-1107:ai_summary")]
    assert (rerun.rerun_id, rerun.process_id, rerun.workflow) == ("rr_01", "ORD-1107", "order-intake")
    assert (rerun.requested_by, rerun.requested_by_id) == ("佐藤 花子", 3)
    assert (rerun.approved_by, rerun.approved_by_ids, rerun.approved_at) == (["鈴木 一郎"], [5], "2026-12-05T10:00:00Z")
    assert rerun.webhook_id == "rr_01" and reply.webhook_id == "rr_01" and reply.steps == ["ai_summary"]


def test_a_repeat_is_a_duplicate_and_runs_nothing(receiver: RerunReceiver, handler: Recorder) -> None:
    receiver.receive(*signed(call_body()))
    reply = receiver.receive(*signed(call_body()))  # a new timestamp and signature, the same webhook-id
    assert (reply.status, answer(reply)) == (200, {"outcome": "duplicate"})
    assert len(handler.calls) == 1


def refused(reply: Reply) -> bool:
    return reply.status == 401 and answer(reply)["outcome"] == "refused" and bool(answer(reply)["detail"])


def test_unsigned_is_refused(receiver: RerunReceiver, handler: Recorder) -> None:
    raw = json.dumps(call_body()).encode()
    assert refused(receiver.receive(raw, {"content-type": "application/json"}))
    _, headers = signed(call_body())
    del headers["Webhook-Signature"]
    assert refused(receiver.receive(raw, headers))
    assert handler.calls == []


def test_a_wrong_secret_is_refused_and_the_log_says_what_to_check(receiver: RerunReceiver, handler: Recorder,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="rerun_gate"):
        assert refused(receiver.receive(*signed(call_body(), secret=OTHER_SECRET)))
    assert handler.calls == []
    text = " ".join(r.getMessage() for r in caplog.records)
    assert "signing_secret_env" in text and "RERUN_GATE_SIGNING_SECRET" in text


@pytest.mark.parametrize("signature", ["garbage", "v1,not-base64!", "v2,AAAA", ""])
def test_a_malformed_signature_header_is_refused(receiver: RerunReceiver, handler: Recorder, signature: str) -> None:
    raw, headers = signed(call_body())
    assert refused(receiver.receive(raw, {**headers, "Webhook-Signature": signature}))
    assert refused(receiver.receive(raw, {**headers, "Webhook-Timestamp": "yesterday"}))
    assert handler.calls == []


def test_a_tampered_body_is_refused(receiver: RerunReceiver, handler: Recorder) -> None:
    raw, headers = signed(call_body())
    tampered = raw.replace(b"ai_summary", b"register_order")
    assert refused(receiver.receive(tampered, headers))
    assert handler.calls == []


@pytest.mark.parametrize("offset", [timedelta(minutes=-6), timedelta(minutes=6)], ids=["stale", "future"])
def test_a_timestamp_outside_five_minutes_is_refused(receiver: RerunReceiver, handler: Recorder,
                                                     offset: timedelta) -> None:
    reply = receiver.receive(*signed(call_body(), at=datetime.now(timezone.utc) + offset))
    assert refused(reply) and "timestamp" in answer(reply)["detail"]
    assert handler.calls == []
    ok = receiver.receive(*signed(call_body(), at=datetime.now(timezone.utc) - timedelta(minutes=4)))
    assert ok.status == 200  # a refusal claims nothing


def test_a_test_call_is_verified_and_deduplicated_but_never_handled(receiver: RerunReceiver,
                                                                    handler: Recorder) -> None:
    body = call_body("rt_1", "rerun.test")
    reply = receiver.receive(*signed(body, "rt_1"))
    assert (reply.status, answer(reply)) == (200, {"outcome": "test"})
    again = receiver.receive(*signed(body, "rt_1"))
    assert (again.status, answer(again)) == (200, {"outcome": "duplicate"})
    assert refused(receiver.receive(*signed(body, "rt_2", secret=OTHER_SECRET)))
    assert handler.calls == []


@pytest.mark.parametrize("body", [
    call_body(type="rerun.cancelled"),
    call_body(steps="ai_summary"),
    call_body(steps=[{"name": "ai_summary"}]),
    call_body(process_id=""),
    call_body(approved_by_ids=["5"]),
    [1, 2, 3],
    b"not json at all",
], ids=["unknown type", "steps not a list", "step without key", "empty process_id", "ids not integers",
        "not an object", "not json"])
def test_a_signed_body_that_is_not_a_rerun_call_is_422(receiver: RerunReceiver, handler: Recorder,
                                                       body: Any) -> None:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    reply = receiver.receive(*signed(raw, "rr_bad"))
    assert reply.status == 422 and answer(reply)["outcome"] == "refused"
    assert handler.calls == []
    assert receiver.receive(*signed(call_body(), "rr_bad")).status == 200  # nothing was claimed


def test_a_failing_handler_releases_the_claim_so_the_retry_runs_it(replies: list[Reply]) -> None:
    handler = Recorder(fail=1)
    receiver = RerunReceiver(SECRET, handler, MemoryStore(), on_reply=replies.append)
    first = receiver.receive(*signed(call_body()))
    assert first.status == 500 and answer(first)["outcome"] == "failed"
    assert "ConnectionError" in answer(first)["detail"]
    retry = receiver.receive(*signed(call_body()))
    assert (retry.status, answer(retry)) == (200, {"outcome": "done"})
    assert [r.steps for r in handler.calls] == [[RerunStep("ai_summary", "ORD-1107:ai_summary")]] * 2
    assert answer(receiver.receive(*signed(call_body()))) == {"outcome": "duplicate"}


# -- rule: an outcome reported to Rerun Gate ends the delivery -------------------------------------------------

PID = "ORD-1107"


@pytest.fixture
def gate_client(make_client: Callable[..., Client]) -> Client:
    client: Client = make_client()
    client.register(PID, "order-intake", "sales",
                    [Step("register_order", content={"amount": 4000, "currency": "JPY"}),
                     Step("ai_summary", content={"order": PID})])
    return client


def step_handler(client: Client, work: Callable[[StepRun], str], calls: list[str | None]) -> Callable[[Rerun], None]:
    def handle(rerun: Rerun) -> None:
        calls.append(rerun.webhook_id)
        for s in rerun.steps:
            client.run_step(rerun.process_id, s.name, work, idempotency_key=s.idempotency_key, heartbeat_every=None)
    return handle


@pytest.mark.parametrize("error, outcome, detail", [
    (httpx.ReadTimeout("read timed out"), "unknown",
     "ai_summary: reported unknown (timeout): ReadTimeout: read timed out; Rerun Gate shows the stall, nothing is "
     "resent"),
    (OutcomeUnknown("the summary never came back"), "unknown",
     "ai_summary: reported unknown (result_unknown): the summary never came back; Rerun Gate shows the stall, "
     "nothing is resent"),
    (StepFailed("validation", "the AI service refused the prompt"), "failed",
     "ai_summary: reported failed (validation): the AI service refused the prompt; Rerun Gate shows the stall, "
     "nothing is resent"),
], ids=["unknown-timeout", "unknown-result", "failed-validation"])
def test_a_reported_outcome_ends_the_delivery_with_200(gate_client: Client, gate: FakeGate, replies: list[Reply],
                                                       error: Exception, outcome: str, detail: str,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    calls: list[str | None] = []

    def work(step: StepRun) -> str:
        raise error

    receiver = RerunReceiver(SECRET, step_handler(gate_client, work, calls), MemoryStore(),
                             on_reply=replies.append)
    with caplog.at_level(logging.WARNING, logger="rerun_gate.receiver"):
        reply = receiver.receive(*signed(call_body()))
    assert (reply.status, answer(reply)) == (200, {"outcome": "done", "detail": detail})
    assert gate.step(PID, "ai_summary")["state"] == outcome
    assert any("not resent" in r.getMessage() for r in caplog.records)
    # the webhook-id counts as handled: the dispatcher's retry (if any) is a duplicate, the step is not run again
    again = receiver.receive(*signed(call_body()))
    assert (again.status, answer(again)) == (200, {"outcome": "duplicate"})
    assert calls == ["rr_01"]
    assert [e["type"] for e in gate.events(PID, "ai_summary")] == ["started", outcome]


def test_an_exception_not_reported_releases_the_claim_and_answers_500(make_client: Callable[..., Client],
                                                                      gate: FakeGate, replies: list[Reply]) -> None:
    """The report itself could not be sent: Rerun Gate does not know, so the dispatcher must try again."""
    client = make_client(retries=0)
    client.register(PID, "order-intake", "sales", [Step("register_order"), Step("ai_summary")])
    calls: list[str | None] = []
    attempts: list[int] = []

    def work(step: StepRun) -> str:
        attempts.append(1)
        if len(attempts) == 1:
            gate.fail_next(httpx.ConnectError("Rerun Gate unreachable"), path="/events$")  # the `unknown` report
            raise httpx.ReadTimeout("read timed out")
        return "sum_1"

    receiver = RerunReceiver(SECRET, step_handler(client, work, calls), MemoryStore(),
                             on_reply=replies.append)
    first = receiver.receive(*signed(call_body()))
    assert first.status == 500 and answer(first)["outcome"] == "failed"
    assert answer(first)["detail"].startswith("ReadTimeout: read timed out")
    assert gate.step(PID, "ai_summary")["state"] == "started"  # the outcome never reached Rerun Gate
    retry = receiver.receive(*signed(call_body()))
    assert (retry.status, answer(retry)) == (200, {"outcome": "done"})
    assert gate.step(PID, "ai_summary")["result_id"] == "sum_1" and len(calls) == 2


def test_handler_code_failing_outside_a_step_answers_500(gate_client: Client, replies: list[Reply]) -> None:
    def handle(rerun: Rerun) -> None:
        raise StepFailed("validation", "raised by the handler itself, never reported")

    receiver = RerunReceiver(SECRET, handle, MemoryStore(), on_reply=replies.append)
    reply = receiver.receive(*signed(call_body()))
    assert reply.status == 500 and answer(reply)["outcome"] == "failed"
    assert receiver.receive(*signed(call_body())).status == 500  # released: tried again, fails again


def test_step_already_completed_leaving_the_handler_ends_the_delivery(gate_client: Client, gate: FakeGate,
                                                                      replies: list[Reply]) -> None:
    with gate_client.step(PID, "ai_summary") as step:
        step.succeeded("sum_1")
    ran: list[str] = []

    def handle(rerun: Rerun) -> None:  # the old idiom: a `with` block cannot skip a completed step
        for s in rerun.steps:
            with gate_client.step(rerun.process_id, s.name, idempotency_key=s.idempotency_key):
                ran.append(s.name)

    receiver = RerunReceiver(SECRET, handle, MemoryStore(), on_reply=replies.append)
    reply = receiver.receive(*signed(call_body()))
    assert reply.status == 200 and answer(reply)["outcome"] == "done"
    assert answer(reply)["detail"].startswith("ai_summary: already completed in Rerun Gate (result_id sum_1)")
    assert "run_step" in answer(reply)["detail"]
    assert ran == []
    assert answer(receiver.receive(*signed(call_body()))) == {"outcome": "duplicate"}


def test_step_already_completed_raised_by_hand_counts_as_reported(replies: list[Reply]) -> None:
    def handle(rerun: Rerun) -> None:
        raise StepAlreadyCompleted("sum_1", process_id=rerun.process_id, step="ai_summary")

    receiver = RerunReceiver(SECRET, handle, MemoryStore(), on_reply=replies.append)
    assert receiver.receive(*signed(call_body())).status == 200


def test_run_step_in_the_handler_skips_a_completed_step(gate_client: Client, gate: FakeGate,
                                                        replies: list[Reply]) -> None:
    """A rerun of both steps: register_order succeeded earlier, so only ai_summary runs."""
    with gate_client.step(PID, "register_order") as step:
        step.succeeded("ord_1")
    ran: list[str] = []

    def work(step: StepRun) -> str:
        ran.append(step.name)
        return "sum_1"

    calls: list[str | None] = []
    receiver = RerunReceiver(SECRET, step_handler(gate_client, work, calls), MemoryStore(),
                             on_reply=replies.append)
    body = call_body(steps=[{"name": "register_order", "idempotency_key": f"{PID}:register_order"},
                            {"name": "ai_summary", "idempotency_key": f"{PID}:ai_summary"}])
    reply = receiver.receive(*signed(body))
    assert (reply.status, answer(reply)) == (200, {"outcome": "done"})
    assert ran == ["ai_summary"]
    assert [e["type"] for e in gate.events(PID, "register_order")] == ["started", "succeeded"]


def test_a_repeat_while_the_first_runs_is_503_with_retry_after(tmp_path: Path, replies: list[Reply]) -> None:
    entered, release = threading.Event(), threading.Event()

    def slow(rerun: Rerun) -> None:
        entered.set()
        release.wait(5)

    receiver = RerunReceiver(SECRET, slow, FileStore(tmp_path / "r.sqlite"), on_reply=replies.append)
    replies: list[Reply] = []
    first = threading.Thread(target=lambda: replies.append(receiver.receive(*signed(call_body()))))
    first.start()
    assert entered.wait(5)
    busy = receiver.receive(*signed(call_body()))
    release.set()
    first.join(5)
    assert busy.status == 503 and busy.headers["retry-after"] == "5" and answer(busy)["outcome"] == "in_progress"
    assert replies[0].status == 200 and answer(replies[0]) == {"outcome": "done"}


def test_a_claim_left_by_a_dead_receiver_is_taken_over(tmp_path: Path, handler: Recorder) -> None:
    store = FileStore(tmp_path / "r.sqlite")
    assert store.claim("rr_01", 60) == "claimed"  # a receiver that died mid-handler
    receiver = RerunReceiver(SECRET, handler, store, claim_timeout=0.01)
    time.sleep(0.02)
    assert receiver.receive(*signed(call_body())).status == 200 and len(handler.calls) == 1


def test_the_file_store_deduplicates_across_receivers(tmp_path: Path, handler: Recorder) -> None:
    RerunReceiver(SECRET, handler, FileStore(tmp_path / "r.sqlite")).receive(*signed(call_body()))
    restarted = RerunReceiver(SECRET, handler, FileStore(tmp_path / "r.sqlite"))
    assert answer(restarted.receive(*signed(call_body()))) == {"outcome": "duplicate"}
    assert len(handler.calls) == 1


def test_an_empty_or_malformed_secret_is_refused_at_once(handler: Recorder) -> None:
    with pytest.raises(ValueError, match="signing_secret_env"):
        RerunReceiver("", handler, MemoryStore())
    with pytest.raises(ValueError, match="whsec_<base64>"):
        RerunReceiver("whsec_a", handler, MemoryStore())


# -- WSGI and ASGI --------------------------------------------------------------------------------------------

def wsgi_call(app: Any, method: str, path: str, body: bytes, headers: dict[str, str]) -> tuple[str, dict[str, str],
                                                                                               bytes]:
    environ: dict[str, Any] = {"REQUEST_METHOD": method, "PATH_INFO": path, "CONTENT_LENGTH": str(len(body)),
                               "wsgi.input": io.BytesIO(body)}
    for k, v in headers.items():
        if k.lower() == "content-type":
            environ["CONTENT_TYPE"] = v
        else:
            environ["HTTP_" + k.upper().replace("-", "_")] = v
    seen: dict[str, Any] = {}

    def start_response(status: str, response_headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        seen["status"], seen["headers"] = status, dict(response_headers)
        return lambda data: None

    out = b"".join(app(environ, start_response))
    return seen["status"], seen["headers"], out


def test_wsgi(handler: Recorder) -> None:
    receiver = RerunReceiver(SECRET, handler, MemoryStore(), path="/rerun")
    raw, headers = signed(call_body())
    status, h, out = wsgi_call(receiver.wsgi, "POST", "/rerun", raw, headers)
    assert status == "200 OK" and json.loads(out) == {"outcome": "done"} and h["content-length"] == str(len(out))
    status, _, out = wsgi_call(receiver.wsgi, "POST", "/rerun", raw, headers)
    assert json.loads(out) == {"outcome": "duplicate"}
    assert wsgi_call(receiver.wsgi, "POST", "/elsewhere", raw, headers)[0].startswith("404")
    assert wsgi_call(receiver.wsgi, "GET", "/rerun", b"", {})[0].startswith("405")
    status, _, _ = wsgi_call(receiver.wsgi, "POST", "/rerun", raw, {**headers, "Webhook-Id": "other"})
    assert status.startswith("401")
    assert len(handler.calls) == 1


def test_asgi(handler: Recorder) -> None:
    receiver = RerunReceiver(SECRET, handler, MemoryStore(), path="/rerun")
    raw, headers = signed(call_body())

    async def call(path: str, body: bytes) -> tuple[int, dict[str, str], bytes]:
        chunks = [{"type": "http.request", "body": body[:10], "more_body": True},
                  {"type": "http.request", "body": body[10:], "more_body": False}]
        sent: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            return chunks.pop(0)

        async def send(message: Any) -> None:
            sent.append(message)

        scope = {"type": "http", "method": "POST", "path": path,
                 "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()]}
        await receiver.asgi(scope, receive, send)
        start, body_msg = sent
        return start["status"], {k.decode(): v.decode() for k, v in start["headers"]}, body_msg["body"]

    async def lifespan() -> list[str]:
        inbox = [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]
        out: list[str] = []

        async def receive() -> dict[str, Any]:
            return inbox.pop(0)

        async def send(message: Any) -> None:
            out.append(message["type"])

        await receiver.asgi({"type": "lifespan"}, receive, send)
        return out

    status, h, out = asyncio.run(call("/rerun", raw))
    assert status == 200 and json.loads(out) == {"outcome": "done"} and h["content-type"] == "application/json"
    assert json.loads(asyncio.run(call("/rerun", raw))[2]) == {"outcome": "duplicate"}
    assert asyncio.run(call("/other", raw))[0] == 404
    assert asyncio.run(lifespan()) == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
    assert len(handler.calls) == 1
