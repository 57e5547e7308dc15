"""The rerun receiver (Rerun Gate -> integration): verifies, deduplicates and hands an approved rerun to you.

Rerun Gate calls the workflow's ``rerun_url`` with a Standard Webhooks signed POST when a rerun is approved.
:class:`RerunReceiver` answers it exactly as Rerun Gate expects:

=============================================  ======  ======================================================
what came                                      status  body
=============================================  ======  ======================================================
unsigned, wrongly signed, or stale (>5 min)     401    ``{"outcome": "refused", "detail": ...}``
signed, but not a RerunCall / unknown type      422    ``{"outcome": "refused", "detail": ...}``
``rerun.test`` (``server integration check``)   200    ``{"outcome": "test"}`` (handler not called)
a webhook-id handled before                     200    ``{"outcome": "duplicate"}`` (nothing done again)
the same webhook-id, still being handled        503    ``{"outcome": "in_progress", ...}`` + ``Retry-After: 5``
handler returned                                200    ``{"outcome": "done"}``
handler raised, its outcome reported by the     200    ``{"outcome": "done", "detail": "<step>: reported ..."}``
step helper (``failed``/``unknown``, or                (claim finished: Rerun Gate shows the stall, a person
``StepAlreadyCompleted``)                              decides; nothing is resent)
handler raised anything else (its own code      500    ``{"outcome": "failed", "detail": ...}`` (claim
outside a step, or the report could not be             released, so the retry runs it again)
sent)
=============================================  ======  ======================================================

Use it as a WSGI app (``receiver.wsgi``), an ASGI app (``receiver.asgi``) or from any framework through
``receiver.receive(body, headers)``.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Iterable, Mapping, MutableMapping

from standardwebhooks import Webhook, WebhookVerificationError

from .errors import reported_outcome
from .models import Rerun, RerunStep
from .stores import ReceiptStore

__all__ = ["RerunReceiver", "Reply", "RERUN_TYPES"]

log = logging.getLogger("rerun_gate.receiver")

#: The call types Rerun Gate sends.
RERUN_TYPES = ("rerun.approved", "rerun.test")

#: The largest body accepted (a RerunCall is a few KiB).
MAX_BODY = 1024 * 1024

StartResponse = Callable[..., Any]
ASGIScope = MutableMapping[str, Any]
ASGIReceive = Callable[[], Awaitable[MutableMapping[str, Any]]]
ASGISend = Callable[[MutableMapping[str, Any]], Awaitable[None]]

_HTTP_REASONS = {
    200: "OK", 401: "Unauthorized", 404: "Not Found", 405: "Method Not Allowed", 413: "Payload Too Large",
    422: "Unprocessable Entity", 500: "Internal Server Error", 503: "Service Unavailable",
}


@dataclass
class Reply:
    """The receiver's answer: ``status``, JSON ``body`` and ``headers`` to send back as they are.

    ``outcome`` is the body's outcome (``done``, ``duplicate``, ``test``, ``refused``, ``failed``,
    ``in_progress``, ``not_found``); ``webhook_id`` and ``rerun`` are set once they are known (a verified
    call).
    """

    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    outcome: str = ""
    webhook_id: str | None = None
    rerun: Rerun | None = None

    @property
    def steps(self) -> list[str]:
        """The names of the steps the call listed (empty when it was not read)."""
        return [s.name for s in self.rerun.steps] if self.rerun is not None else []


def _reply(status: int, outcome: str, detail: str | None = None, *, headers: Mapping[str, str] | None = None,
           webhook_id: str | None = None, rerun: Rerun | None = None) -> Reply:
    payload: dict[str, str] = {"outcome": outcome}
    if detail is not None:
        payload["detail"] = detail
    h = {"content-type": "application/json"}
    h.update(headers or {})
    return Reply(status, json.dumps(payload, ensure_ascii=False).encode("utf-8"), h, outcome, webhook_id, rerun)


class _NotARerunCall(ValueError):
    pass


def _req_str(data: Mapping[str, Any], key: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value:
        raise _NotARerunCall(f"`{key}` must be a non-empty string")
    return value


def _parse_call(data: Any, webhook_id: str) -> Rerun:
    if not isinstance(data, dict):
        raise _NotARerunCall("the body is not a JSON object")
    kind = data.get("type")
    if kind not in RERUN_TYPES:
        raise _NotARerunCall(f"unknown type {kind!r}: expected one of {', '.join(RERUN_TYPES)}")
    raw_steps = data.get("steps")
    if not isinstance(raw_steps, list):
        raise _NotARerunCall("`steps` must be a list")
    steps: list[RerunStep] = []
    for i, s in enumerate(raw_steps):
        if not isinstance(s, dict):
            raise _NotARerunCall(f"steps[{i}] must be an object")
        steps.append(RerunStep(_req_str(s, "name"), _req_str(s, "idempotency_key")))
    approved_by = data.get("approved_by") or []
    approved_by_ids = data.get("approved_by_ids") or []
    requested_by_id = data.get("requested_by_id")
    if not isinstance(approved_by, list) or not all(isinstance(x, str) for x in approved_by):
        raise _NotARerunCall("`approved_by` must be a list of names")
    if not isinstance(approved_by_ids, list) or not all(
        isinstance(x, int) and not isinstance(x, bool) for x in approved_by_ids
    ):
        raise _NotARerunCall("`approved_by_ids` must be a list of integers")
    if requested_by_id is not None and (not isinstance(requested_by_id, int) or isinstance(requested_by_id, bool)):
        raise _NotARerunCall("`requested_by_id` must be an integer")
    requested_by = data.get("requested_by")
    approved_at = data.get("approved_at")
    if requested_by is not None and not isinstance(requested_by, str):
        raise _NotARerunCall("`requested_by` must be a string")
    if approved_at is not None and not isinstance(approved_at, str):
        raise _NotARerunCall("`approved_at` must be a string")
    return Rerun(
        rerun_id=_req_str(data, "rerun_id"),
        process_id=_req_str(data, "process_id"),
        workflow=_req_str(data, "workflow"),
        steps=steps,
        requested_by=requested_by or "",
        requested_by_id=requested_by_id,
        approved_by=list(approved_by),
        approved_by_ids=list(approved_by_ids),
        approved_at=approved_at,
        type=str(kind),
        webhook_id=webhook_id,
        raw=data,
    )


class RerunReceiver:
    """Receives Rerun Gate's rerun calls and runs ``handler(rerun)`` once per webhook-id.

    ``secret`` is the workflow's signing secret (``whsec_...``, the value of the variable that the
    workflow's ``signing_secret_env`` names in rerun-gate.toml). ``handler`` gets a :class:`~rerun_gate.Rerun`
    listing only the steps to run again, each with its ORIGINAL idempotency key; it should be quick (Rerun
    Gate waits 10 s, then records "outcome unknown"): hand long work to a queue. Run each step with
    :meth:`Client.run_step` (a step already completed is then skipped).

    When the handler raises an exception whose outcome the step helper has already reported to Rerun Gate
    (``failed`` or ``unknown``: see :func:`~rerun_gate.reported_outcome`; or :class:`StepAlreadyCompleted`),
    the delivery ends: the webhook-id counts as handled and 200 ``done`` is answered with a ``detail`` saying
    what was reported. Rerun Gate shows the stalled step; sending the call again would repeat a step that may
    have happened (``unknown``) or fail the same way (``validation``). Any other exception (the handler's own
    code failed outside a step, or the report itself could not be sent) releases the claim and answers 500, so
    Rerun Gate's retry runs it again.

    ``store`` keeps the webhook-ids (:class:`~rerun_gate.FileStore` in production). ``path``: when set,
    the WSGI/ASGI apps answer 404 for any other path. ``claim_timeout``: a claim older than this (its
    receiver died mid-handler) is taken over by the next delivery. ``on_reply`` is called with every
    :class:`Reply` (e.g. to print or count them).
    """

    def __init__(
        self,
        secret: str,
        handler: Callable[[Rerun], object],
        store: ReceiptStore,
        *,
        path: str | None = None,
        claim_timeout: float = 60.0,
        retry_after: int = 5,
        on_reply: Callable[[Reply], None] | None = None,
    ) -> None:
        if not secret:
            raise ValueError(
                "RerunReceiver: the signing secret is empty; set it to the workflow's secret (whsec_...), the "
                "value of the variable its signing_secret_env names"
            )
        try:
            self._webhook = Webhook(secret.strip())
        except Exception as e:
            raise ValueError(
                f"RerunReceiver: the signing secret is not a whsec_<base64> value ({e}); copy it exactly from the "
                f"variable the workflow's signing_secret_env names"
            ) from e
        self.handler = handler
        self.store = store
        self.path = path
        self.claim_timeout = claim_timeout
        self.retry_after = retry_after
        self.on_reply = on_reply

    # -- framework-neutral ---------------------------------------------------------------------------------

    def receive(self, body: bytes, headers: Mapping[str, str]) -> Reply:
        """Handle one call: ``body`` exactly as received (bytes), ``headers`` in any letter case."""
        reply = self._receive(body, headers)
        if self.on_reply is not None:
            try:
                self.on_reply(reply)
            except Exception:
                log.exception("on_reply raised; the reply is sent all the same")
        return reply

    def _receive(self, body: bytes, headers: Mapping[str, str]) -> Reply:
        h = {k.lower(): v for k, v in headers.items()}
        webhook_id = h.get("webhook-id")
        try:
            # json_parse=False: a signed body that is not JSON is ours to refuse (422), not a signature error.
            self._webhook.verify(body, h, json_parse=False)
        except (WebhookVerificationError, ValueError, TypeError) as e:  # ValueError: malformed headers
            log.warning(
                "rerun call refused (webhook-id %s): %s. Check that the signing secret given to this receiver "
                "(e.g. RERUN_GATE_SIGNING_SECRET) is the same whsec_ value as the variable named by the "
                "workflow's signing_secret_env in rerun-gate.toml, and that this machine's clock is right "
                "(timestamps older or newer than 5 minutes are refused).", webhook_id or "missing", e,
            )
            return _reply(401, "refused", f"signature refused: {e}", webhook_id=webhook_id)
        if not webhook_id:  # verify() requires it; kept for type checkers and python -O
            return _reply(401, "refused", "signature refused: no webhook-id")
        try:
            rerun = _parse_call(json.loads(body), webhook_id)
        except (ValueError, _NotARerunCall) as e:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
            return self._refuse_body(webhook_id, str(e))

        state = self.store.claim(webhook_id, self.claim_timeout)
        if state == "done":
            log.info("rerun call %s received before: nothing done again", webhook_id)
            return _reply(200, "duplicate", webhook_id=webhook_id, rerun=rerun)
        if state == "running":
            log.info("rerun call %s is still being handled by an earlier delivery: answered 503", webhook_id)
            return _reply(
                503, "in_progress", "the first delivery of this webhook-id is still being handled",
                headers={"retry-after": str(self.retry_after)}, webhook_id=webhook_id, rerun=rerun,
            )
        if rerun.type == "rerun.test":
            self.store.finish(webhook_id, "test")
            log.info("conformance test call %s verified (handler not called)", webhook_id)
            return _reply(200, "test", webhook_id=webhook_id, rerun=rerun)
        try:
            self.handler(rerun)
        except Exception as e:
            reported = reported_outcome(e)
            if reported is not None:
                self.store.finish(webhook_id, "done")
                detail = reported.detail()
                log.warning(
                    "rerun %s of %s: the handler raised %s, whose outcome is already in Rerun Gate (%s); answered "
                    "200 and kept the webhook-id as handled, so the call is not resent. Rerun Gate shows the step "
                    "as stalled: a person looks at it there.",
                    rerun.rerun_id, rerun.process_id, type(e).__name__, detail,
                )
                return _reply(200, "done", detail, webhook_id=webhook_id, rerun=rerun)
            self.store.release(webhook_id)
            log.exception(
                "rerun %s of %s: the handler raised %s; answered 500 and released the webhook-id, so Rerun Gate's "
                "retry (same webhook-id, same step keys) runs it again. The exception was not reported to Rerun Gate "
                "by the step helper (it was raised outside a step, or its report could not be sent).",
                rerun.rerun_id, rerun.process_id, type(e).__name__,
            )
            return _reply(500, "failed", f"{type(e).__name__}: {e}"[:1000], webhook_id=webhook_id, rerun=rerun)
        except BaseException:
            self.store.release(webhook_id)
            raise
        self.store.finish(webhook_id, "done")
        log.info("rerun %s of %s done (steps %s)", rerun.rerun_id, rerun.process_id,
                 ", ".join(s.name for s in rerun.steps))
        return _reply(200, "done", webhook_id=webhook_id, rerun=rerun)

    def _refuse_body(self, webhook_id: str | None, detail: str) -> Reply:
        log.warning(
            "rerun call %s refused (422): %s. The signature was right, so the sender is Rerun Gate: update this "
            "kit if the server is newer.", webhook_id, detail,
        )
        return _reply(422, "refused", detail, webhook_id=webhook_id)

    def _route(self, method: str, path: str) -> Reply | None:
        if self.path is not None and path.rstrip("/") != self.path.rstrip("/"):
            return _reply(404, "not_found", f"no receiver at {path}")
        if method != "POST":
            r = _reply(405, "refused", "send the rerun call with POST")
            r.headers["allow"] = "POST"
            return r
        return None

    # -- WSGI ----------------------------------------------------------------------------------------------

    def wsgi(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        """The receiver as a WSGI application (``make_server(host, port, receiver.wsgi)``, gunicorn, Flask's
        ``DispatcherMiddleware``...)."""
        reply = self._route(str(environ.get("REQUEST_METHOD", "GET")), str(environ.get("PATH_INFO", "") or "/"))
        if reply is None:
            try:
                length = int(environ.get("CONTENT_LENGTH") or 0)
            except ValueError:
                length = 0
            if length > MAX_BODY:
                reply = _reply(413, "refused", "the body is too large for a rerun call")
            else:
                stream = environ["wsgi.input"]
                body = stream.read(length) if length > 0 else b""
                headers = {
                    key[5:].replace("_", "-").lower(): str(value)
                    for key, value in environ.items()
                    if key.startswith("HTTP_")
                }
                if environ.get("CONTENT_TYPE"):
                    headers["content-type"] = str(environ["CONTENT_TYPE"])
                reply = self.receive(body, headers)
        start_response(
            f"{reply.status} {_HTTP_REASONS.get(reply.status, 'Status')}",
            [*reply.headers.items(), ("content-length", str(len(reply.body)))],
        )
        return [reply.body]

    # -- ASGI ----------------------------------------------------------------------------------------------

    async def asgi(self, scope: ASGIScope, receive: ASGIReceive, send: ASGISend) -> None:
        """The receiver as an ASGI application (uvicorn, Starlette ``Mount``...). The handler runs in a worker
        thread, so a blocking handler does not stop the event loop."""
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        reply = self._route(str(scope.get("method", "GET")), str(scope.get("path", "/")))
        if reply is None:
            chunks: list[bytes] = []
            size = 0
            more = True
            while more:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return
                chunk = bytes(message.get("body", b""))
                size += len(chunk)
                if size > MAX_BODY:
                    reply = _reply(413, "refused", "the body is too large for a rerun call")
                    break
                chunks.append(chunk)
                more = bool(message.get("more_body", False))
            if reply is None:
                headers: dict[str, str] = {}
                for k, v in scope.get("headers", []):
                    headers[bytes(k).decode("latin-1").lower()] = bytes(v).decode("latin-1")
                body = b"".join(chunks)
                loop = asyncio.get_running_loop()
                reply = await loop.run_in_executor(None, self.receive, body, headers)
        await send({
            "type": "http.response.start",
            "status": reply.status,
            "headers": [
                (k.encode("latin-1"), v.encode("latin-1"))
                for k, v in [*reply.headers.items(), ("content-length", str(len(reply.body)))]
            ],
        })
        await send({"type": "http.response.body", "body": reply.body})

