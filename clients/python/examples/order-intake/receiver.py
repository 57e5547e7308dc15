"""Order intake, the story's second half: the rerun receiver.

Run: ``python examples/order-intake/receiver.py`` with RERUN_GATE_URL, RERUN_GATE_TOKEN, OUTSIDE_URL,
RERUN_GATE_SIGNING_SECRET, STATE_DIR and RECEIVER_PORT set. Serves http://127.0.0.1:RECEIVER_PORT/rerun, prints
``listening <port>`` once ready, then one JSON line per handled call; logs go to stderr. SIGTERM: exit 0.

For each approved rerun it runs the listed steps (only those) with ``client.run_step`` and each step's ORIGINAL
idempotency key, so the outside system deduplicates whatever had already happened, and a step Rerun Gate already
has as completed (the call delivered again after its first steps succeeded) is not run at all.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
from socketserver import ThreadingMixIn
from types import FrameType
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import httpx

from rerun_gate import Client, FileStore, Rerun, RerunReceiver, Reply, StepFailed, StepRun


class ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    """One thread per call, so a repeat arriving while the first is running is answered (503) at once."""

    daemon_threads = True


class QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        logging.getLogger("receiver.http").info(format, *args)


def main() -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="receiver %(levelname)s %(name)s: %(message)s")
    base = os.environ["RERUN_GATE_URL"].rstrip("/")
    token = os.environ["RERUN_GATE_TOKEN"]
    outside = os.environ["OUTSIDE_URL"].rstrip("/")
    secret = os.environ["RERUN_GATE_SIGNING_SECRET"]
    state_dir = os.environ["STATE_DIR"]
    port = int(os.environ["RECEIVER_PORT"])

    store = FileStore(os.path.join(state_dir, "rerun-gate.sqlite"))
    client = Client(base, token, store=store)
    outside_http = httpx.Client(timeout=8.0)

    def call_outside(service: str, key: str, process_id: str, content: dict[str, Any]) -> str:
        answer = outside_http.post(
            f"{outside}/{service}/requests", json=content,
            headers={"Idempotency-Key": key, "process-id": process_id},
        )
        answer.raise_for_status()  # a 4xx is reported failed/validation, a 5xx failed/server_error
        return str(answer.json()["id"])

    def handle(rerun: Rerun) -> None:
        process_id = rerun.process_id

        def run(step: StepRun) -> str:  # returns the outside system's id: reported `succeeded` with it
            if step.name == "ai_summary":
                return call_outside("ai", step.idempotency_key, process_id, {"order": process_id})
            if step.name == "register_order":
                return call_outside("orders", step.idempotency_key, process_id, {"amount": 4000, "currency": "JPY"})
            raise StepFailed("validation", f"this integration has no step {step.name!r}")

        for s in rerun.steps:
            # A failed/unknown outcome is reported by run_step and ends the delivery (the receiver answers 200
            # with what was reported: Rerun Gate shows the stall); a completed step is skipped.
            client.run_step(process_id, s.name, run, idempotency_key=s.idempotency_key)

    def on_reply(reply: Reply) -> None:
        if reply.outcome in ("done", "duplicate", "test"):
            print(json.dumps({"webhook_id": reply.webhook_id, "outcome": reply.outcome, "steps": reply.steps}),
                  flush=True)

    receiver = RerunReceiver(secret, handle, store, path="/rerun", on_reply=on_reply)
    server = make_server("127.0.0.1", port, receiver.wsgi, server_class=ThreadingWSGIServer,
                         handler_class=QuietHandler)

    def stop(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    print(f"listening {port}", flush=True)
    try:
        server.serve_forever()
    except (SystemExit, KeyboardInterrupt):
        pass
    finally:
        server.server_close()
        outside_http.close()
        client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
