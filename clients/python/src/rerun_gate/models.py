"""Typed views of what Rerun Gate sends and answers.

Timestamps stay RFC 3339 strings exactly as the server sent them (``"2026-12-05T10:00:00Z"``); every view
also keeps the whole JSON object it was read from in ``raw``, so fields a newer server adds are not lost.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

__all__ = [
    "Step",
    "Usage",
    "StepError",
    "StepView",
    "Operation",
    "Registration",
    "RegistrationWarning",
    "StepEventAnswer",
    "RerunStep",
    "Rerun",
]


@dataclass(frozen=True)
class Step:
    """One step to register. ``idempotency_key`` defaults to ``"<process_id>:<name>"``.

    ``content`` is what the step sends to its outside system (the fields that system compares, e.g.
    ``{"amount": 4000, "currency": "JPY"}``): reconciliation uses it to tell "done as asked" from
    "done with other values".
    """

    name: str
    idempotency_key: str | None = None
    content: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Usage:
    """Tokens an AI generation used (sent with a step event)."""

    input_tokens: int
    output_tokens: int


@dataclass(frozen=True)
class StepError:
    """A step's last reported error."""

    error_class: str
    message: str


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


def _opt_int(value: Any) -> int | None:
    return None if value is None else int(value)


@dataclass(frozen=True)
class StepView:
    """One step of an operation as Rerun Gate holds it."""

    position: int
    name: str
    state: str
    idempotency_key: str
    attempts: int
    result_id: str | None = None
    last_seq: int | None = None
    completed_at: str | None = None
    error: StepError | None = None
    latest_verdict: str | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "StepView":
        err = data.get("error")
        return cls(
            position=int(data["position"]),
            name=str(data["name"]),
            state=str(data["state"]),
            idempotency_key=str(data["idempotency_key"]),
            attempts=int(data["attempts"]),
            result_id=_opt_str(data.get("result_id")),
            last_seq=_opt_int(data.get("last_seq")),
            completed_at=_opt_str(data.get("completed_at")),
            error=StepError(str(err["class"]), str(err["message"])) if isinstance(err, dict) else None,
            latest_verdict=_opt_str(data.get("latest_verdict")),
            raw=dict(data),
        )


@dataclass(frozen=True)
class RegistrationWarning:
    """Something Rerun Gate accepted but advises to change (e.g. ``step_content_missing``)."""

    kind: str
    step: str | None
    message: str


@dataclass(frozen=True)
class Operation:
    """An operation (``OperationView``): one run of a workflow with its steps and status."""

    process_id: str
    workflow: str
    department: str
    status: str
    created_at: str
    updated_at: str
    steps: list[StepView]
    business_key: str | None = None
    event: str | None = None
    failure_class: str | None = None
    possible_duplicate_of: str | None = None
    drill_id: str | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def step(self, name: str) -> StepView:
        """The step called ``name`` (``KeyError`` naming the steps when there is none)."""
        for s in self.steps:
            if s.name == name:
                return s
        raise KeyError(f"operation {self.process_id} has no step {name!r}: its steps are "
                       f"{', '.join(s.name for s in self.steps)}")

    @classmethod
    def _fields_from_json(cls, data: Mapping[str, Any]) -> dict[str, Any]:
        return dict(
            process_id=str(data["process_id"]),
            workflow=str(data["workflow"]),
            department=str(data["department"]),
            status=str(data["status"]),
            created_at=str(data["created_at"]),
            updated_at=str(data["updated_at"]),
            steps=[StepView.from_json(s) for s in data["steps"]],
            business_key=_opt_str(data.get("business_key")),
            event=_opt_str(data.get("event")),
            failure_class=_opt_str(data.get("failure_class")),
            possible_duplicate_of=_opt_str(data.get("possible_duplicate_of")),
            drill_id=_opt_str(data.get("drill_id")),
            raw=dict(data),
        )

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Operation":
        return cls(**cls._fields_from_json(data))


@dataclass(frozen=True)
class Registration(Operation):
    """The answer to :meth:`Client.register`: the operation, plus

    ``replayed``: ``True`` when Rerun Gate answered the stored result of an earlier registration with the
    same key and body (a retry whose first answer was lost) — not an error;
    ``warnings``: advice about the registration (each is also logged at WARNING).
    """

    replayed: bool = False
    warnings: list[RegistrationWarning] = field(default_factory=list)

    @classmethod
    def from_answer(cls, data: Mapping[str, Any], *, replayed: bool) -> "Registration":
        warnings = [
            RegistrationWarning(str(w.get("kind", "")), _opt_str(w.get("step")), str(w.get("message", "")))
            for w in (data.get("warnings") or [])
            if isinstance(w, dict)
        ]
        return cls(**cls._fields_from_json(data), replayed=replayed, warnings=warnings)


@dataclass(frozen=True)
class StepEventAnswer:
    """The answer to a step event.

    ``applied`` is the server's flag. ``accepted`` is what matters to the sender: ``True`` when the event is
    applied *now or was applied by an earlier attempt with the same seq* (a retry after a lost answer).
    """

    applied: bool
    step: StepView
    seq: int

    @property
    def accepted(self) -> bool:
        return self.applied or self.step.last_seq == self.seq


@dataclass(frozen=True)
class RerunStep:
    """A step to run again, with its ORIGINAL idempotency key (pass it to the outside system unchanged)."""

    name: str
    idempotency_key: str


@dataclass(frozen=True)
class Rerun:
    """An approved rerun (the body of Rerun Gate's ``rerun.approved`` call), as the handler receives it.

    ``steps`` lists ONLY the steps to run again. ``webhook_id`` is the delivery's id (the same on every
    attempt); ``raw`` the whole body.
    """

    rerun_id: str
    process_id: str
    workflow: str
    steps: list[RerunStep]
    requested_by: str = ""
    requested_by_id: int | None = None
    approved_by: list[str] = field(default_factory=list)
    approved_by_ids: list[int] = field(default_factory=list)
    approved_at: str | None = None
    type: str = "rerun.approved"
    webhook_id: str = ""
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)
