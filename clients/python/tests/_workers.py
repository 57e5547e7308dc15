"""Functions run in other processes by test_stores.py (kept apart so the children import little)."""

from __future__ import annotations

from typing import Any

from rerun_gate.stores import FileStore


def take_and_claim(path: str, n: int, queue: Any) -> None:
    store = FileStore(path)
    claim = store.claim("same-webhook-id", 60)
    queue.put((claim, [store.next_seq("P", "s") for _ in range(n)]))
