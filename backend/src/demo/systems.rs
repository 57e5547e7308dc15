//! The demo outside systems: an order API, an AI summary service with background mode, a mail service and a
//! billing service. Each honours `Idempotency-Key` as the seed's local demo does — the same key and content
//! give the same result, the same key with other content is refused (409) and the stored value stays — and
//! keeps an execution log that the `demo` connector reads. Their state lives in the app's database, so a
//! restarted demo still remembers what it did.
use crate::clock::Clock;
use crate::db::{self, Db, demo_systems::ExecutionRow};
use chrono::{DateTime, Duration, Utc};
use contract::AppError;
use domain::canonical_json::to_canonical_string;
use domain::conflict::Conflict;
use domain::drills::{FAILS_AFTER, Fault};
use domain::fingerprint::fingerprint;
use serde::Serialize;
use serde_json::Value;
use std::sync::Arc;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Service {
    Orders,
    Ai,
    Mail,
    Billing,
}

impl Service {
    pub const ALL: [Service; 4] = [Service::Orders, Service::Ai, Service::Mail, Service::Billing];

    pub fn as_str(self) -> &'static str {
        match self {
            Service::Orders => "orders",
            Service::Ai => "ai",
            Service::Mail => "mail",
            Service::Billing => "billing",
        }
    }

    pub fn parse(s: &str) -> Option<Service> {
        Self::ALL.into_iter().find(|x| x.as_str() == s)
    }

    fn id_prefix(self) -> &'static str {
        match self {
            Service::Orders => "ord",
            Service::Ai => "resp",
            Service::Mail => "msg",
            Service::Billing => "in",
        }
    }

    /// The AI service works in background mode: accepted now, done a little later.
    fn work_time(self) -> Duration {
        match self {
            Service::Ai => Duration::seconds(20),
            _ => Duration::zero(),
        }
    }
}

/// One entry of a demo system's execution log, as its look-up answers it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Execution {
    pub id: String,
    pub idempotency_key: String,
    /// `completed`, or `in_progress` while an AI job is still generating.
    pub status: &'static str,
    pub content: Value,
    pub process_id: Option<String>,
    pub created_at: DateTime<Utc>,
    /// Calls repeated with the same key and content, answered with this same result.
    pub replays: i64,
    /// Calls with the same key and other content, refused with 409.
    pub conflicts: i64,
}

impl Execution {
    fn from_row(row: ExecutionRow, now: DateTime<Utc>) -> Execution {
        Execution {
            status: if now < row.done_at { "in_progress" } else { "completed" },
            content: serde_json::from_str(&row.content_json).unwrap_or(Value::Null),
            id: row.external_id,
            idempotency_key: row.idempotency_key,
            process_id: row.process_id,
            created_at: row.created_at,
            replays: row.replays,
            conflicts: row.conflicts,
        }
    }
}

pub struct Executed {
    pub execution: Execution,
    /// The key was known with the same content: nothing new happened.
    pub replayed: bool,
}

/// The four demo services over the app's database.
#[derive(Clone)]
pub struct DemoSystems {
    db: Db,
    clock: Arc<dyn Clock>,
}

impl DemoSystems {
    pub fn new(db: Db, clock: Arc<dyn Clock>) -> Self {
        DemoSystems { db, clock }
    }

    /// Does the work once per key. Same key and content: the stored result again; other content: 409.
    pub async fn execute(
        &self,
        service: Service,
        key: &str,
        content: &Value,
        process_id: Option<&str>,
    ) -> Result<Executed, AppError> {
        let faults = self.faults_for(process_id).await?;
        self.execute_with(service, key, content, process_id, &faults).await
    }

