"""Where the kit keeps what must survive a restart.

* :class:`SeqStore`: the last ``seq`` sent for each step, so a restarted integration never sends an older
  number than it already sent (Rerun Gate ignores events that are not newer).
* :class:`ReceiptStore`: the ``webhook-id`` of every rerun call received, so a repeated delivery is not run
  twice.

:class:`FileStore` implements both on one SQLite file (standard library ``sqlite3``): every change is one
transaction, so several threads *and several processes* may share the file. Put it on durable local
storage (not a network share). Receipts of handled webhook-ids are dropped after ``receipt_retention_days``
(30): Rerun Gate resends a call for minutes or hours, never weeks. :class:`MemoryStore` implements both in
memory, for tests.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from contextlib import contextmanager
from typing import Iterator, Literal, Protocol, runtime_checkable

__all__ = ["SeqStore", "ReceiptStore", "ClaimState", "FileStore", "MemoryStore"]

#: What :meth:`ReceiptStore.claim` found: ``"claimed"`` (ours now: run it), ``"running"`` (another delivery
#: of the same webhook-id is being handled right now), ``"done"`` (handled before).
ClaimState = Literal["claimed", "running", "done"]


@runtime_checkable
class SeqStore(Protocol):
    """The last step-event ``seq`` per (process_id, step). Every method must be atomic."""

    def current_seq(self, process_id: str, step: str) -> int | None:
        """The last seq stored for the step, or ``None`` when nothing is stored."""
        ...

    def next_seq(self, process_id: str, step: str, floor: int = 0) -> int:
        """Store and return ``max(stored, floor) + 1`` in one atomic step."""
        ...

    def remember(self, process_id: str, step: str, seq: int) -> None:
        """Raise the stored seq to ``seq`` if it is lower (never lowers it)."""
        ...


@runtime_checkable
class ReceiptStore(Protocol):
    """Claims on ``webhook-id`` values. Every method must be atomic."""

    def claim(self, webhook_id: str, lease_seconds: float) -> ClaimState:
        """Claim ``webhook_id`` unless it is done, or claimed by someone else less than
        ``lease_seconds`` ago (an older claim is taken over: its holder is assumed to have died)."""
        ...

    def finish(self, webhook_id: str, outcome: str) -> None:
        """Mark a claimed webhook-id as handled for good."""
        ...

    def release(self, webhook_id: str) -> None:
        """Drop a claim (the handler failed) so the next delivery runs it again."""
        ...


class MemoryStore:
    """Both stores in memory (lost when the process ends): for tests and throw-away scripts."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seqs: dict[tuple[str, str], int] = {}
        self._receipts: dict[str, tuple[str, float]] = {}

    def current_seq(self, process_id: str, step: str) -> int | None:
        with self._lock:
            return self._seqs.get((process_id, step))

    def next_seq(self, process_id: str, step: str, floor: int = 0) -> int:
        with self._lock:
            seq = max(self._seqs.get((process_id, step), 0), floor) + 1
            self._seqs[(process_id, step)] = seq
            return seq

    def remember(self, process_id: str, step: str, seq: int) -> None:
        with self._lock:
            if seq > self._seqs.get((process_id, step), -1):
                self._seqs[(process_id, step)] = seq

    def claim(self, webhook_id: str, lease_seconds: float) -> ClaimState:
        now = time.time()
        with self._lock:
            held = self._receipts.get(webhook_id)
            if held is not None:
                state, at = held
                if state == "done":
                    return "done"
                if now - at < lease_seconds:
                    return "running"
            self._receipts[webhook_id] = ("running", now)
            return "claimed"

    def finish(self, webhook_id: str, outcome: str) -> None:
        with self._lock:
            self._receipts[webhook_id] = ("done", time.time())

    def release(self, webhook_id: str) -> None:
        with self._lock:
            held = self._receipts.get(webhook_id)
            if held is not None and held[0] == "running":
                del self._receipts[webhook_id]


_SCHEMA = """
CREATE TABLE IF NOT EXISTS step_seq (
    process_id TEXT NOT NULL,
    step TEXT NOT NULL,
    seq INTEGER NOT NULL,
    updated_at REAL NOT NULL,
    PRIMARY KEY (process_id, step)
);
CREATE TABLE IF NOT EXISTS webhook_receipt (
    webhook_id TEXT PRIMARY KEY,
    state TEXT NOT NULL CHECK (state IN ('running', 'done')),
    outcome TEXT,
    claimed_at REAL NOT NULL,
    finished_at REAL
);
CREATE INDEX IF NOT EXISTS webhook_receipt_finished ON webhook_receipt (state, finished_at);
"""

#: How long :class:`FileStore` keeps the receipt of a handled webhook-id, by default.
RECEIPT_RETENTION_DAYS = 30.0


