//! The Rerun Gate process: HTTP stack, start-up and the command line. The pages and rules live in `app`.
pub mod api;
pub mod audit_export;
pub mod chat;
pub mod cli;
pub mod company_sign_in;
pub mod demo;
pub mod documents;
pub mod guide;
pub mod http;
pub mod site;
pub mod startup;
pub mod telemetry;
pub mod webhooks;
