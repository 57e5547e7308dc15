// PATCHED (the whole file): see PATCHED.md.
//! Keeps an isomorphic effect's runs and its owner's disposal apart.
//!
//! On the server an isomorphic effect runs in a task of its own, on any worker thread, while the
//! response that owns it may be disposed on another: at the end of its stream, or when the visitor
//! leaves mid-page. A run that starts after (or while) the owner's arena items are removed reads
//! disposed signals and panics (Suspense's own effect re-walks its children there). So:
//! - a run starts only while the effect's owner and every ancestor can be upgraded, and holds them,
//!   so that none of them is dropped during the run;
//! - the cleanup of the owner the effect was created under first stops the effect, waiting for a run
//!   in progress on another thread to end, before it touches children, cleanups or arena items.

use crate::owner::Owner;
use std::{
    sync::{Arc, Condvar, Mutex},
    thread::{self, ThreadId},
};

#[derive(Default)]
struct State {
    stopped: bool,
    running_on: Option<ThreadId>,
}

#[derive(Default)]
pub(crate) struct RunGuard {
    state: Mutex<State>,
    ended: Condvar,
}

/// A run in progress: holds the owners alive, and marks the run ended when dropped.
pub(crate) struct Running<'a> {
    guard: &'a RunGuard,
    _owners: Vec<Arc<dyn Send + Sync>>,
}

impl RunGuard {
    /// A guard stopped by the cleanup of the current owner (the one the effect is created under).
    pub(crate) fn new() -> Arc<Self> {
        let guard = Arc::new(RunGuard::default());
        if let Some(parent) = Owner::current() {
            let stop = Arc::clone(&guard);
            parent.on_pre_cleanup(move || stop.stop());
        }
        guard
    }

    /// Starts a run of the effect whose own owner is `owner`; `None` when it must not run any more.
    pub(crate) fn enter(&self, owner: &Owner) -> Option<Running<'_>> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.stopped {
            return None;
        }
        let Some(owners) = owner.ancestors_alive() else {
            state.stopped = true;
            return None;
        };
        state.running_on = Some(thread::current().id());
        Some(Running {
            guard: self,
            _owners: owners.into_iter().map(|o| o as Arc<dyn Send + Sync>).collect(),
        })
    }

    /// No run starts from now on; a run in progress on another thread is waited for. (A run on this
    /// thread is the one disposing its own owner, as on the client: it is not waited for.)
    fn stop(&self) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.stopped = true;
        let here = thread::current().id();
        while state.running_on.is_some_and(|on| on != here) {
            state = self.ended.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        let mut state =
            self.guard.state.lock().unwrap_or_else(|e| e.into_inner());
        state.running_on = None;
        drop(state);
        self.guard.ended.notify_all();
        // The owners are released after the run is marked ended: releasing the last reference may
        // dispose them, here, and run `stop`.
    }
}
