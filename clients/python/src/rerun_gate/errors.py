"""The kit's exceptions.

Everything Rerun Gate refuses is a :class:`RerunGateError` carrying the HTTP ``status``, the problem ``slug``
(the last part of the problem ``type``, e.g. ``process-id-exists``) and the server's ``detail``; its message
also says what to do. The step helper's own signals (:class:`StepFailed`, :class:`OutcomeUnknown`) are
raised by *your* code inside ``with client.step(...)`` and are not Rerun Gate errors.

An exception whose outcome the step helper has reported to Rerun Gate (``failed`` or ``unknown``) carries a
:class:`ReportedOutcome` in its ``rerun_gate_reported`` attribute (see :func:`reported_outcome`): the rerun
receiver then ends the delivery instead of asking for it again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

__all__ = [
    "RerunGateError",
    "BadRequest",
    "TokenMissing",
    "InvalidToken",
    "NotFound",
    "Conflict",
    "IdempotencyKeyMismatch",
    "IdempotencyKeyInFlight",
    "ProcessIdExists",
    "IdempotencyKeyTaken",
    "ValidationFailed",
    "FieldError",
    "RateLimited",
    "ServerError",
    "RerunGateUnreachable",
    "UnexpectedAnswer",
    "StaleSeq",
    "StepAlreadyCompleted",
    "ReportedOutcome",
    "REPORTED_ATTR",
    "reported_outcome",
    "StepFailed",
    "OutcomeUnknown",
    "ERROR_CLASSES",
]

#: The error classes Rerun Gate accepts with a ``failed`` or ``unknown`` step event (anything else is a 422).
ERROR_CLASSES: tuple[str, ...] = (
    "auth_expired",
    "unauthorized",
    "rate_limited",
    "server_error",
    "unavailable",
    "temporary",
    "timeout",
    "no_response",
    "duplicate_notification",
    "stale_notification",
    "in_progress",
    "cancel_requested",
    "result_unknown",
    "validation",
    "other",
)


class RerunGateError(Exception):
    """Rerun Gate refused a call, or could not be reached.

    ``status`` is the HTTP status (``None`` when there was no answer), ``slug`` the problem slug
    (``None`` when the answer was not a problem document), ``detail`` the server's explanation and
    ``problem`` the whole problem document. ``str(error)`` adds what to do.
    """

    #: What to do about it, for people; subclasses say it more precisely.
    hint: str = "see the detail; the call was not retried"

    def __init__(
        self,
        detail: str,
        *,
        status: int | None = None,
        slug: str | None = None,
        problem: Mapping[str, Any] | None = None,
        hint: str | None = None,
    ) -> None:
        self.detail = detail
        self.status = status
        self.slug = slug
        self.problem: dict[str, Any] = dict(problem or {})
        if hint is not None:
            self.hint = hint
        super().__init__(self._message())

    def _message(self) -> str:
        where = ""
        if self.status is not None:
            where = f" ({self.status}{' ' + self.slug if self.slug else ''})"
        return f"{self.detail}{where}. What to do: {self.hint}"


class BadRequest(RerunGateError):
    """400: no ``Idempotency-Key`` or a body that is not JSON (a bug in the caller or the kit)."""

    hint = "the request was malformed; check the values passed to the kit (this is not retried)"


class TokenMissing(RerunGateError):
    """401 ``token-missing``: no ``Authorization: Bearer`` header."""

    hint = "pass the API token (rg_...) to Client(base_url, token); an admin creates one with `server token create`"


class InvalidToken(RerunGateError):
    """401 ``invalid-token``: the token is unknown, mistyped or revoked."""

    hint = (
        "the API token is unknown, mistyped or revoked: ask an admin for a new one "
        "(`server token create --name ... --department ...`) and configure it"
    )


class NotFound(RerunGateError):
    """404: unknown operation, or a department / operation outside the token's scope."""

    hint = (
        "check the process_id and the department: the token only sees the departments it was created for "
        "(`server token create --department ...`)"
    )


class Conflict(RerunGateError):
    """409: the base of the four conflict kinds (never retried)."""

    hint = "this is not retried; see the detail"


class IdempotencyKeyMismatch(Conflict):
    """409 ``idempotency-key-mismatch``: this key was used before with another body."""

    hint = (
        "this Idempotency-Key was already used with a different body. A retry must send exactly the same "
        "registration; a real change (e.g. a corrected amount) is another operation: register it under a new "
        "process_id"
    )


