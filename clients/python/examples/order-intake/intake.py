"""Order intake, the story's first half: register, place the order, refuse a correction, then "crash".

Run: ``python examples/order-intake/intake.py`` with RERUN_GATE_URL, RERUN_GATE_TOKEN, OUTSIDE_URL, STATE_DIR and
PROCESS_ID set (see the README). Prints one JSON line on stdout; logs go to stderr.

1. Register PROCESS_ID in workflow ``order-intake``. The first attempt's answer is lost on purpose (a transport
   that sends the request, then throws as if the connection broke): the kit retries with the same key and gets
   the stored answer back (``replayed``).
2. Step ``register_order`` with the step helper: POST the order to the order system with the step's key. The
   first call's answer is lost (``demo-fault: drop-answer``); we retry with the SAME key and get the same order
   back (replayed). The step is reported succeeded with the order's id.
3. The 5,000 yen "correction" with the same key: the order system refuses it (409); nothing is changed.
4. Exit before ``ai_summary`` (the crash of the story): the rerun receiver runs it later.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from typing import Any

import httpx

from rerun_gate import Client, FileStore, Step


class LoseFirstRegistrationAnswer(httpx.BaseTransport):
    """Sends every request; throws away the answer of the first registration, as if the connection broke."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self.inner = inner
        self.lost = False

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        if not self.lost and request.method == "POST" and request.url.path.endswith("/api/v1/operations"):
            self.lost = True
            response.read()
            response.close()
            raise httpx.RemoteProtocolError("the connection broke before the answer (simulated)", request=request)
        return response

    def close(self) -> None:
        self.inner.close()


def post_outside(
    http: httpx.Client, url: str, key: str, process_id: str, content: dict[str, Any], *, drop_answer: bool = False
) -> httpx.Response:
    headers = {"Idempotency-Key": key, "process-id": process_id}
    if drop_answer:
        headers["demo-fault"] = "drop-answer"
    return http.post(url, json=content, headers=headers)


def main() -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="intake %(levelname)s %(name)s: %(message)s")
    base = os.environ["RERUN_GATE_URL"].rstrip("/")
    token = os.environ["RERUN_GATE_TOKEN"]
    outside = os.environ["OUTSIDE_URL"].rstrip("/")
    state_dir = os.environ["STATE_DIR"]
    pid = os.environ["PROCESS_ID"]

    store = FileStore(os.path.join(state_dir, "rerun-gate.sqlite"))
    transport = LoseFirstRegistrationAnswer(httpx.HTTPTransport())
    order = {"amount": 4000, "currency": "JPY"}

    with Client(base, token, store=store, http=httpx.Client(transport=transport, timeout=10.0),
                backoff=0.2) as client, httpx.Client(timeout=10.0) as outside_http:
        # (1) Registration: keys derived by the kit ("<pid>:<step>", "register:order-intake:<pid>").
        registration = client.register(
            pid, "order-intake", "sales",
            steps=[Step("register_order", content=order), Step("ai_summary", content={"order": pid})],
            business_key=f"ORDER-{pid}",
        )

        # (2) The order, reported with the step helper.
        order_url = f"{outside}/orders/requests"
        with client.step(pid, "register_order") as step:
            try:
                answer = post_outside(outside_http, order_url, step.idempotency_key, pid, order, drop_answer=True)
            except (httpx.RemoteProtocolError, httpx.ReadError, httpx.TimeoutException) as lost:
                # The order may have been placed: ask again with the SAME key (the order system deduplicates).
                logging.info("the order system's answer was lost (%s); asking again with the same key", lost)
                answer = post_outside(outside_http, order_url, step.idempotency_key, pid, order)
            answer.raise_for_status()
            placed = answer.json()
            order_replayed = answer.headers.get("idempotency-replayed", "").lower() == "true"
            step.succeeded(str(placed["id"]))

        # (3) The 5,000 yen "correction" under the same key: refused by the order system, nothing changes.
        correction = post_outside(outside_http, order_url, step.idempotency_key, pid,
                                  {"amount": 5000, "currency": "JPY"})
        correction_refused = correction.status_code == 409
        if correction_refused:
            logging.info("the order system refused the correction under the same key (409): a changed order is a "
                         "new order with a new process id; nothing was changed")
        else:
            logging.error("the correction was not refused: %s %s", correction.status_code, correction.text)

    # (4) The crash: ai_summary is never started here.
    print(json.dumps({
        "registered": True,
        "registration_replayed": registration.replayed,
        "order_id": str(placed["id"]),
        "order_replayed": order_replayed,
        "correction_refused": correction_refused,
    }), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