    /// The same under the given faults (a drill's practice run meets only its own fault).
    pub async fn execute_with(
        &self,
        service: Service,
        key: &str,
        content: &Value,
        process_id: Option<&str>,
        faults: &[Fault],
    ) -> Result<Executed, AppError> {
        let now = self.clock.now();
        match service {
            Service::Orders if faults.contains(&Fault::CredentialsExpired) => return Err(AppError::Unauthorized),
            Service::Ai if faults.contains(&Fault::RateLimited) => {
                return Err(AppError::TooManyRequests { retry_after_secs: 60 });
            }
            _ => {}
        }
        let work_time = match service {
            Service::Ai if faults.contains(&Fault::SlowAiJob) => Duration::hours(3),
            _ => service.work_time(),
        };
        let print = fingerprint(content);
        let mut tx = self.db.begin_write().await?;
        let known = db::demo_systems::by_key(&mut tx, service.as_str(), key).await?;
        let (row, replayed) = match known {
            Some(row) if row.fingerprint == print => {
                db::demo_systems::count_repeat(&mut tx, service.as_str(), key, true).await?;
                (row, true)
            }
            Some(_) => {
                db::demo_systems::count_repeat(&mut tx, service.as_str(), key, false).await?;
                tx.commit().await?;
                return Err(AppError::conflict(
                    Conflict::IdempotencyKeyMismatch,
                    format!("the {} service already did other content under this Idempotency-Key", service.as_str()),
                ));
            }
            None if service == Service::Orders
                && faults.contains(&Fault::FailsAfterCanary)
                && db::demo_systems::executed_in_group(&mut tx, service.as_str(), process_id.unwrap_or("")).await?
                    >= FAILS_AFTER =>
            {
                return Err(AppError::Busy { retry_after_secs: 60 });
            }
            None => {
                let row = ExecutionRow {
                    service: service.as_str().into(),
                    idempotency_key: key.into(),
                    fingerprint: print,
                    external_id: format!("{}_{}", service.id_prefix(), uuid::Uuid::new_v4().simple()),
                    content_json: to_canonical_string(&stored(service, content, faults)),
                    process_id: process_id.map(str::to_string),
                    replays: 0,
                    conflicts: 0,
                    created_at: now,
                    done_at: now + work_time,
                };
                db::demo_systems::insert(&mut tx, &row).await?;
                (row, false)
            }
        };
        tx.commit().await?;
        Ok(Executed { execution: Execution::from_row(row, now), replayed })
    }

    /// The execution log's entry for a key, if the service did anything under it (`process_id`: the operation
    /// asking, which a drill's fault may touch).
    pub async fn find_by_key(
        &self,
        service: Service,
        key: &str,
        process_id: Option<&str>,
    ) -> Result<Option<Execution>, AppError> {
        if self.finds_nothing(service, process_id).await? {
            return Ok(None);
        }
        let mut tx = self.db.connection().await?;
        let row = db::demo_systems::by_key(&mut tx, service.as_str(), key).await?;
        Ok(row.map(|r| Execution::from_row(r, self.clock.now())))
    }

    /// The execution log's entry for a result ID (as the provider's "get by ID" would answer).
    pub async fn find_by_id(
        &self,
        service: Service,
        id: &str,
        process_id: Option<&str>,
    ) -> Result<Option<Execution>, AppError> {
        if self.finds_nothing(service, process_id).await? {
            return Ok(None);
        }
        let mut tx = self.db.connection().await?;
        let row = db::demo_systems::by_external_id(&mut tx, service.as_str(), id).await?;
        Ok(row.map(|r| Execution::from_row(r, self.clock.now())))
    }

    /// The fault a drill in force injects for this operation: only its own practice operations meet one, for
    /// the drill's period; every other call is served as usual.
    async fn faults_for(&self, process_id: Option<&str>) -> Result<Vec<Fault>, AppError> {
        let Some(process_id) = process_id else { return Ok(Vec::new()) };
        let mut tx = self.db.connection().await?;
        Ok(db::drills::faults_in_force(&mut tx, self.clock.now(), process_id).await?)
    }

    /// A drill's "look-up that finds nothing": the mail log answers its practice operation empty.
    async fn finds_nothing(&self, service: Service, process_id: Option<&str>) -> Result<bool, AppError> {
        if service != Service::Mail {
            return Ok(false);
        }
        let faults = self.faults_for(process_id).await?;
        Ok(faults.contains(&Fault::LookupFindsNothing))
    }
}

/// What the service keeps of the content it was sent: under a canary drill's fault the order system stores
/// another amount (a data inconsistency that only the outside system's record shows).
fn stored(service: Service, content: &Value, faults: &[Fault]) -> Value {
    let mut stored = content.clone();
    if service == Service::Orders
        && faults.contains(&Fault::CanaryOtherContent)
        && let Some(amount) = stored.get_mut("amount")
    {
        *amount = Value::from(amount.as_i64().unwrap_or(0) + 1000);
    }
    stored
}
