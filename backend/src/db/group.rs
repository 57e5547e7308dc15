//! The line of writes waiting for this process's writer, for group commit on either engine: the first write
//! that finds nobody leading leads; the ones that come meanwhile wait in line, and the leader writes them with
//! its own in one transaction, tells each its outcome, and hands the lead to the first that came after.
use super::registrations::Registration;
use chrono::{DateTime, Utc};
use domain::audit::AuditEntry;
use domain::steps::Step;
use std::collections::VecDeque;
use tokio::sync::oneshot;

/// A write that may share a commit with others: what it writes, and its audit event.
#[derive(Debug)]
pub struct Change {
    pub write: Write,
    pub entry: AuditEntry,
    pub now: DateTime<Utc>,
}

#[derive(Debug)]
pub enum Write {
    /// A step's new row, with the revision it was decided on.
    Step(Step),
    /// A new operation (`services::registration`).
    Registration(Registration),
}

/// At most this many writes share a transaction.
pub(super) const MAX_GROUP: usize = 64;

#[derive(Debug, Default)]
pub(super) struct Queue(std::sync::Mutex<Line>);

#[derive(Debug, Default)]
struct Line {
    led: bool,
    waiting: VecDeque<Waiting>,
}

/// A write in line, and where its outcome goes.
#[derive(Debug)]
pub(super) struct Waiting {
    pub change: Change,
    done: oneshot::Sender<Outcome>,
}

impl Waiting {
    pub fn answer(self, written: bool) {
        let _ = self.done.send(Outcome::Written(written)); // its request may be gone
    }
}

#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // one per write through a oneshot: a box would only add an allocation
enum Outcome {
    Written(bool),
    /// Lead the next group, starting with this change (the receiver's own).
    Lead(Change),
}

/// A write's turn: written (or not) by another leader, or its own to lead.
#[allow(clippy::large_enum_variant)] // one per write, returned at once: a box would only add an allocation
pub(super) enum Turn<'q> {
    Done(bool),
    Lead(Change, Leading<'q>),
}

/// Held while leading: on the way out, however it ends, the lead passes to the first write in line.
pub(super) struct Leading<'q>(&'q Queue);

impl Queue {
    fn line(&self) -> std::sync::MutexGuard<'_, Line> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub async fn join(&self, change: Change) -> Turn<'_> {
        let outcome = {
            let mut line = self.line();
            if !line.led {
                line.led = true;
                return Turn::Lead(change, Leading(self));
            }
            let (done, outcome) = oneshot::channel();
            line.waiting.push_back(Waiting { change, done });
            outcome
        };
        match outcome.await {
            Ok(Outcome::Written(written)) => Turn::Done(written),
            Ok(Outcome::Lead(change)) => Turn::Lead(change, Leading(self)),
            Err(_) => Turn::Done(false), // the leader stopped half-way: the ordinary path finds out what was written
        }
    }
}

impl Leading<'_> {
    /// The writes in line now, up to what shares a transaction with the leader's own.
    pub fn take(&self) -> Vec<Waiting> {
        let mut line = self.0.line();
        let take = line.waiting.len().min(MAX_GROUP - 1);
        line.waiting.drain(..take).collect()
    }
}

impl Drop for Leading<'_> {
    fn drop(&mut self) {
        let mut line = self.0.line();
        while let Some(next) = line.waiting.pop_front() {
            match next.done.send(Outcome::Lead(next.change)) {
                Ok(()) => return,
                Err(_) => continue, // its request is gone
            }
        }
        line.led = false;
    }
}
