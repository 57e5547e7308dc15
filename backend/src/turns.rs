//! Turns at a bounded piece of work: so many run at once, so many may wait for a turn, for so long; beyond
//! that the caller is told to come back (429 or 503) at once instead of waiting for a resource that is not
//! coming. The password checks and the admission of each kind of request (pages, API, exports) take turns so.
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::histogram::Histogram;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How much of a piece of work runs at once, how many may wait, and how long one waits at most (`None`: as
/// long as it takes; the queue's length bounds the wait).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub at_once: usize,
    pub waiting: usize,
    pub max_wait: Option<Duration>,
}

pub struct Turns {
    turns: Arc<Semaphore>,
    limits: Limits,
    waiting: AtomicUsize,
    /// The most that ran at once since start (the flood tests read it).
    peak: AtomicUsize,
    /// How long each turn was waited for, and how many were refused.
    pub waits: Histogram,
    pub refused: Counter,
}

/// No turn now: the queue is full, or the wait ran out.
#[derive(Debug, PartialEq, Eq)]
pub struct Busy;

/// A turn: the work holds it until it ends (moved into a blocking task, or into a response's body).
pub struct Turn(#[allow(dead_code)] OwnedSemaphorePermit);

impl Turns {
    pub fn new(limits: Limits) -> Self {
        let limits = Limits { at_once: limits.at_once.max(1), ..limits };
        Turns {
            turns: Arc::new(Semaphore::new(limits.at_once)),
            limits,
            waiting: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            waits: crate::metrics::wait_histogram(),
            refused: Counter::default(),
        }
    }

    pub async fn turn(&self) -> Result<Turn, Busy> {
        let started = Instant::now();
        let taken = self.take().await;
        match &taken {
            Ok(_) => self.waits.observe(started.elapsed().as_secs_f64()),
            Err(Busy) => {
                self.refused.inc();
            }
        }
        taken
    }

    async fn take(&self) -> Result<Turn, Busy> {
        if let Ok(permit) = self.turns.clone().try_acquire_owned() {
            return Ok(self.taken(permit));
        }
        if self.waiting.fetch_add(1, Ordering::SeqCst) >= self.limits.waiting {
            self.waiting.fetch_sub(1, Ordering::SeqCst);
            return Err(Busy);
        }
        let acquire = self.turns.clone().acquire_owned();
        let permit = match self.limits.max_wait {
            Some(wait) => tokio::time::timeout(wait, acquire).await.ok(),
            None => Some(acquire.await),
        };
        self.waiting.fetch_sub(1, Ordering::SeqCst);
        match permit {
            Some(Ok(permit)) => Ok(self.taken(permit)),
            _ => Err(Busy),
        }
    }

    fn taken(&self, permit: OwnedSemaphorePermit) -> Turn {
        self.peak.fetch_max(self.limits.at_once - self.turns.available_permits(), Ordering::SeqCst);
        Turn(permit)
    }

    /// Every turn, held until the returned value is dropped: what a saturated server looks like (tests).
    pub async fn take_every_turn(&self) -> Turn {
        let permit = self.turns.clone().acquire_many_owned(self.limits.at_once as u32).await;
        Turn(permit.expect("the semaphore is never closed"))
    }

    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_full_queue_is_refused_at_once_and_a_wait_ends_at_its_limit() {
        let turns = Turns::new(Limits { at_once: 1, waiting: 1, max_wait: Some(Duration::from_millis(50)) });
        let held = turns.turn().await.unwrap();
        let (waiter, refused) = tokio::join!(turns.turn(), async {
            tokio::task::yield_now().await;
            turns.turn().await
        });
        assert_eq!(waiter.err(), Some(Busy), "the one waiting gives up after its limit");
        assert_eq!(refused.err(), Some(Busy), "the second finds the queue full");
        assert_eq!(turns.refused.get(), 2);
        drop(held);
        assert!(turns.turn().await.is_ok(), "a turn is free again once the work ends");
    }

    #[tokio::test]
    async fn a_waiter_gets_the_turn_that_ends_while_it_waits() {
        let turns = Arc::new(Turns::new(Limits { at_once: 1, waiting: 4, max_wait: None }));
        let held = turns.turn().await.unwrap();
        let waiter = tokio::spawn({
            let turns = turns.clone();
            async move { turns.turn().await.is_ok() }
        });
        tokio::time::sleep(Duration::from_millis(10)).await;
        drop(held);
        assert!(waiter.await.unwrap());
        assert_eq!(turns.peak(), 1);
    }
}
