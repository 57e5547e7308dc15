//! Who may call what: the one policy table (QUALITY 9), a table of the server's routes. The server refuses any
//! route that is not in it, checks the session's roles against it before a handler runs, and a test calls every
//! registered route as every kind of caller and compares the answers with it. Object-level rules (the caller's
//! departments, four eyes) stay in the domain and the services; this table is the first gate, not the only one.
use crate::domain::access::{Allowed, Entry, Kind};
use crate::domain::roles::Role::{self, Admin, Auditor, Manager, Staff};

const STAFF_OR_MANAGER: &[Role] = &[Staff, Manager];
const MANAGER: &[Role] = &[Manager];
/// The stop switch: department owners for their own, admins for everything.
const MANAGER_OR_ADMIN: &[Role] = &[Manager, Admin];
const AUDITOR: &[Role] = &[Auditor];
const ADMIN: &[Role] = &[Admin];
/// Admins run drills; owners and auditors read their reports too.
const DRILL_READERS: &[Role] = &[Admin, Manager, Auditor];
const READERS_OF_EVIDENCE: &[Role] = Role::EVIDENCE_READERS;

const fn e(method: &'static str, path: &'static str, kind: Kind, allowed: Allowed) -> Entry {
    Entry { method, path, kind, allowed }
}
const fn page(path: &'static str) -> Entry {
    e("GET", path, Kind::Page, Allowed::SignedIn)
}
const fn server_fn(endpoint: &'static str, allowed: Allowed) -> Entry {
    e("POST", endpoint, Kind::ServerFn, allowed)
}

use Allowed::{Anyone, ApiToken, DirectoryToken, MetricsToken, Roles, Signature, SignedIn};

