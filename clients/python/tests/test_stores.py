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
