//! The Rerun Gate process: HTTP stack, start-up and the command line. The pages and rules live in `app`.
#![warn(clippy::significant_drop_in_scrutinee)] // a lock guard in a scrutinee holds the lock through every arm
pub mod api;
pub mod audit_export;
pub mod chat;
pub mod cli;
pub mod company_sign_in;
pub mod csv_file;
pub mod demo;
pub mod documents;
pub mod guide;
pub mod http;
pub mod scim;
pub mod site;
pub mod startup;
pub mod telemetry;
pub mod webhooks;
