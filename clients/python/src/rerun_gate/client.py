"""The ingestion API client (integration -> Rerun Gate) and the step helper."""

from __future__ import annotations

import email.utils
import json
import logging
import random
import threading
import time
from datetime import datetime, timezone
from types import TracebackType
from typing import Any, Callable, Literal, Mapping, Sequence
from urllib.parse import quote

import httpx

from ._version import __version__
from .errors import (
    ERROR_CLASSES,
    BadRequest,
    Conflict,
    IdempotencyKeyInFlight,
    IdempotencyKeyMismatch,
    IdempotencyKeyTaken,
    InvalidToken,
    NotFound,
    OutcomeUnknown,
    ProcessIdExists,
    REPORTED_ATTR,
    RateLimited,
    ReportedOutcome,
    RerunGateError,
    RerunGateUnreachable,
    ServerError,
    StaleSeq,
    StepAlreadyCompleted,
    StepFailed,
    TokenMissing,
    UnexpectedAnswer,
    ValidationFailed,
)
from .models import Operation, Registration, Step, StepEventAnswer, StepView, Usage
from .stores import MemoryStore, SeqStore

__all__ = ["Client", "StepRun", "classify_exception", "EVENT_TYPES"]

log = logging.getLogger("rerun_gate")

#: The step event types.
EVENT_TYPES: tuple[str, ...] = ("started", "succeeded", "failed", "unknown", "heartbeat")

#: Statuses retried (with backoff, honouring Retry-After): over the rate, and a gateway / the server not
#: available for now. Everything else is answered at once.
RETRY_STATUSES = frozenset({429, 502, 503, 504})

_CONFLICTS: dict[str, type[Conflict]] = {
    "idempotency-key-mismatch": IdempotencyKeyMismatch,
    "idempotency-key-in-flight": IdempotencyKeyInFlight,
    "process-id-exists": ProcessIdExists,
    "idempotency-key-taken": IdempotencyKeyTaken,
}

_WARNING_ADVICE: dict[str, str] = {
    "step_content_missing": (
        "register the step with content (Step(name, content={...the fields its outside system compares...})) "
        "so reconciliation can tell 'done as asked' from 'done with other values'"
    ),
    "step_content_not_read": (
        "name the step content's fields as the connector reads them (the warning lists them): "
        "a field it does not read is not compared"
    ),
    "connector_reads_no_field": (
        "ask the Rerun Gate administrator to give the step's connector a `fields` mapping: "
        "until then nothing of what ran is compared with the step"
    ),
}


