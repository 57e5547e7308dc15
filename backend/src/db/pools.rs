//! The connection pools: one for the work that must never wait behind browsing (the ingestion API, webhooks,
//! the dispatcher, the sweeper, the signer), one for the pages, one for exports. Each `Db` reads through one
//! of them and they share the engine's writer. How long each acquire waited is kept for `/metrics`.
use prometheus_client::metrics::histogram::Histogram;
use std::time::{Duration, Instant};

/// Which pool a `Db` reads through.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PoolKind {
    Work,
    Pages,
    Exports,
}

impl PoolKind {
    pub fn as_str(self) -> &'static str {
        match self {
            PoolKind::Work => "work",
            PoolKind::Pages => "pages",
            PoolKind::Exports => "exports",
        }
    }
}

/// The pools' sizes and how long an acquire may wait (`RERUN_GATE_DB_*`, docs/operations.md). The defaults fit
/// a 2-core machine; the test of "no request holds two connections" runs with one connection each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolSettings {
    pub work: u32,
    pub pages: u32,
    pub exports: u32,
    /// A backstop: admission control keeps waits far below it. Past it the caller gets 503 (`AppError::Busy`).
    pub acquire_timeout: Duration,
}

impl Default for PoolSettings {
    fn default() -> Self {
        PoolSettings { work: 6, pages: 8, exports: 2, acquire_timeout: Duration::from_secs(10) }
    }
}

impl PoolSettings {
    pub fn size(&self, kind: PoolKind) -> u32 {
        match kind {
            PoolKind::Work => self.work,
            PoolKind::Pages => self.pages,
            PoolKind::Exports => self.exports,
        }
    }
}

/// What one pool's acquires waited.
#[derive(Debug)]
pub struct PoolWatch {
    pub kind: PoolKind,
    pub waits: Histogram,
}

impl PoolWatch {
    pub fn new(kind: PoolKind) -> Self {
        PoolWatch { kind, waits: crate::metrics::wait_histogram() }
    }

    /// Times `acquire` (a connection, or a `BEGIN` on one) and keeps how long it took.
    pub async fn timed<T>(&self, acquire: impl Future<Output = T>) -> T {
        let started = Instant::now();
        let acquired = acquire.await;
        self.waits.observe(started.elapsed().as_secs_f64());
        acquired
    }
}
