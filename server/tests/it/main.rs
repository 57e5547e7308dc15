//! Integration tests: each starts the real app on a free port against a fresh database. The engine is
//! SQLite unless `RERUN_GATE_TEST_ENGINE=postgres` (then `RERUN_GATE_TEST_PG_URL` names a server where each
//! test creates its own database). `make test` runs this suite once per engine.
mod ai_attempts;
mod approvals;
mod audit_exports;
mod audit_trail;
mod batches;
mod board;
mod canaries;
mod command_line;
mod connectors;
mod crash_safety;
mod dispatch;
mod drills;
mod documents;
mod fixtures;
mod gate_rules;
mod harness;
mod holds;
mod incidents;
mod languages;
mod http_protections;
mod instances;
mod ingestion;
mod mail;
mod metrics;
mod people;
mod policy;
mod reconciliation;
mod reruns;
mod reviews;
mod sessions;
mod stop_switch;
mod sign_in;
mod smtp_sink;
mod sweeper;
mod webhooks;
