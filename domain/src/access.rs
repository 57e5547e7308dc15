//! Who may call what, in words a route table can use: the kinds of route, the kinds of caller, and which callers
//! a route's gate admits. The table itself lists routes, so it lives with them (`api::policy`). Object-level
//! rules (the caller's departments, four eyes) are `domain::rights` and `domain::approval`.
use crate::roles::Role::{self, Admin, Auditor, Manager, Staff};

/// What a route is: it decides how a refusal is answered (a page sends the visitor to sign in).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A page of the app (its shell, streamed; what it shows comes through the server functions).
    Page,
    /// A page the process serves whole, outside the app's shell (the user guide): refused as a page is.
    Document,
    /// A step of the sign-in that sends the browser on (to the identity provider, back, or to sign in again):
    /// refused as a page is.
    SignInStep,
    ServerFn,
    /// A file made for the browser (a spreadsheet, a chart, a report): a page's work.
    Download,
    /// A download that reads the audit trail at length (the trail's export, an operation's evidence): on the
    /// exports' own pool, a few at a time.
    Export,
    Api,
    Webhook,
    Probe,
    Demo,
}

impl Kind {
    /// A browser goes there: refused, it is sent to sign in and brought back afterwards.
    pub fn sends_to_sign_in(self) -> bool {
        matches!(self, Kind::Page | Kind::Document | Kind::SignInStep)
    }
}

/// Who may call a route.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Allowed {
    /// No credentials: sign-in, health checks, the OpenAPI document, the demo's outside systems.
    Anyone,
    /// Any signed-in user, whatever their roles (the service then limits what they see to their departments).
    SignedIn,
    /// A signed-in user holding one of these roles.
    Roles(&'static [Role]),
    /// An API client's bearer token, checked by the route's own extractor (scoped to departments).
    ApiToken,
    /// The company directory's bearer token (SCIM provisioning), checked by the route's own extractor: an
    /// ingestion token does not open it.
    DirectoryToken,
    /// A Standard Webhooks signature by the connector's secret, checked by the route.
    Signature,
    /// `RERUN_GATE_METRICS_TOKEN` as a bearer token, or a direct loopback caller when none is set.
    MetricsToken,
}

/// The kinds of caller the policy test plays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallerKind {
    Anonymous,
    User(Role),
    ApiClient,
}

impl CallerKind {
    pub const ALL: [CallerKind; 6] = [
        CallerKind::Anonymous,
        CallerKind::User(Staff),
        CallerKind::User(Manager),
        CallerKind::User(Auditor),
        CallerKind::User(Admin),
        CallerKind::ApiClient,
    ];
}

impl Allowed {
    /// Whether a caller of this kind (with no signature and no metrics token) gets past the route's gate.
    pub fn admits(self, caller: CallerKind) -> bool {
        match (self, caller) {
            (Allowed::Anyone, _) => true,
            (Allowed::SignedIn, CallerKind::User(_)) => true,
            (Allowed::Roles(roles), CallerKind::User(role)) => roles.contains(&role),
            (Allowed::ApiToken, CallerKind::ApiClient) => true,
            _ => false,
        }
    }

    /// Whether a session user with these roles passes the gate (the server's check before a handler runs).
    pub fn admits_user(self, roles: &[Role]) -> bool {
        match self {
            Allowed::SignedIn => true,
            Allowed::Roles(allowed) => roles.iter().any(|r| allowed.contains(r)),
            _ => false,
        }
    }

    /// Whether the gate needs the browser session (the other kinds are checked by the route itself).
    pub fn needs_session(self) -> bool {
        matches!(self, Allowed::SignedIn | Allowed::Roles(_))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub method: &'static str,
    pub path: &'static str,
    pub kind: Kind,
    pub allowed: Allowed,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_admit_only_signed_in_users_holding_one_of_them() {
        let managers = Allowed::Roles(&[Manager]);
        assert!(managers.admits(CallerKind::User(Manager)));
        assert!(!managers.admits(CallerKind::User(Staff)));
        assert!(!managers.admits(CallerKind::Anonymous));
        assert!(!managers.admits(CallerKind::ApiClient));
        assert!(managers.admits_user(&[Staff, Manager]));
        assert!(!Allowed::SignedIn.admits(CallerKind::ApiClient), "a token is not a session");
    }

    #[test]
    fn a_signature_or_the_metrics_token_is_nobody_s_by_default() {
        for caller in CallerKind::ALL {
            assert!(!Allowed::DirectoryToken.admits(caller), "an ingestion token does not provision people");
            assert!(!Allowed::Signature.admits(caller));
            assert!(!Allowed::MetricsToken.admits(caller));
        }
    }
}
