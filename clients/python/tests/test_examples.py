"""The examples, run as the suite runs them (processes configured by environment variables), against a fake
Rerun Gate on 127.0.0.1 (tests/_loopback.py)."""

from __future__ import annotations

import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any, Iterator

import httpx
import pytest

from _loopback import LoopbackGate
from conftest import TOKEN, FakeGate
from test_receiver import SECRET, call_body, signed

KIT = Path(__file__).resolve().parent.parent
EXAMPLES = KIT / "examples" / "order-intake"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture
def loopback(gate: FakeGate) -> Iterator[LoopbackGate]:
    with LoopbackGate(gate) as lb:
        yield lb


def example_env(loopback_url: str, state_dir: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"RERUN_GATE_URL": loopback_url, "RERUN_GATE_TOKEN": TOKEN, "OUTSIDE_URL": f"{loopback_url}/demo",
                "RERUN_GATE_SIGNING_SECRET": SECRET, "STATE_DIR": str(state_dir), "PROCESS_ID": "ORD-5001", **extra})
    return env


class Lines:
    """Reads a process's stdout lines in a thread, so a test can wait for one with a timeout."""

    def __init__(self, stream: IO[str]) -> None:
        self.q: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream: IO[str]) -> None:
        for line in stream:
            self.q.put(line.rstrip("\n"))

    def next(self, timeout: float = 10) -> str:
        return self.q.get(timeout=timeout)

    def empty(self) -> bool:
        return self.q.empty()


def run_intake(env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run([sys.executable, str(EXAMPLES / "intake.py")], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    last = done.stdout.strip().splitlines()[-1]
    result: dict[str, Any] = json.loads(last)
    return result


def test_intake_then_receiver(loopback: LoopbackGate, gate: FakeGate, tmp_path: Path) -> None:
    env = example_env(loopback.url, tmp_path)
    result = run_intake(env)
    assert result == {"registered": True, "registration_replayed": True, "order_id": result["order_id"],
                      "order_replayed": True, "correction_refused": True}
    assert gate.step("ORD-5001", "register_order")["result_id"] == result["order_id"]
    assert gate.step("ORD-5001", "register_order")["state"] == "succeeded"
    assert gate.step("ORD-5001", "ai_summary")["state"] == "not_started"  # the crash
    assert len(loopback.demo) == 1  # one order, though it was sent three times

    port = free_port()
    proc = subprocess.Popen([sys.executable, str(EXAMPLES / "receiver.py")],
                            env={**env, "RECEIVER_PORT": str(port)}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        lines = Lines(proc.stdout)  # type: ignore[arg-type]
        assert lines.next() == f"listening {port}"
        url = f"http://127.0.0.1:{port}/rerun"

        raw, headers = signed(call_body("rr_9", process_id="ORD-5001",
                                        steps=[{"name": "ai_summary", "idempotency_key": "ORD-5001:ai_summary"}]),
                              "rr_9")
        r = httpx.post(url, content=raw, headers=headers, timeout=10)
        assert (r.status_code, r.json()) == (200, {"outcome": "done"})
        assert json.loads(lines.next()) == {"webhook_id": "rr_9", "outcome": "done", "steps": ["ai_summary"]}
        ai = gate.step("ORD-5001", "ai_summary")
        assert ai["state"] == "succeeded" and ai["result_id"] == loopback.demo[("ai", "ORD-5001:ai_summary")]["id"]

        r = httpx.post(url, content=raw, headers=headers, timeout=10)
        assert r.json() == {"outcome": "duplicate"}
        assert json.loads(lines.next()) == {"webhook_id": "rr_9", "outcome": "duplicate", "steps": ["ai_summary"]}

        # Another rerun of the same step (a new webhook-id): it is completed, so run_step does not run it again.
        attempts = gate.step("ORD-5001", "ai_summary")["attempts"]
        raw, headers = signed(call_body("rr_10", process_id="ORD-5001",
                                        steps=[{"name": "ai_summary", "idempotency_key": "ORD-5001:ai_summary"}]),
                              "rr_10")
        r = httpx.post(url, content=raw, headers=headers, timeout=10)
        assert (r.status_code, r.json()) == (200, {"outcome": "done"})
        assert json.loads(lines.next()) == {"webhook_id": "rr_10", "outcome": "done", "steps": ["ai_summary"]}
        assert gate.step("ORD-5001", "ai_summary")["attempts"] == attempts  # not even `started`
        assert loopback.demo[("ai", "ORD-5001:ai_summary")]["replays"] == 0  # the AI service was not called

        raw, headers = signed(call_body("rt_1", "rerun.test"), "rt_1")
        assert httpx.post(url, content=raw, headers=headers, timeout=10).json() == {"outcome": "test"}
        assert json.loads(lines.next())["outcome"] == "test"

        assert httpx.post(url, content=raw, headers={**headers, "webhook-signature": "v1,AAAA"}).status_code == 401
        assert httpx.post(f"http://127.0.0.1:{port}/other", content=raw, headers=headers).status_code == 404
        assert lines.empty()  # refusals print nothing on stdout
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=10)
        if proc.stderr is not None:
            proc.stderr.close()
    assert code == 0
    assert len([k for k in loopback.demo if k[0] == "ai"]) == 1