class FileStore:
    """Both stores in one SQLite file at ``path`` (created if missing; its directory must exist).

    Safe for several threads and processes at once: each change is one ``BEGIN IMMEDIATE`` transaction
    (SQLite's file lock serialises writers; a writer waits up to ``timeout`` seconds for it).

    Receipts of handled webhook-ids older than ``receipt_retention_days`` (30) are dropped whenever a new one
    is finished (and by :meth:`purge_receipts`), so the file does not grow for ever; claims still running are
    never dropped. Rerun Gate stops resending a call long before (8 attempts with backoff); keep the default
    unless deliveries may come back later than that.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        timeout: float = 30.0,
        receipt_retention_days: float = RECEIPT_RETENTION_DAYS,
    ) -> None:
        if not receipt_retention_days > 0:
            raise ValueError("receipt_retention_days must be > 0")
        self.path = os.fspath(path)
        self._timeout = timeout
        self.receipt_retention_days = receipt_retention_days
        self._local = threading.local()
        directory = os.path.dirname(os.path.abspath(self.path))
        if not os.path.isdir(directory):
            raise FileNotFoundError(
                f"FileStore: the directory {directory!r} does not exist; create it (it must be durable "
                f"storage shared by every copy of this integration)"
            )
        conn = self._connect()
        try:
            # WAL: one fsync per change instead of three, and readers never wait for the writer. Durable with
            # synchronous=FULL (set on every connection). Needs a local file system (as SQLite itself does for locking).
            conn.execute("PRAGMA journal_mode=WAL")
            conn.executescript(_SCHEMA)
        finally:
            conn.close()

    def __repr__(self) -> str:
        return f"FileStore({self.path!r})"

    def _connect(self) -> sqlite3.Connection:
        # isolation_level=None: we issue BEGIN/COMMIT ourselves.
        conn = sqlite3.connect(self.path, timeout=self._timeout, isolation_level=None)
        conn.execute("PRAGMA synchronous=FULL")  # a committed seq survives a power cut
        return conn

    def _conn(self) -> sqlite3.Connection:
        """This thread's connection (one per thread and process, kept open: opening and closing one per call
        would checkpoint the WAL every time)."""
        held: tuple[int, sqlite3.Connection] | None = getattr(self._local, "conn", None)
        if held is None or held[0] != os.getpid():
            held = (os.getpid(), self._connect())
            self._local.conn = held
        return held[1]

    def close(self) -> None:
        """Close this thread's connection (others close when their thread's store is collected)."""
        held: tuple[int, sqlite3.Connection] | None = getattr(self._local, "conn", None)
        if held is not None and held[0] == os.getpid():
            held[1].close()
        self._local.conn = None

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    # SeqStore

    def current_seq(self, process_id: str, step: str) -> int | None:
        row = self._conn().execute(
            "SELECT seq FROM step_seq WHERE process_id = ? AND step = ?", (process_id, step)
        ).fetchone()
        return None if row is None else int(row[0])

    def next_seq(self, process_id: str, step: str, floor: int = 0) -> int:
        with self._transaction() as conn:
            row = conn.execute(
                "SELECT seq FROM step_seq WHERE process_id = ? AND step = ?", (process_id, step)
            ).fetchone()
            seq = max(0 if row is None else int(row[0]), floor) + 1
            conn.execute(
                "INSERT OR REPLACE INTO step_seq (process_id, step, seq, updated_at) VALUES (?, ?, ?, ?)",
                (process_id, step, seq, time.time()),
            )
            return seq

    def remember(self, process_id: str, step: str, seq: int) -> None:
        with self._transaction() as conn:
            row = conn.execute(
                "SELECT seq FROM step_seq WHERE process_id = ? AND step = ?", (process_id, step)
            ).fetchone()
            if row is None or int(row[0]) < seq:
                conn.execute(
                    "INSERT OR REPLACE INTO step_seq (process_id, step, seq, updated_at) VALUES (?, ?, ?, ?)",
                    (process_id, step, seq, time.time()),
                )

    # ReceiptStore

    def claim(self, webhook_id: str, lease_seconds: float) -> ClaimState:
        now = time.time()
        with self._transaction() as conn:
            row = conn.execute(
                "SELECT state, claimed_at FROM webhook_receipt WHERE webhook_id = ?", (webhook_id,)
            ).fetchone()
            if row is not None:
                if row[0] == "done":
                    return "done"
                if now - float(row[1]) < lease_seconds:
                    return "running"
            conn.execute(
                "INSERT OR REPLACE INTO webhook_receipt (webhook_id, state, outcome, claimed_at, finished_at) "
                "VALUES (?, 'running', NULL, ?, NULL)",
                (webhook_id, now),
            )
            return "claimed"

    def finish(self, webhook_id: str, outcome: str) -> None:
        now = time.time()
        with self._transaction() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO webhook_receipt (webhook_id, state, outcome, claimed_at, finished_at) "
                "VALUES (?, 'done', ?, COALESCE((SELECT claimed_at FROM webhook_receipt WHERE webhook_id = ?), ?), ?)",
                (webhook_id, outcome, webhook_id, now, now),
            )
            self._purge(conn, now)

    def purge_receipts(self, now: float | None = None) -> int:
        """Drop the receipts finished more than ``receipt_retention_days`` before ``now`` (default: the
        current time); returns how many were dropped."""
        with self._transaction() as conn:
            return self._purge(conn, time.time() if now is None else now)

    def _purge(self, conn: sqlite3.Connection, now: float) -> int:
        cutoff = now - self.receipt_retention_days * 86400.0
        cursor = conn.execute(
            "DELETE FROM webhook_receipt WHERE state = 'done' AND finished_at < ?", (cutoff,)
        )
        return max(0, cursor.rowcount)

    def release(self, webhook_id: str) -> None:
        with self._transaction() as conn:
            conn.execute("DELETE FROM webhook_receipt WHERE webhook_id = ? AND state = 'running'", (webhook_id,))
