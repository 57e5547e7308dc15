"""Schemathesis hooks for `scripts/api-fuzz.sh` (QUALITY 16-17).

- A check: no response body of the ingestion API may carry SQL or panic text (the database engine's words, a
  driver's error, a Rust panic message or backtrace). Internal causes are logged, never answered.
- Deeper cases: workflow names, departments and step names come from the configuration, which the OpenAPI
  document cannot enumerate, so purely generated registrations almost never get past validation. Part of the
  positive cases (chosen by a checksum of the case, so that runs replay) get the names of a configured
  workflow, keeping every other generated value (process ID, keys, business key, content), and step events
  get a configured step and, when one exists, a process ID the run registered. Negative cases stay as they are.
"""

import os
import re
import threading
import tomllib
import zlib
from urllib.parse import quote

import schemathesis
from schemathesis import GenerationMode

# What a leaked internal cause looks like: SQLite and PostgreSQL errors as sqlx renders them, and Rust panics.
LEAKS = re.compile(
    r"sqlite|sqlx|sqlstate|postgres|syntax error|constraint failed|duplicate key|violates|"
    r"error returned from database|database is locked|no such (?:table|column)|"
    r"panicked|rust_backtrace|stack backtrace|thread '|called `(?:option|result)::unwrap|\.rs:\d+",
    re.IGNORECASE,
)


def _request_text(case) -> str:
    """Everything the client sent, so that an answer quoting the client's own input is not taken for a leak."""
    parts = [str(case.path_parameters or ""), str(case.query or ""), str(case.headers or ""), str(case.body)]
    return "\n".join(parts).lower()


@schemathesis.check
def no_sql_or_panic_text(ctx, response, case):
    """Fails on SQL or panic text in any response body."""
    body = response.content.decode("utf-8", errors="replace")
    sent = None
    for match in LEAKS.finditer(body):
        if sent is None:
            sent = _request_text(case)
        if match.group(0).lower() not in sent:
            start = max(match.start() - 80, 0)
            raise AssertionError(
                f"SQL or panic text in the response body ({match.group(0)!r}): ...{body[start:match.end() + 80]}..."
            )
    return None


def _workflows() -> list[tuple[str, str, list[str]]]:
    """(name, department, step names) of each workflow in the configuration the server runs with."""
    with open(os.environ.get("RERUN_GATE_CONFIG", "rerun-gate.toml"), "rb") as file:
        config = tomllib.load(file)
    return [(w["name"], w["department"], [s["name"] for s in w.get("step", [])]) for w in config.get("workflow", [])]


WORKFLOWS = _workflows()
STEPS = sorted({step for _, _, steps in WORKFLOWS for step in steps})
REGISTERED: list[str] = []  # process IDs answered 201, in order
_LOCK = threading.Lock()


def _checksum(seed: str) -> int:
    return zlib.crc32(seed.encode("utf-8", "surrogatepass"))


def _pick(seed: str, choices: list):
    """One of `choices`, or None for about a third of the seeds."""
    n = _checksum(seed)
    return choices[n % len(choices)] if choices and n % 3 else None


def _phase_and_mode(case) -> tuple[str | None, str | None]:
    meta = getattr(case, "meta", None)
    if meta is None:
        return None, None
    return str(meta.phase.name), str(meta.generation.mode)


def _with_suffix(value: str, suffix: str, limit: int) -> str:
    """`value` (without an earlier suffix of ours) cut to leave room for `suffix` within `limit` characters."""
    value = re.sub(r"(-[0-9a-f]{8})+$", "", value)
    return value[: limit - len(suffix)] + suffix


def _registration(case, n: int) -> None:
    # Mostly the token's own department's workflow; sometimes another department's (404), sometimes none.
    choices = [None, *WORKFLOWS[1:], *[WORKFLOWS[0]] * 4] if WORKFLOWS else [None]
    workflow = choices[n % len(choices)]
    if workflow is None:
        return
    name, department, steps = workflow
    generated = [s for s in case.body.get("steps") or [] if isinstance(s, dict)]
    body = dict(case.body, workflow=name, department=department, steps=[])
    # Generated keys and IDs are short and repeat ("0"): a suffix from the case's checksum keeps them apart
    # (the same key with another body, 409, is still reached: by replays and in the stateful phase).
    suffix = f"-{n:08x}"
    process_id = _with_suffix(str(body.get("process_id") or "x"), suffix, 128)
    body["process_id"] = process_id
    key = case.headers.get("Idempotency-Key") if case.headers is not None else None
    if isinstance(key, str):
        case.headers["Idempotency-Key"] = _with_suffix(key, suffix, 255)
    for i, step in enumerate(steps):
        base = dict(generated[i]) if i < len(generated) else {"idempotency_key": f"{process_id}:{step}"}
        body["steps"].append(dict(base, name=step))
    case.body = body


def _first_step_event_link() -> dict:
    return {
        "operationId": "report_step_event",
        "parameters": {"process_id": "$response.body#/process_id", "step": "$response.body#/steps/0/name"},
    }


@schemathesis.hook
def before_load_schema(context, raw_schema):
    """Links for the stateful phase: a registered (or read) operation's first step gets events. The document
    does not carry them: utoipa 5.5 writes a link's `operationId` as `operation_id`, which is invalid."""
    paths = raw_schema.get("paths", {})
    for path, method, status in (("/api/v1/operations", "post", "201"), ("/api/v1/operations/{process_id}", "get", "200")):
        response = paths.get(path, {}).get(method, {}).get("responses", {}).get(status)
        if response is not None:
            response.setdefault("links", {})["ReportFirstStepEvent"] = _first_step_event_link()


@schemathesis.hook
def map_case(context, case):
    operation = context.operation
    phase, mode = _phase_and_mode(case)
    if operation is None or mode != GenerationMode.POSITIVE:
        return case
    seed = repr((case.path_parameters, case.body))
    n = _checksum(seed)
    if operation.method.upper() == "POST" and operation.path == "/api/v1/operations":
        if isinstance(case.body, dict):
            _registration(case, n)
        return case
    # The stateful phase links its requests to registrations itself.
    if phase == "stateful" or not case.path_parameters or "process_id" not in case.path_parameters:
        return case
    if "step" in case.path_parameters:
        step = _pick(seed, STEPS)
        if step is not None:
            case.path_parameters["step"] = quote(step, safe="")
    with _LOCK:
        known = list(REGISTERED)
    process_id = _pick(seed[::-1], known)
    if process_id is not None:
        # Generated values are percent-encoded by then; ours too, as any client must (process IDs may hold "/").
        case.path_parameters["process_id"] = {".": "%2E", "..": "%2E%2E"}.get(process_id) or quote(process_id, safe="")
    return case


@schemathesis.check
def remember_registrations(ctx, response, case):
    """Not a check of its own: notes the process IDs of registered operations for `map_case`."""
    if response.status_code == 201:
        try:
            process_id = response.json().get("process_id")
        except Exception:  # noqa: BLE001 - another check reports a body that is not JSON
            return None
        if isinstance(process_id, str):
            with _LOCK:
                if process_id not in REGISTERED:
                    REGISTERED.append(process_id)
                    del REGISTERED[:-200]
    return None
