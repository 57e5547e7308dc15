//! The `demo` connector: reads the demo systems' execution log, by idempotency key or result ID.
use super::settings::DemoSettings;
use super::{Connector, Lookup};
use crate::backend::demo_systems::{DemoSystems, Execution, Service};
use crate::domain::reconciliation::{Finding, Record, RecordStatus};

pub struct DemoConnector {
    systems: DemoSystems,
    service: Service,
    authoritative: bool,
}

impl DemoConnector {
    pub fn new(systems: DemoSystems, settings: DemoSettings, authoritative: bool) -> Self {
        let service = Service::parse(&settings.service).unwrap_or(Service::Orders);
        DemoConnector {
            systems,
            service,
            authoritative,
        }
    }
}

#[async_trait::async_trait]
impl Connector for DemoConnector {
    async fn look_up(&self, lookup: &Lookup) -> Finding {
        let found = match self
            .systems
            .find_by_key(self.service, &lookup.idempotency_key)
            .await
        {
            Ok(None) => match &lookup.result_id {
                Some(id) => self.systems.find_by_id(self.service, id).await,
                None => Ok(None),
            },
            other => other,
        };
        match found {
            Ok(Some(execution)) => Finding::Found(vec![record(execution)]),
            Ok(None) => Finding::NotFound {
                authoritative: self.authoritative,
            },
            Err(e) => Finding::Failed {
                reason: e.to_string(),
            },
        }
    }
}

fn record(e: Execution) -> Record {
    Record {
        external_id: Some(e.id),
        at: Some(e.created_at),
        status_text: Some(e.status.to_string()),
        status: if e.status == "completed" {
            RecordStatus::Done
        } else {
            RecordStatus::Running
        },
        fields: e.content.as_object().cloned().unwrap_or_default(),
    }
}