class IdempotencyKeyInFlight(Conflict):
    """409 ``idempotency-key-in-flight``: the first request with this key is still being processed."""

    hint = (
        "the first request with this Idempotency-Key is still being processed: wait a few seconds and call "
        "register again with the same arguments; it then answers the stored result"
    )


class ProcessIdExists(Conflict):
    """409 ``process-id-exists``: the process_id is registered under another Idempotency-Key."""

    hint = (
        "this process_id is already registered under another Idempotency-Key: register with the key of the "
        "first registration (the kit derives 'register:<workflow>:<process_id>' unless you pass "
        "idempotency_key), or use a new process_id for a new run"
    )


class IdempotencyKeyTaken(Conflict):
    """409 ``idempotency-key-taken``: a step key is already used by another step at the same outside system."""

    hint = (
        "a step idempotency key is already used by another operation's step at the same outside system: "
        "derive step keys from the process_id (the kit's default '<process_id>:<step>') so each run has its own"
    )


@dataclass(frozen=True)
class FieldError:
    """One field of a 422 answer: which field, what is wrong with it."""

    field: str
    message: str


class ValidationFailed(RerunGateError):
    """422: the body or a value was refused; ``errors`` lists the fields."""

    hint = "correct the fields listed (errors); this is not retried"

    def __init__(
        self,
        detail: str,
        *,
        status: int | None = None,
        slug: str | None = None,
        problem: Mapping[str, Any] | None = None,
        hint: str | None = None,
    ) -> None:
        raw = (problem or {}).get("errors") or []
        self.errors: list[FieldError] = [
            FieldError(str(e.get("field", "")), str(e.get("message", "")))
            for e in raw
            if isinstance(e, dict)
        ]
        super().__init__(detail, status=status, slug=slug, problem=problem, hint=hint)

    def _message(self) -> str:
        base = super()._message()
        fields = "; ".join(f"{e.field}: {e.message}" for e in self.errors if e.message != self.detail)
        return f"{base}{' [' + fields + ']' if fields else ''}"


