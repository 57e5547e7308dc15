//! The steps this instance changed last, as it wrote them. The next event for the same step is decided on the
//! remembered row instead of a fresh read: one database round trip less on the ingestion's hot path. Only a
//! guess: the write is a compare-and-set on the row's revision, which anything that changed the step since
//! (another instance, a rerun, a verdict) has moved on; the event is then decided again on the row as read.
use domain::steps::Step;
use std::collections::HashMap;
use std::sync::Mutex;

/// Enough for every step in flight at a busy moment; when full it starts again empty.
const CAPACITY: usize = 4_096;

#[derive(Default)]
pub struct KnownSteps(Mutex<HashMap<(String, String), KnownStep>>);

/// A step as this instance last wrote it (without its content, which events never change), and what an event
/// needs of its operation (neither changes).
#[derive(Clone)]
pub struct KnownStep {
    pub step: Step,
    pub workflow: String,
    pub department: String,
}

impl KnownSteps {
    pub fn get(&self, process_id: &str, step: &str) -> Option<KnownStep> {
        self.lock().get(&(process_id.to_string(), step.to_string())).cloned()
    }

    /// `step` was just written at its revision, which the write moved on.
    pub fn written(&self, process_id: &str, mut step: Step, workflow: &str, department: &str) {
        step.revision += 1;
        step.content_json = None;
        let mut known = self.lock();
        if known.len() >= CAPACITY {
            known.clear();
        }
        let key = (process_id.to_string(), step.name.clone());
        known.insert(key, KnownStep { step, workflow: workflow.to_string(), department: department.to_string() });
    }

    pub fn forget(&self, process_id: &str, step: &str) {
        self.lock().remove(&(process_id.to_string(), step.to_string()));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), KnownStep>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}
