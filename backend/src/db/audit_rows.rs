//! What the audit trail's queries share with the SQLite export's own reader (`sqlite::export`): the columns of
//! an event, a condition's value, and a piece of a CSV export. Both import them from here.
use chrono::{DateTime, Utc};

pub(crate) const EVENT_COLUMNS: &str =
    "seq, at, actor_kind, actor_id, actor_label, action, object_type, object_id, department,
    before_json, after_json, reason, request_id, prev_hash, hash";

/// A value a query's conditions bind.
pub(crate) enum Bind {
    Int(i64),
    Text(String),
    Time(DateTime<Utc>),
}

/// A piece of a CSV export: whole records, and how many.
pub struct CsvChunk {
    pub bytes: Vec<u8>,
    pub rows: u64,
}
