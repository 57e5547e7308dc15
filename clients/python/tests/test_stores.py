"""FileStore and MemoryStore: seqs and webhook-id claims, atomic across threads and processes."""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from _workers import take_and_claim
from rerun_gate import FileStore, MemoryStore, ReceiptStore, SeqStore

Maker = Callable[[Path], Any]
STORES: list[Maker] = [lambda p: MemoryStore(), lambda p: FileStore(p / "store.sqlite")]
IDS = ["memory", "file"]


@pytest.mark.parametrize("make", STORES, ids=IDS)
def test_seq_store(make: Maker, tmp_path: Path) -> None:
    store = make(tmp_path)
    assert isinstance(store, SeqStore) and isinstance(store, ReceiptStore)
    assert store.current_seq("P", "s") is None
    assert store.next_seq("P", "s") == 1
    assert store.next_seq("P", "s", floor=0) == 2
    assert store.next_seq("P", "s", floor=10) == 11  # max(stored, floor) + 1
    assert store.next_seq("P", "s", floor=3) == 12
    assert store.current_seq("P", "s") == 12
    store.remember("P", "s", 5)  # never lowers
    assert store.current_seq("P", "s") == 12
    store.remember("P", "s", 20)
    assert store.next_seq("P", "s") == 21
    assert store.current_seq("P", "other") is None and store.current_seq("Q", "s") is None


@pytest.mark.parametrize("make", STORES, ids=IDS)
def test_receipt_store(make: Maker, tmp_path: Path) -> None:
    store = make(tmp_path)
    assert store.claim("w1", 60) == "claimed"
    assert store.claim("w1", 60) == "running"
    store.release("w1")
    assert store.claim("w1", 60) == "claimed"
    store.finish("w1", "done")
    assert store.claim("w1", 60) == "done"
    store.release("w1")  # a finished one is never released
    assert store.claim("w1", 60) == "done"
    assert store.claim("w2", 60) == "claimed"
    time.sleep(0.02)
    assert store.claim("w2", 0.01) == "claimed"  # an old claim (its holder died) is taken over


def test_file_store_needs_an_existing_directory(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        FileStore(tmp_path / "missing" / "s.sqlite")


def test_file_store_is_atomic_across_processes(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.sqlite")
    FileStore(path)
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=take_and_claim, args=(path, 50, queue)) for _ in range(3)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=30) for _ in procs]
    for p in procs:
        p.join(timeout=30)
    assert sorted(claim for claim, _ in results) == ["claimed", "running", "running"]  # one claim wins
    assert sorted(seq for _, seqs in results for seq in seqs) == list(range(1, 151))  # no seq taken twice


def age_receipt(store: FileStore, webhook_id: str, days: float) -> None:
    """Make a finished receipt look ``days`` old (as if it had been finished then)."""
    when = time.time() - days * 86400
    store._conn().execute("UPDATE webhook_receipt SET claimed_at = ?, finished_at = ? WHERE webhook_id = ?",
                          (when, when, webhook_id))


def test_file_store_drops_finished_receipts_after_30_days(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "r.sqlite")
    assert store.receipt_retention_days == 30
    for webhook_id in ("old", "recent"):
        assert store.claim(webhook_id, 60) == "claimed"
        store.finish(webhook_id, "done")
    age_receipt(store, "old", 31)
    age_receipt(store, "recent", 29)
    assert store.claim("running-long", 60) == "claimed"  # a claim is never dropped, however old
    store._conn().execute("UPDATE webhook_receipt SET claimed_at = ? WHERE webhook_id = 'running-long'",
                          (time.time() - 40 * 86400,))
    store.finish("new", "done")  # finishing one purges the expired ones
    rows = dict(store._conn().execute("SELECT webhook_id, state FROM webhook_receipt").fetchall())
    assert rows == {"recent": "done", "running-long": "running", "new": "done"}
    assert store.claim("recent", 60) == "done"
    assert store.claim("old", 60) == "claimed"  # forgotten (Rerun Gate stopped resending weeks before)


def test_file_store_receipt_retention_is_configurable(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "r.sqlite", receipt_retention_days=1)
    store.claim("a", 60)
    store.finish("a", "done")
    age_receipt(store, "a", 0.5)
    assert store.purge_receipts() == 0 and store.claim("a", 60) == "done"
    assert store.purge_receipts(now=time.time() + 86400) == 1  # a day later
    assert store.claim("a", 60) == "claimed"
    with pytest.raises(ValueError, match="receipt_retention_days"):
        FileStore(tmp_path / "r.sqlite", receipt_retention_days=0)