/// Every route of the server. Paths are axum's patterns; server functions are under `/api/`.
pub const POLICY: &[Entry] = &[
    // Pages: the shell is rendered for signed-in users (signed-out visitors are sent to sign in); what a page
    // shows comes through the server functions below, each with its own gate.
    e("GET", "/sign-in", Kind::Page, Anyone),
    // Company sign-in: off to the identity provider and back; a decision's fresh sign-in.
    e("GET", "/sign-in/oidc", Kind::SignInStep, Anyone),
    e("GET", "/sign-in/oidc/callback", Kind::SignInStep, Anyone),
    e("GET", "/sign-in/again", Kind::SignInStep, SignedIn),
    // Linking a Slack account: off to Sign in with Slack and back.
    e("GET", "/account/slack/link", Kind::SignInStep, SignedIn),
    e("GET", "/account/slack/callback", Kind::SignInStep, SignedIn),
    page("/"),
    page("/operations/{process_id}"),
    page("/reruns/{id}"),
    page("/batches"),
    page("/batches/{id}"),
    page("/stop-switch"),
    page("/approvals"),
    page("/notifications"),
    page("/audit"),
    page("/decision-table"),
    page("/reviews"),
    page("/incidents"),
    page("/incidents/{id}"),
    page("/account"),
    // The user guide, served whole by the process (`server/src/guide.rs`): each page's "?" leads there.
    e("GET", "/guide/ja", Kind::Document, SignedIn),
    e("GET", "/guide/en", Kind::Document, SignedIn),
    page("/account/password"),
    page("/admin/users"),
    page("/admin/configuration"),
    page("/admin/api-clients"),
    page("/admin/drills"),
    page("/admin/drills/{id}"),
    // Server functions.
    server_fn("/api/sign_in", Anyone),
    server_fn("/api/switch_language", Anyone),
    server_fn("/api/sign_out", SignedIn),
    server_fn("/api/me", SignedIn),
    server_fn("/api/names", SignedIn),
    server_fn("/api/change_password", SignedIn),
    server_fn("/api/sign_out_everywhere", SignedIn),
    server_fn("/api/account/chat_links", SignedIn),
    server_fn("/api/account/unlink_chat", SignedIn),
    server_fn("/api/save_preferences", SignedIn),
    server_fn("/api/notifications/unread", SignedIn),
    server_fn("/api/notifications/list", SignedIn),
    server_fn("/api/notifications/read", SignedIn),
    server_fn("/api/board/stalled", SignedIn),
    server_fn("/api/board/operation", SignedIn),
    server_fn("/api/board/reconcile", Roles(STAFF_OR_MANAGER)),
    server_fn("/api/board/hold", Roles(STAFF_OR_MANAGER)),
    server_fn("/api/board/release", Roles(STAFF_OR_MANAGER)),
    server_fn("/api/board/manual_verdict", Roles(MANAGER)),
    server_fn("/api/board/adopt", Roles(STAFF_OR_MANAGER)),
    server_fn("/api/audit/page", SignedIn),
    server_fn("/api/audit/prove", Roles(READERS_OF_EVIDENCE)),
    server_fn("/api/reruns/start", Roles(STAFF_OR_MANAGER)),
    server_fn("/api/reruns/load", SignedIn),
    server_fn("/api/reruns/confirm", Roles(STAFF_OR_MANAGER)),
    server_fn("/api/reruns/confirm_key_alone", Roles(STAFF_OR_MANAGER)),
    server_fn("/api/reruns/submit", Roles(STAFF_OR_MANAGER)),
    server_fn("/api/reruns/replan", Roles(STAFF_OR_MANAGER)),
    server_fn("/api/reruns/cancel", Roles(STAFF_OR_MANAGER)),
    server_fn("/api/batches/create", Roles(STAFF_OR_MANAGER)),
    server_fn("/api/batches/load", SignedIn),
    server_fn("/api/batches/progress", SignedIn),
    server_fn("/api/batches/list", SignedIn),
    server_fn("/api/batches/request", Roles(STAFF_OR_MANAGER)),
    server_fn("/api/batches/confirm", Roles(STAFF_OR_MANAGER)),
    server_fn("/api/batches/submit", Roles(STAFF_OR_MANAGER)),
    server_fn("/api/batches/decide", Roles(MANAGER)),
    server_fn("/api/batches/control", Roles(STAFF_OR_MANAGER)),
    server_fn("/api/stop_switch/overview", Roles(MANAGER_OR_ADMIN)),
    server_fn("/api/stop_switch/pause", Roles(MANAGER_OR_ADMIN)),
    server_fn("/api/stop_switch/resume", Roles(MANAGER_OR_ADMIN)),
    server_fn("/api/approvals/inbox", Roles(STAFF_OR_MANAGER)),
    server_fn("/api/approvals/decide", Roles(MANAGER)),
    server_fn("/api/incidents/list", SignedIn),
    server_fn("/api/incidents/load", SignedIn),
    server_fn("/api/incidents/patterns", SignedIn),
    server_fn("/api/incidents/file", Roles(STAFF_OR_MANAGER)),
    server_fn("/api/incidents/update", Roles(STAFF_OR_MANAGER)),
    server_fn("/api/incidents/link", Roles(STAFF_OR_MANAGER)),
    server_fn("/api/incidents/add_action", Roles(STAFF_OR_MANAGER)),
    server_fn("/api/incidents/action_status", Roles(STAFF_OR_MANAGER)),
    server_fn("/api/incidents/acknowledge", Roles(STAFF_OR_MANAGER)),
    server_fn("/api/reviews/show", SignedIn),
    server_fn("/api/reviews/sign_off", Roles(MANAGER)),
    server_fn("/api/drills/overview", Roles(DRILL_READERS)),
    server_fn("/api/drills/start", Roles(ADMIN)),
    server_fn("/api/drills/end", Roles(ADMIN)),
    server_fn("/api/drills/report", Roles(DRILL_READERS)),
    server_fn("/api/admin/list_users", Roles(ADMIN)),
    server_fn("/api/admin/list_departments", Roles(ADMIN)),
    server_fn("/api/admin/add_user", Roles(ADMIN)),
    server_fn("/api/admin/set_user_disabled", Roles(ADMIN)),
    server_fn("/api/admin/set_user_roles", Roles(ADMIN)),
    server_fn("/api/admin/configuration", Roles(ADMIN)),
    server_fn("/api/admin/audit_signing", Roles(ADMIN)),
    server_fn("/api/admin/list_api_clients", Roles(ADMIN)),
    server_fn("/api/admin/chat_links", Roles(ADMIN)),
    server_fn("/api/admin/revoke_api_client", Roles(ADMIN)),
    server_fn("/api/admin/check_receiver", Roles(ADMIN)),
    // Downloads for the browser (each audited where SPEC says so).
    e("GET", "/audit/export", Kind::Export, Roles(AUDITOR)),
    e("GET", "/operations/{process_id}/evidence.zip", Kind::Export, Roles(READERS_OF_EVIDENCE)),
    // The audit trail's Merkle proofs, as JSON (a few hashes each): one event's (whoever may read it), and
    // between two tree heads (auditors).
    e("GET", "/api/v1/audit/proof", Kind::Download, Roles(READERS_OF_EVIDENCE)),
    e("GET", "/api/v1/audit/consistency", Kind::Download, Roles(AUDITOR)),
    e("GET", "/decision-table.xlsx", Kind::Download, SignedIn),
    e("GET", "/reviews/chart.svg", Kind::Download, SignedIn),
    e("GET", "/reviews.csv", Kind::Download, SignedIn),
    e("GET", "/drills/{id}/report.csv", Kind::Download, Roles(DRILL_READERS)),
    // The JSON API for the integrations, and its description.
    e("POST", "/api/v1/operations", Kind::Api, ApiToken),
    e("GET", "/api/v1/operations/{process_id}", Kind::Api, ApiToken),
    e("POST", "/api/v1/operations/{process_id}/steps/{step}/events", Kind::Api, ApiToken),
    e("GET", "/api/openapi.json", Kind::Api, Anyone),
    // The company directory's provisioning (SCIM 2.0), by its own token.
    e("GET", "/scim/v2/ServiceProviderConfig", Kind::Api, DirectoryToken),
    e("GET", "/scim/v2/ResourceTypes", Kind::Api, DirectoryToken),
    e("GET", "/scim/v2/ResourceTypes/{id}", Kind::Api, DirectoryToken),
    e("GET", "/scim/v2/Schemas", Kind::Api, DirectoryToken),
    e("GET", "/scim/v2/Schemas/{id}", Kind::Api, DirectoryToken),
    e("GET", "/scim/v2/Users", Kind::Api, DirectoryToken),
    e("POST", "/scim/v2/Users", Kind::Api, DirectoryToken),
    e("GET", "/scim/v2/Users/{id}", Kind::Api, DirectoryToken),
    e("PUT", "/scim/v2/Users/{id}", Kind::Api, DirectoryToken),
    e("PATCH", "/scim/v2/Users/{id}", Kind::Api, DirectoryToken),
    e("DELETE", "/scim/v2/Users/{id}", Kind::Api, DirectoryToken),
    e("GET", "/scim/v2/Groups", Kind::Api, DirectoryToken),
    e("POST", "/scim/v2/Groups", Kind::Api, DirectoryToken),
    e("GET", "/scim/v2/Groups/{id}", Kind::Api, DirectoryToken),
    e("PUT", "/scim/v2/Groups/{id}", Kind::Api, DirectoryToken),
    e("PATCH", "/scim/v2/Groups/{id}", Kind::Api, DirectoryToken),
    e("DELETE", "/scim/v2/Groups/{id}", Kind::Api, DirectoryToken),
    e("POST", "/scim/v2/.search", Kind::Api, DirectoryToken),
    e("GET", "/scim/v2/{*rest}", Kind::Api, DirectoryToken),
    // Outside systems telling us what happened.
    e("POST", "/hooks/{connector}", Kind::Webhook, Signature),
    e("POST", "/hooks/slack/interactions", Kind::Webhook, Signature),
    e("POST", "/hooks/teams/messages", Kind::Webhook, Signature),
    // Probes.
    e("GET", "/healthz", Kind::Probe, Anyone),
    e("GET", "/readyz", Kind::Probe, Anyone),
    e("GET", "/metrics", Kind::Probe, MetricsToken),
    // The demo's outside systems, and its receiver of signed reruns (demo mode only).
    e("GET", "/demo/{service}/requests", Kind::Demo, Anyone),
    e("POST", "/demo/{service}/requests", Kind::Demo, Anyone),
    e("GET", "/demo/{service}/requests/{id}", Kind::Demo, Anyone),
    e("POST", "/demo/rerun", Kind::Demo, Signature),
];

/// The entry for a method and a route pattern; HEAD is answered as GET.
pub fn entry(method: &str, pattern: &str) -> Option<&'static Entry> {
    let method = if method == "HEAD" { "GET" } else { method };
    POLICY.iter().find(|e| e.method == method && e.path == pattern)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_route_is_in_the_table_twice() {
        for (i, a) in POLICY.iter().enumerate() {
            assert!(!POLICY[i + 1..].iter().any(|b| b.method == a.method && b.path == a.path), "{a:?} twice");
        }
    }

    #[test]
    fn head_is_looked_up_as_get_and_an_unknown_route_has_no_entry() {
        assert_eq!(entry("HEAD", "/healthz").map(|e| e.allowed), Some(Anyone));
        assert_eq!(entry("GET", "/api/admin/list_users"), None);
        assert_eq!(entry("DELETE", "/"), None);
    }
}