class RateLimited(RerunGateError):
    """429 after all retries; ``retry_after`` is the server's last ``Retry-After`` in seconds."""

    hint = "this client is over its rate: slow down, or give the Client more retries / a longer backoff"

    def __init__(
        self,
        detail: str,
        *,
        status: int | None = None,
        slug: str | None = None,
        problem: Mapping[str, Any] | None = None,
        hint: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        self.retry_after = retry_after
        super().__init__(detail, status=status, slug=slug, problem=problem, hint=hint)


class ServerError(RerunGateError):
    """A 5xx answer (502/503/504 only after all retries; other 5xx at once)."""

    hint = (
        "Rerun Gate answered with a server error: the call may be repeated later with the same arguments "
        "(the keys make it safe); if it persists, look at the server's log"
    )


class RerunGateUnreachable(RerunGateError):
    """No answer from Rerun Gate after all retries (connection refused, timeouts, broken connections)."""

    hint = (
        "check RERUN_GATE_URL and that the server is up; the same call can be repeated later safely "
        "(registration and step events are idempotent)"
    )


class UnexpectedAnswer(RerunGateError):
    """An answer the kit does not understand (not JSON, or not the documented shape)."""

    hint = "the server and the kit may be of different versions; check the server's /api/openapi.json"


class StaleSeq(RerunGateError):
    """Rerun Gate already holds a newer ``seq`` for this step than the one the kit just sent.

    The local :class:`~rerun_gate.SeqStore` is behind the server: it was lost, restored from an older copy,
    or another copy of the integration reports this step with a store of its own. The kit has moved the
    store up to ``server_seq``, so running the step again continues after it.
    """

    def __init__(self, process_id: str, step: str, seq: int, server_seq: int) -> None:
        self.process_id = process_id
        self.step = step
        self.seq = seq
        self.server_seq = server_seq
        super().__init__(
            f"step {step!r} of {process_id!r}: Rerun Gate already has seq {server_seq}, the event sent had "
            f"seq {seq}, so it was not applied",
            hint=(
                "the local seq store is behind the server (the store file was lost or replaced, or another "
                "copy of this integration reports the step with its own store). Give every copy of the "
                "integration the same FileStore path on durable storage. The store now records "
                f"{server_seq}: run the step again to report it with a newer seq"
            ),
        )


class StepAlreadyCompleted(RerunGateError):
    """The step is already completed in Rerun Gate, so ``with client.step(...)`` did not run its block.

    Rerun Gate never lets a confirmed success go back to ``started`` (its completion flag promises the effect
    happened), and a ``with`` block cannot be skipped, so entering it raises this. ``result_id`` is the outside
    system's ID Rerun Gate holds for the step (``None`` when none was reported, e.g. completed by
    reconciliation). In rerun handlers use :meth:`Client.run_step`, which returns that ID without running the
    step. Leaving a rerun handler, it ends the delivery like a reported outcome (200, nothing resent).
    """

    def __init__(
        self,
        result_id: str | None,
        *,
        process_id: str = "",
        step: str = "",
        completed_at: str | None = None,
    ) -> None:
        self.result_id = result_id
        self.process_id = process_id
        self.step = step
        self.completed_at = completed_at
        when = f", at {completed_at}" if completed_at else ""
        super().__init__(
            f"step {step!r} of {process_id!r} is already completed in Rerun Gate (result_id "
            f"{result_id if result_id is not None else 'none'}{when}); it was not run again",
            hint=(
                "in rerun handlers use client.run_step(process_id, step, fn, idempotency_key=...): it returns the "
                "stored result_id of a completed step without running it, and runs the others. A `with "
                "client.step(...)` block cannot be skipped, so it raises this instead of running the step twice"
            ),
        )


#: The attribute the step helper sets on an exception once it has reported it to Rerun Gate.
REPORTED_ATTR = "rerun_gate_reported"


@dataclass(frozen=True)
class ReportedOutcome:
    """What the step helper reported to Rerun Gate about an exception that left a step.

    ``outcome`` is ``"failed"`` or ``"unknown"`` (or ``"completed"`` for :class:`StepAlreadyCompleted`),
    ``error_class`` and ``message`` what was sent with it. The rerun receiver reads it to end the delivery:
    Rerun Gate shows the step as stalled, and a person decides, so the call is not resent.
    """

    process_id: str
    step: str
    outcome: str
    error_class: str | None
    message: str
    result_id: str | None = None

    def detail(self, limit: int = 1000) -> str:
        """The receiver's ``detail`` for it."""
        if self.outcome == "completed":
            rid = self.result_id if self.result_id is not None else "none"
            return (
                f"{self.step}: already completed in Rerun Gate (result_id {rid}), not run again; the handler "
                f"stopped there (use client.run_step in rerun handlers); nothing is resent"
            )[:limit]
        tail = "; Rerun Gate shows the stall, nothing is resent"
        head = f"{self.step}: reported {self.outcome} ({self.error_class or 'other'}): "
        room = max(0, limit - len(head) - len(tail))
        message = self.message if len(self.message) <= room else self.message[: max(0, room - 1)] + "…"
        return head + message + tail


def reported_outcome(exc: BaseException) -> ReportedOutcome | None:
    """The outcome the step helper reported for ``exc`` (``None`` when it reported nothing for it).

    ``StepAlreadyCompleted`` counts as reported: Rerun Gate already holds the step's outcome.
    """
    if isinstance(exc, StepAlreadyCompleted):
        return ReportedOutcome(exc.process_id, exc.step, "completed", None, str(exc), exc.result_id)
    mark = getattr(exc, REPORTED_ATTR, None)
    return mark if isinstance(mark, ReportedOutcome) else None


class StepFailed(Exception):
    """Raise inside ``with client.step(...)`` to report ``failed`` with the error class you choose.

    Use it for an outside call that certainly did *not* happen (refused input, refused credentials):
    ``raise StepFailed("validation", "the order system refused the amount")``.
    """

    def __init__(self, error_class: str, message: str) -> None:
        if error_class not in ERROR_CLASSES:
            raise ValueError(f"unknown error class {error_class!r}: use one of {', '.join(ERROR_CLASSES)}")
        self.error_class = error_class
        self.message = message
        super().__init__(f"{error_class}: {message}")


class OutcomeUnknown(Exception):
    """Raise inside ``with client.step(...)`` when the outside call went out but its result never came back.

    It is reported as ``unknown`` (class ``result_unknown`` unless you choose another), never ``failed``:
    the outside system may have done the work, so Rerun Gate looks before anyone reruns it.
    """

    def __init__(self, message: str, error_class: str = "result_unknown") -> None:
        if error_class not in ERROR_CLASSES:
            raise ValueError(f"unknown error class {error_class!r}: use one of {', '.join(ERROR_CLASSES)}")
        self.error_class = error_class
        self.message = message
        super().__init__(f"{error_class}: {message}")
