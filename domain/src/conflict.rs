//! Why a well-formed request contradicts what is stored: one kind per rule. On the wire a kind is its slug (the
//! end of the problem type URI, `/problems/<slug>`); the pages put every kind into words in both languages, and
//! a kind without words does not compile.
use super::names::named;

named! {
    pub enum Conflict {
        UsernameTaken => "username-taken",
        SelfDisable => "self-disable",
        OwnAccess => "own-access",
        ClientNameTaken => "client-name-taken",
        /// The request (or bulk rerun) does not wait for a decision (any more).
        NotPending => "not-pending",
        Expired => "expired",
        AlreadyDecided => "already-decided",
        NotStalled => "not-stalled",
        NotOnHold => "not-on-hold",
        WorkflowNotConfigured => "workflow-not-configured",
        RequestOpen => "request-open",
        PlanChanged => "plan-changed",
        NotDraft => "not-draft",
        NotCancellable => "not-cancellable",
        /// Any other move the rerun request's state table refuses.
        RequestState => "request-state",
        /// A move the bulk rerun's state table refuses.
        BatchState => "batch-state",
        NothingToRequest => "nothing-to-request",
        PartOfBatch => "part-of-batch",
        AlreadyPaused => "already-paused",
        NotPaused => "not-paused",
        NotADrillDatabase => "not-a-drill-database",
        DrillRunning => "drill-running",
        DrillEnded => "drill-ended",
        NoDemoIntegration => "no-demo-integration",
        AlreadyLinked => "already-linked",
        AlreadyAcknowledged => "already-acknowledged",
        ActionUnchanged => "action-unchanged",
        AlreadySignedOff => "already-signed-off",
        /// The chat account is linked to another user.
        ChatAccountTaken => "chat-account-taken",
        /// The same `Idempotency-Key` is being processed right now.
        IdempotencyKeyInFlight => "idempotency-key-in-flight",
        /// The same `Idempotency-Key` came with another body.
        IdempotencyKeyMismatch => "idempotency-key-mismatch",
        /// A step's idempotency key is held by another step at the same outside system.
        IdempotencyKeyTaken => "idempotency-key-taken",
        ProcessIdExists => "process-id-exists",
        /// The company directory provisions this person: their memberships and being active are its to change.
        DirectoryManaged => "directory-managed",
        /// The company directory provisions people who sign in with the company account: without
        /// `[sign_in.oidc]` it has nothing to provision.
        NoCompanySignIn => "no-company-sign-in",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_goes_on_the_wire_as_its_slug_and_comes_back() {
        for kind in Conflict::ALL {
            let wire = serde_json::to_string(kind).unwrap();
            assert_eq!(wire, format!("\"{}\"", kind.as_str()));
            assert_eq!(serde_json::from_str::<Conflict>(&wire).unwrap(), *kind);
        }
        let mut slugs: Vec<&str> = Conflict::ALL.iter().map(|k| k.as_str()).collect();
        slugs.sort_unstable();
        slugs.dedup();
        assert_eq!(slugs.len(), Conflict::ALL.len(), "two kinds share a slug");
    }
}
