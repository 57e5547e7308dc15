"""Rerun Gate's Python client kit.

* :class:`Client` registers operations (``register``), reads them (``operation``) and reports steps through
  the step helper (``with client.step(process_id, name) as step: ...``, or ``client.run_step(process_id, name,
  fn)`` which skips a step already completed), retrying what is safe to retry.
* :class:`RerunReceiver` receives approved reruns (Standard Webhooks), once per webhook-id.
* :class:`FileStore` keeps seqs and webhook-ids on disk (SQLite); :class:`MemoryStore` in memory.
"""

from ._version import __version__
from .client import EVENT_TYPES, Client, StepRun, classify_exception
from .errors import (
    ERROR_CLASSES,
    BadRequest,
    Conflict,
    FieldError,
    IdempotencyKeyInFlight,
    IdempotencyKeyMismatch,
    IdempotencyKeyTaken,
    InvalidToken,
    NotFound,
    OutcomeUnknown,
    ProcessIdExists,
    RateLimited,
    RerunGateError,
    RerunGateUnreachable,
    ServerError,
    REPORTED_ATTR,
    ReportedOutcome,
    StaleSeq,
    StepAlreadyCompleted,
    StepFailed,
    TokenMissing,
    UnexpectedAnswer,
    ValidationFailed,
    reported_outcome,
)
from .models import (
    Operation,
    Registration,
    RegistrationWarning,
    Rerun,
    RerunStep,
    Step,
    StepError,
    StepEventAnswer,
    StepView,
    Usage,
)
from .receiver import RERUN_TYPES, RerunReceiver, Reply
from .stores import ClaimState, FileStore, MemoryStore, ReceiptStore, SeqStore


__all__ = [
    "__version__",
    "Client",
    "StepRun",
    "classify_exception",
    "EVENT_TYPES",
    "ERROR_CLASSES",
    "RERUN_TYPES",
    "RerunReceiver",
    "Reply",
    "SeqStore",
    "ReceiptStore",
    "ClaimState",
    "FileStore",
    "MemoryStore",
    "Step",
    "Usage",
    "Operation",
    "Registration",
    "RegistrationWarning",
    "StepView",
    "StepError",
    "StepEventAnswer",
    "Rerun",
    "RerunStep",
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
    "StepFailed",
    "OutcomeUnknown",
    "ReportedOutcome",
    "REPORTED_ATTR",
    "reported_outcome",
]