def _retry_after_seconds(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


def _problem_of(response: httpx.Response) -> tuple[str | None, str, dict[str, Any]]:
    """(slug, detail, problem document) of an error answer; tolerates answers that are not problems."""
    try:
        data = response.json()
    except ValueError:
        data = None
    if isinstance(data, dict):
        kind = data.get("type")
        slug = str(kind).rsplit("/", 1)[-1] if kind else None
        detail = str(data.get("detail") or data.get("title") or response.reason_phrase)
        return slug, detail, data
    text = response.text.strip()[:500]
    return None, text or response.reason_phrase or f"HTTP {response.status_code}", {}


def _error_for(response: httpx.Response) -> RerunGateError:
    status = response.status_code
    slug, detail, problem = _problem_of(response)
    kwargs: dict[str, Any] = {"status": status, "slug": slug, "problem": problem}
    if status == 400:
        return BadRequest(detail, **kwargs)
    if status == 401:
        if slug == "token-missing":
            return TokenMissing(detail, **kwargs)
        return InvalidToken(detail, **kwargs)
    if status == 404:
        return NotFound(detail, **kwargs)
    if status == 409:
        return _CONFLICTS.get(slug or "", Conflict)(detail, **kwargs)
    if status == 422:
        return ValidationFailed(detail, **kwargs)
    if status == 429:
        return RateLimited(detail, retry_after=_retry_after_seconds(response), **kwargs)
    if status >= 500:
        return ServerError(detail, **kwargs)
    return RerunGateError(detail, **kwargs)


def _dumps(body: Any) -> bytes:
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


class Client:
    """A client of Rerun Gate's ingestion API.

    ``base_url`` is the server (``https://rerun-gate.example.co.jp``, no path), ``token`` an API token
    (``rg_...``). Calls are retried on network errors (connection refused, timeouts, a connection broken
    before the answer, an answer that is not JSON) and on 429/502/503/504, ``retries`` times at most, with
    exponential backoff from ``backoff`` seconds plus jitter, never sooner than the server's ``Retry-After``.
    Every call is idempotent (registration by its Idempotency-Key, step events by their seq), so retrying
    is safe. Other refusals raise a :class:`~rerun_gate.RerunGateError` subclass at once.

    ``store`` keeps each step's last seq (:class:`~rerun_gate.FileStore` in production; the default
    :class:`~rerun_gate.MemoryStore` forgets on exit). ``http`` lets you pass your own ``httpx.Client``
    (proxies, certificates, a test transport); the kit then does not close it. ``sleep`` is how the
    client waits between attempts (tests pass a function that records instead of sleeping).
    """

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        http: httpx.Client | None = None,
        retries: int = 5,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        store: SeqStore | None = None,
        timeout: float = 10.0,
        heartbeat_retries: int = 1,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if retries < 0:
            raise ValueError("retries must be >= 0")
        self.base_url = base_url.rstrip("/")
        self._token = token
        self._own_http = http is None
        self._http = http if http is not None else httpx.Client(timeout=timeout)
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.heartbeat_retries = heartbeat_retries
        self.store: SeqStore = store if store is not None else MemoryStore()
        self._sleep = sleep

    def __repr__(self) -> str:
        return f"Client({self.base_url!r}, store={self.store!r})"

    def close(self) -> None:
        """Close the HTTP connections (only those the client opened itself)."""
        if self._own_http:
            self._http.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- HTTP with retries -------------------------------------------------------------------------------

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        delay = min(self.max_backoff, self.backoff * (2.0**attempt)) * random.uniform(0.5, 1.0)
        if retry_after is not None:
            delay = max(delay, retry_after)
        return delay

    def _request(
        self,
        method: str,
        path: str,
        *,
        body: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        retries: int | None = None,
    ) -> tuple[httpx.Response, Any]:
        url = self.base_url + path
        h = {
            "Accept": "application/json, application/problem+json",
            "User-Agent": f"rerun-gate-python/{__version__}",
        }
        if self._token:  # no token: the server answers token-missing, raised as TokenMissing
            h["Authorization"] = f"Bearer {self._token}"
        if body is not None:
            h["Content-Type"] = "application/json"
        h.update(headers or {})
        attempts = (self.retries if retries is None else retries) + 1
        what = f"{method} {path}"
        for attempt in range(attempts):
            last = attempt == attempts - 1
            try:
                response = self._http.request(method, url, content=body, headers=h)
            except (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError) as e:
                if last:
                    raise RerunGateUnreachable(
                        f"{what}: no answer from Rerun Gate at {self.base_url} after {attempts} attempt(s) "
                        f"({type(e).__name__}: {e})"
                    ) from e
                delay = self._delay(attempt, None)
                log.warning(
                    "%s: no answer from Rerun Gate (%s: %s); trying again in %.1f s (attempt %d of %d, same "
                    "key, so it is safe)", what, type(e).__name__, e, delay, attempt + 2, attempts,
                )
                self._sleep(delay)
                continue
            status = response.status_code
            if status in RETRY_STATUSES and not last:
                retry_after = _retry_after_seconds(response)
                delay = self._delay(attempt, retry_after)
                log.warning(
                    "%s: Rerun Gate answered %d%s; trying again in %.1f s (attempt %d of %d)",
                    what, status, f" (Retry-After {retry_after:g} s)" if retry_after is not None else "",
                    delay, attempt + 2, attempts,
                )
                self._sleep(delay)
                continue
            if 200 <= status < 300:
                try:
                    return response, response.json()
                except ValueError as e:
                    if last:
                        raise UnexpectedAnswer(
                            f"{what}: Rerun Gate answered {status} with a body that is not JSON", status=status
                        ) from e
                    delay = self._delay(attempt, None)
                    log.warning(
                        "%s: the answer was broken (not JSON); trying again in %.1f s (attempt %d of %d)",
                        what, delay, attempt + 2, attempts,
                    )
                    self._sleep(delay)
                    continue
            raise _error_for(response)
        raise AssertionError("unreachable")  # pragma: no cover

    # -- the API -----------------------------------------------------------------------------------------

    def register(
        self,
        process_id: str,
        workflow: str,
        department: str,
        steps: Sequence[Step | str],
        business_key: str | None = None,
        content: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> Registration:
        """Register one run of ``workflow`` with every step and its idempotency key.

        Each step's key defaults to ``"<process_id>:<step name>"`` and the registration's own key to
        ``"register:<workflow>:<process_id>"``; the same key and body are sent on every retry, so a retry
        after a lost answer gets the stored answer back (``Registration.replayed``). Conflicts raise
        :class:`IdempotencyKeyMismatch`, :class:`IdempotencyKeyInFlight`, :class:`ProcessIdExists` or
        :class:`IdempotencyKeyTaken`, never retried. Each warning of the answer is logged at WARNING.
        """
        key = idempotency_key or f"register:{workflow}:{process_id}"
        step_bodies: list[dict[str, Any]] = []
        for s in steps:
            step = Step(s) if isinstance(s, str) else s
            item: dict[str, Any] = {
                "name": step.name,
                "idempotency_key": step.idempotency_key or f"{process_id}:{step.name}",
            }
            if step.content is not None:
                item["content"] = dict(step.content)
            step_bodies.append(item)
        body: dict[str, Any] = {"process_id": process_id, "workflow": workflow, "department": department}
        if business_key is not None:
            body["business_key"] = business_key
        if content is not None:
            body["content"] = dict(content)
        body["steps"] = step_bodies
        response, data = self._request(
            "POST", "/api/v1/operations", body=_dumps(body), headers={"Idempotency-Key": key}
        )
        replayed = response.headers.get("idempotency-replayed", "").strip().lower() == "true"
        try:
            registration = Registration.from_answer(data, replayed=replayed)
        except (KeyError, TypeError, ValueError) as e:
            raise UnexpectedAnswer(f"registration answer not understood: {e!r}", status=response.status_code) from e
        for w in registration.warnings:
            advice = _WARNING_ADVICE.get(w.kind, "change the registration of the next operations accordingly")
            log.warning(
                "Rerun Gate warns about %s%s (%s): %s. What to do: %s",
                process_id, f" step {w.step}" if w.step else "", w.kind, w.message, advice,
            )
        if replayed:
            log.info("registration of %s answered from the stored result (Idempotency-Replayed)", process_id)
        return registration

    def operation(self, process_id: str) -> Operation:
        """The operation (its steps with state, ``last_seq``, ``completed_at`` ...). 404 -> :class:`NotFound`."""
        response, data = self._request("GET", f"/api/v1/operations/{quote(process_id, safe='')}")
        try:
            return Operation.from_json(data)
        except (KeyError, TypeError, ValueError) as e:
            raise UnexpectedAnswer(f"operation answer not understood: {e!r}", status=response.status_code) from e

    def report(
        self,
        process_id: str,
        step: str,
        event_type: str,
        *,
        seq: int,
        result_id: str | None = None,
        error_class: str | None = None,
        message: str | None = None,
        usage: Usage | None = None,
        at: datetime | None = None,
        retries: int | None = None,
    ) -> StepEventAnswer:
        """Send one step event as is (the low level under :meth:`step`; you normally use the step helper).

        An answer ``applied: false`` with ``last_seq == seq`` means an earlier attempt with this seq was
        applied: it is returned as accepted. ``last_seq > seq`` raises :class:`StaleSeq` (and moves the
        store up to the server's seq).
        """
        if event_type not in EVENT_TYPES:
            raise ValueError(f"unknown event type {event_type!r}: use one of {', '.join(EVENT_TYPES)}")
        body: dict[str, Any] = {"seq": seq, "type": event_type}
        if result_id is not None:
            body["result_id"] = result_id
        if error_class is not None or event_type in ("failed", "unknown"):
            cls = error_class or "other"
            if cls not in ERROR_CLASSES:
                raise ValueError(f"unknown error class {cls!r}: use one of {', '.join(ERROR_CLASSES)}")
            body["error"] = {"class": cls, "message": message or cls}
        if at is not None:
            if at.tzinfo is None:
                at = at.replace(tzinfo=timezone.utc)
            body["at"] = at.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")
        if usage is not None:
            body["usage"] = {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}
        path = (
            f"/api/v1/operations/{quote(process_id, safe='')}/steps/{quote(step, safe='')}/events"
        )
        response, data = self._request("POST", path, body=_dumps(body), retries=retries)
        try:
            answer = StepEventAnswer(applied=bool(data["applied"]), step=StepView.from_json(data["step"]), seq=seq)
        except (KeyError, TypeError, ValueError) as e:
            raise UnexpectedAnswer(f"step event answer not understood: {e!r}", status=response.status_code) from e
        if not answer.accepted and answer.step.last_seq is not None and answer.step.last_seq > seq:
            self.store.remember(process_id, step, answer.step.last_seq)
            error = StaleSeq(process_id, step, seq, answer.step.last_seq)
            log.error("%s", error)
            raise error
        return answer

    def next_seq(self, process_id: str, step: str) -> int:
        """Take the step's next seq: ``max(stored, the server's last_seq) + 1`` (one GET of the operation),
        written to the store before it is returned (so a restart never reuses it). A store behind the server
        (lost, restored from an old copy) is overtaken with a warning."""
        try:
            server_seq = self.operation(process_id).step(step).last_seq
        except KeyError:
            server_seq = None  # the server will answer the event with a 422 naming the steps
        return self._seq_after(process_id, step, server_seq)

    def _seq_after(self, process_id: str, step: str, server_seq: int | None) -> int:
        """``max(stored, server_seq) + 1``, stored; warns when the store was behind the server."""
        stored = self.store.current_seq(process_id, step)
        if stored is not None and server_seq is not None and server_seq > stored:
            log.warning(
                "step %s of %s: the local seq store had seq %d but Rerun Gate has %d (the store was lost, restored "
                "from an older copy, or another copy of this integration uses a store of its own); continuing from "
                "%d. Give every copy of the integration the same FileStore path on durable storage.",
                step, process_id, stored, server_seq, server_seq + 1,
            )
        return self.store.next_seq(process_id, step, server_seq or 0)

    def step(
        self,
        process_id: str,
        step_name: str,
        *,
        idempotency_key: str | None = None,
        heartbeat_every: float | None = 30.0,
    ) -> "StepRun":
        """The step helper: ``with client.step(pid, "register_order") as step: ...; step.succeeded(order_id)``.

        See :class:`StepRun`. ``idempotency_key`` is the key to pass to the outside system; when omitted it
        is the one Rerun Gate holds for the step (``step.idempotency_key`` once the block runs).
        ``heartbeat_every`` seconds a heartbeat is sent while the block runs (``None`` for none).
        """
        return StepRun(self, process_id, step_name, idempotency_key=idempotency_key, heartbeat_every=heartbeat_every)

    def run_step(
        self,
        process_id: str,
        step_name: str,
        fn: Callable[["StepRun"], str | None],
        *,
        idempotency_key: str | None = None,
        heartbeat_every: float | None = 30.0,
    ) -> str | None:
        """Run one step unless Rerun Gate already has it as completed; the form to use in rerun handlers.

        It reads the operation first. A step already completed (a rerun delivered again after its first steps
        succeeded, or a step reconciliation confirmed) is not run again: a warning is logged and the stored
        ``result_id`` returned, ``fn`` is not called. Otherwise ``fn(step)`` runs inside the step helper
        (``started``, heartbeats, ``failed``/``unknown`` for an exception, exactly as ``with client.step(...)``)
        and the result id it returns is reported ``succeeded`` (unless ``fn`` reported itself, e.g. with
        ``step.succeeded(...)``). Returns the step's result id.

        ``fn`` gets the :class:`StepRun`: send ``step.idempotency_key`` to the outside system.
        """
        try:
            view: StepView | None = self.operation(process_id).step(step_name)
        except KeyError:
            view = None  # `started` is answered 422 naming the workflow's steps
        if view is not None and view.completed_at is not None:
            _log_completed(process_id, step_name, view.result_id, view.completed_at)
            return view.result_id
        run = StepRun(self, process_id, step_name, idempotency_key=idempotency_key,
                      heartbeat_every=heartbeat_every, _view=view)
        try:
            run._start()
        except StepAlreadyCompleted as done:  # completed meanwhile (between the read and `started`)
            _log_completed(process_id, step_name, done.result_id, done.completed_at)
            return done.result_id
        with run:
            result_id = fn(run)
            if run.outcome is None:
                run.succeeded(str(result_id) if result_id is not None else None)
        return run.result_id


def _log_completed(process_id: str, step: str, result_id: str | None, completed_at: str | None) -> None:
    log.warning(
        "step %s of %s is already completed in Rerun Gate (result_id %s%s): not running it again",
        step, process_id, result_id if result_id is not None else "none",
        f", at {completed_at}" if completed_at else "",
    )


def classify_exception(exc: BaseException) -> tuple[str, str]:
    """How the step helper reports an exception raised by the block: ``(event type, error class)``.

    The rule: a call that may have happened (timed out, lost its answer) is ``unknown``, never ``failed``;
    a call that certainly did not happen (no connection, a refusal) is ``failed``.
    """
    if isinstance(exc, StepFailed):
        return "failed", exc.error_class
    if isinstance(exc, OutcomeUnknown):
        return "unknown", exc.error_class
    # Nothing was sent: no connection could be made (or none was free).
    if isinstance(exc, (httpx.ConnectTimeout, httpx.PoolTimeout, httpx.ConnectError, ConnectionRefusedError)):
        return "failed", "unavailable"
    if isinstance(exc, (httpx.TimeoutException, TimeoutError)):
        return "unknown", "timeout"
    if isinstance(
        exc,
        (httpx.RemoteProtocolError, httpx.NetworkError, httpx.DecodingError, ConnectionError, json.JSONDecodeError),
    ):
        return "unknown", "no_response"
    if isinstance(exc, httpx.HTTPStatusError):
        status = exc.response.status_code
        if status == 401:
            return "failed", "auth_expired"
        if status == 403:
            return "failed", "unauthorized"
        if status == 429:
            return "failed", "rate_limited"
        if status == 503:
            return "failed", "unavailable"
        if status == 504:
            return "unknown", "timeout"
        if status >= 500:
            return "failed", "server_error"
        return "failed", "validation"
    return "failed", "other"


class _Heartbeat:
    def __init__(self, run: "StepRun", every: float) -> None:
        self._run = run
        self._every = every
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._loop, name=f"rerun-gate-heartbeat:{run.process_id}:{run.name}", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def _loop(self) -> None:
        run = self._run
        while not self._stop.wait(self._every):
            try:
                run.client.report(
                    run.process_id, run.name, "heartbeat", seq=run.seq, retries=run.client.heartbeat_retries
                )
            except StaleSeq:
                if not self._stop.is_set():
                    log.warning(
                        "heartbeats for step %s of %s stopped: Rerun Gate holds a newer seq (see the error above)",
                        run.name, run.process_id,
                    )
                return
            except Exception as e:  # a lost heartbeat is not fatal: the next one follows
                if not self._stop.is_set():
                    log.warning(
                        "heartbeat for step %s of %s not delivered (%s); trying again in %g s. If Rerun Gate "
                        "stays unreachable it will flag the step as stalled.", run.name, run.process_id, e,
                        self._every,
                    )

    def stop(self, timeout: float) -> None:
        self._stop.set()
        if self._thread is not threading.current_thread() and self._thread.is_alive():
            self._thread.join(timeout)


class StepRun:
    """One run of one step, reported to Rerun Gate (made by :meth:`Client.step` and :meth:`Client.run_step`).

    On entry it reads the operation, takes the step's next seq (``max(stored, the server's last_seq) + 1``)
    and reports ``started`` (if that cannot be reported, the block does not run: nothing is done that Rerun
    Gate does not know of). A step Rerun Gate already has as completed is not run: entering raises
    :class:`StepAlreadyCompleted` (use :meth:`Client.run_step` where that can happen, i.e. in rerun
    handlers). While the block runs it sends a heartbeat every ``heartbeat_every`` seconds with the *current*
    seq. Inside the block:

    * ``step.idempotency_key`` is the key to send to the outside system;
    * ``step.succeeded(result_id)`` reports ``succeeded`` with the outside system's ID right away (or set
      ``step.result_id = ...`` and let the block end: it is reported then);
    * ``raise StepFailed(error_class, message)`` reports ``failed`` with your class;
    * ``raise OutcomeUnknown(message)`` reports ``unknown`` / ``result_unknown``.

    Any other exception is classified by :func:`classify_exception` (``httpx.TimeoutException`` ->
    ``unknown``/``timeout``; a connection broken before the answer -> ``unknown``/``no_response``; no
    connection at all -> ``failed``/``unavailable``; anything else -> ``failed``/``other``), reported, and
    re-raised. Once the ``failed``/``unknown`` outcome is reported, the exception carries a
    :class:`~rerun_gate.ReportedOutcome` in its ``rerun_gate_reported`` attribute, so the rerun receiver ends
    the delivery instead of having it resent. A block that ends normally without a report is reported
    ``succeeded`` (with ``step.result_id``). ``KeyboardInterrupt``/``SystemExit`` are not reported: the
    heartbeats stop, and Rerun Gate flags the step when they are missed.
    """

    def __init__(
        self,
        client: Client,
        process_id: str,
        name: str,
        *,
        idempotency_key: str | None = None,
        heartbeat_every: float | None = 30.0,
        _view: StepView | None = None,
    ) -> None:
        self.client = client
        self.process_id = process_id
        self.name = name
        self.idempotency_key: str = idempotency_key or ""
        self.heartbeat_every = heartbeat_every
        #: The seq of the last event this run reported (heartbeats reuse it).
        self.seq = 0
        #: The outside system's ID of the result, reported with ``succeeded``.
        self.result_id: str | None = None
        #: Token usage of an AI step, reported with the final event.
        self.usage: Usage | None = None
        #: ``"succeeded"``, ``"failed"`` or ``"unknown"`` once the final event was decided.
        self.outcome: str | None = None
        #: The answer to the last event reported.
        self.answer: StepEventAnswer | None = None
        #: What was reported with a ``failed``/``unknown`` outcome (``None`` until then).
        self.reported: ReportedOutcome | None = None
        self._view = _view
        self._started = False
        self._final_sent = False
        self._heartbeat: _Heartbeat | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"StepRun({self.process_id!r}, {self.name!r}, seq={self.seq}, outcome={self.outcome!r})"

    def __enter__(self) -> "StepRun":
        if not self._started:  # run_step starts it before entering
            self._start()
        return self

    def _completed(self, view: StepView) -> StepAlreadyCompleted:
        return StepAlreadyCompleted(view.result_id, process_id=self.process_id, step=self.name,
                                    completed_at=view.completed_at)

    def _start(self) -> None:
        view = self._view
        if view is None:
            try:
                view = self.client.operation(self.process_id).step(self.name)
            except KeyError:
                view = None  # `started` is answered 422 naming the workflow's steps
        if view is not None and view.completed_at is not None:
            raise self._completed(view)
        self._started = True
        self.seq = self.client._seq_after(self.process_id, self.name, view.last_seq if view is not None else None)
        self.answer = self.client.report(self.process_id, self.name, "started", seq=self.seq)
        if not self.answer.accepted and self.answer.step.completed_at is not None:
            raise self._completed(self.answer.step)  # completed meanwhile: Rerun Gate refused `started`
        server_key = self.answer.step.idempotency_key
        if not self.idempotency_key:
            self.idempotency_key = server_key
        elif self.idempotency_key != server_key:
            log.warning(
                "step %s of %s: the key given (%s) is not the one Rerun Gate holds (%s); the outside system "
                "is asked with the given one, so reconciliation will not find it: pass the rerun's key "
                "unchanged", self.name, self.process_id, self.idempotency_key, server_key,
            )
        if self.heartbeat_every is not None and self.heartbeat_every > 0:
            self._heartbeat = _Heartbeat(self, self.heartbeat_every)
            self._heartbeat.start()

    def _stop_heartbeat(self) -> None:
        if self._heartbeat is not None:
            self._heartbeat.stop(timeout=max(5.0, (self.client.heartbeat_retries + 1) * 15.0))
            self._heartbeat = None

    def _send(
        self,
        event_type: str,
        *,
        result_id: str | None = None,
        error_class: str | None = None,
        message: str | None = None,
    ) -> None:
        # The floor is the server's seq as of the last answer (our `started`, normally): no second read.
        server_seq = self.answer.step.last_seq if self.answer is not None else None
        seq = self.client.store.next_seq(self.process_id, self.name, max(server_seq or 0, self.seq))
        self.seq = seq
        self.answer = self.client.report(
            self.process_id, self.name, event_type, seq=seq, result_id=result_id,
            error_class=error_class, message=message, usage=self.usage,
        )

    def _finish(self, event_type: str, *, result_id: str | None = None, error_class: str | None = None,
                message: str | None = None) -> None:
        if error_class is not None and error_class not in ERROR_CLASSES:
            raise ValueError(f"unknown error class {error_class!r}: use one of {', '.join(ERROR_CLASSES)}")
        with self._lock:
            if self.outcome is not None:
                raise RuntimeError(f"step {self.name} of {self.process_id} was already reported {self.outcome}")
            self.outcome = event_type
        self._stop_heartbeat()
        if result_id is not None:
            self.result_id = result_id
        self._send(event_type, result_id=result_id, error_class=error_class, message=message)
        self._final_sent = True
        if event_type in ("failed", "unknown"):
            self.reported = ReportedOutcome(self.process_id, self.name, event_type, error_class or "other",
                                            message or error_class or "other")

    def succeeded(self, result_id: str | None = None, *, usage: Usage | None = None) -> None:
        """Report ``succeeded`` now, with the outside system's ID of the result."""
        if usage is not None:
            self.usage = usage
        self._finish("succeeded", result_id=result_id if result_id is not None else self.result_id)

    def failed(self, error_class: str, message: str) -> None:
        """Report ``failed`` now: the outside call certainly did not happen (same as raising StepFailed)."""
        self._finish("failed", error_class=error_class, message=message)

    def unknown(self, error_class: str, message: str) -> None:
        """Report ``unknown`` now: the outside call may have happened (same as raising OutcomeUnknown)."""
        self._finish("unknown", error_class=error_class, message=message)

    def _mark(self, exc: BaseException) -> None:
        """Tell the rerun receiver that ``exc``'s outcome is in Rerun Gate (see :func:`reported_outcome`)."""
        if self.reported is None:
            return
        try:
            setattr(exc, REPORTED_ATTR, self.reported)
        except (AttributeError, TypeError):  # an exception type without __dict__
            log.warning(
                "step %s of %s: reported %s, but %s cannot carry the mark; a rerun receiver will answer 500 and the "
                "call may be resent", self.name, self.process_id, self.reported.outcome, type(exc).__name__,
            )

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> Literal[False]:
        if exc is None:
            if self.outcome is None:
                if self.result_id is None:
                    log.warning(
                        "step %s of %s ended without a result id: call step.succeeded(<the outside system's "
                        "ID>) so reconciliation can find the record", self.name, self.process_id,
                    )
                self._finish("succeeded", result_id=self.result_id)
            else:
                self._stop_heartbeat()
            return False
        self._stop_heartbeat()
        if self.outcome is not None:
            if not self._final_sent:
                log.error(
                    "step %s of %s: %s could not be reported to Rerun Gate (%s). The step stays 'started' there "
                    "and is flagged when its heartbeats stop; reconciliation then asks the outside system.",
                    self.name, self.process_id, self.outcome, exc,
                )
            else:
                self._mark(exc)  # step.failed()/step.unknown() reported before the block raised
            return False
        if not isinstance(exc, Exception):
            return False  # KeyboardInterrupt, SystemExit: the process is stopping; missed heartbeats tell
        event_type, error_class = classify_exception(exc)
        message = getattr(exc, "message", None) if isinstance(exc, (StepFailed, OutcomeUnknown)) else None
        text = str(message) if message is not None else f"{type(exc).__name__}: {exc}"
        try:
            self._finish(event_type, error_class=error_class, message=text[:2000])
        except Exception as report_error:
            log.error(
                "step %s of %s raised %s, and reporting it as %s/%s failed too (%s). The step stays 'started' in "
                "Rerun Gate and is flagged when its heartbeats stop.",
                self.name, self.process_id, type(exc).__name__, event_type, error_class, report_error,
            )
        else:
            self._mark(exc)
            log.info("step %s of %s reported %s (%s): %s", self.name, self.process_id, event_type, error_class, text)
        return False
