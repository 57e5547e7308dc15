//! What a connector is: one trait, and what a look-up knows and a webhook says.
use contract::AppError;
use domain::drills::Fault;
use domain::reconciliation::{Finding, Record};
use serde_json::Value;

/// What a look-up knows of the step it asks about.
#[derive(Clone, Debug)]
pub struct Lookup {
    pub process_id: String,
    pub step: String,
    pub idempotency_key: String,
    pub result_id: Option<String>,
}

/// What an inbound webhook says about one step's record.
#[derive(Clone, Debug)]
pub struct WebhookRecord {
    pub idempotency_key: Option<String>,
    pub record: Record,
}

#[async_trait::async_trait]
pub trait Connector: Send + Sync {
    /// Asks the outside system about one step. Never fails: a failed look-up is a finding of its own.
    async fn look_up(&self, lookup: &Lookup) -> Finding;

    /// Reads the record a webhook carries, in the shape this provider's look-ups return.
    fn webhook_record(&self, record: &Value) -> WebhookRecord;

    /// Which fields of this provider's records a step's content is compared with.
    fn fields_read(&self) -> FieldsRead;

    /// Does a step's work at this outside system, meeting `fault` on purpose: the result ID, or the error the
    /// system gave. Only a practice system can (the demo's); drills run their practice operations through it.
    /// A real provider is only ever asked, never told: `None`.
    async fn practise(&self, _key: &str, _process_id: &str, _fault: Fault) -> Option<Result<String, AppError>> {
        None
    }
}

/// The fields of a record a connector reads, by the names a step's content gives them (`fields` in the
/// connector's settings).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FieldsRead {
    /// None: a record found done can only ever be "executed, content not compared".
    Nothing,
    These(Vec<String>),
    /// Every field the step was sent with (a practice system that keeps what it was sent).
    AsSent,
}

impl FieldsRead {
    /// Whether a step with this content would have a field compared.
    pub fn meets(&self, content: &serde_json::Map<String, Value>) -> bool {
        match self {
            FieldsRead::Nothing => false,
            FieldsRead::These(names) => names.iter().any(|name| content.contains_key(name)),
            FieldsRead::AsSent => !content.is_empty(),
        }
    }
}

/// `a.b.0.c`: object keys and array indexes, as the settings name places in a JSON answer.
pub fn json_path<'v>(value: &'v Value, path: &str) -> Option<&'v Value> {
    path.split('.').try_fold(value, |v, part| match v {
        Value::Object(map) => map.get(part),
        Value::Array(items) => part.parse::<usize>().ok().and_then(|i| items.get(i)),
        _ => None,
    })
}
