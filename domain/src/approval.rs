//! The approval rule (QUALITY 11, 31), the one every decision calls, single and bulk, page, API and chat: who
//! may decide (a manager who is a member of the object's department at the moment of deciding), who never may
//! (a maker: whoever prepared it, `MakerPart`; anyone who decided already), how many distinct approvals count,
//! and how long an approval may wait to be used.
use super::names::named;
use super::rights::{self, Act, Person};
use chrono::{DateTime, Duration, Utc};

named! {
    /// One owner's decision, as it is stored and shown.
    pub enum Decision {
        Approve => "approved",
        Reject => "rejected",
    }
}

named! {
    /// How someone took part in preparing a rerun. Each part makes them a maker, and a maker never approves or
    /// rejects what they prepared (maker ≠ checker); they may still withdraw it.
    pub enum MakerPart {
        /// Started the rerun request.
        Started => "started",
        /// Confirmed one of the five checks.
        ConfirmedCheck => "confirmed_check",
        /// Sent it for approval.
        Submitted => "submitted",
        /// Recorded a manual verdict that the plan rests on.
        RecordedVerdict => "recorded_verdict",
        /// Created a bulk rerun (which starts its preview).
        Created => "created",
        /// Requested a bulk rerun's previewed plans.
        Requested => "requested",
    }
}

/// One person's part in preparing a rerun.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Maker {
    pub user_id: i64,
    pub part: MakerPart,
}

/// An approval is used within a day, or within the shortest key retention of the outside systems involved:
/// past that, the outside system may have forgotten the keys the rerun relies on.
pub fn validity(retention_days: impl IntoIterator<Item = i64>) -> Duration {
    let day = Duration::hours(24);
    retention_days.into_iter().map(Duration::days).fold(day, |shortest, d| shortest.min(d))
}

/// Past its validity, a request (or a bulk rerun) can no longer be approved, nor an approval be used.
pub fn is_expired(expires_at: Option<DateTime<Utc>>, now: DateTime<Utc>) -> bool {
    expires_at.is_some_and(|at| now >= at)
}

/// What a decision is about, as the rule needs to know it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ballot {
    pub department: String,
    /// Whoever prepared it: a request's makers; a bulk rerun's own and those of every member's request.
    pub makers: Vec<Maker>,
    /// Everyone who decided on it already (approved or rejected).
    pub decided: Vec<i64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Only a manager who is a member of the department decides: the write rule's refusal for `Act::Decide`.
    NotOwner(rights::Refusal),
    /// Maker ≠ checker: whoever prepared the rerun (in this part) never decides on it.
    Maker(MakerPart),
    /// Each person decides once: N approvals are N people.
    AlreadyDecided,
}

pub fn may_decide(person: &Person, ballot: &Ballot) -> Result<(), Refusal> {
    person.check_act(Act::Decide, &ballot.department).map_err(Refusal::NotOwner)?;
    if let Some(maker) = ballot.makers.iter().find(|m| m.user_id == person.id) {
        return Err(Refusal::Maker(maker.part));
    }
    if ballot.decided.contains(&person.id) {
        return Err(Refusal::AlreadyDecided);
    }
    Ok(())
}

impl Ballot {
    pub fn is_maker(&self, user_id: i64) -> bool {
        self.makers.iter().any(|m| m.user_id == user_id)
    }
}

/// Who may withdraw a request: one of its makers, while staff or manager of the department. A manager who did
/// not prepare it decides on it instead.
pub fn may_withdraw(person: &Person, ballot: &Ballot) -> bool {
    person.may_act(Act::RequestRerun, &ballot.department) && ballot.is_maker(person.id)
}

/// Where a person stands to a decision now: what the decision page offers them, or tells them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Standing {
    MayDecide,
    /// Prepared it, in this part: another manager decides.
    Maker(MakerPart),
    /// Not a manager of the department.
    NotOwner,
    /// Decided on it already.
    Decided,
    /// It waits for no decision (a draft, or decided already).
    NotWaiting,
    /// A member of a bulk rerun: decided with the bulk rerun.
    InBatch,
}

pub fn standing(person: &Person, ballot: &Ballot, waiting: bool, in_batch: bool) -> Standing {
    if in_batch {
        return Standing::InBatch;
    }
    if !waiting {
        return Standing::NotWaiting;
    }
    // A maker hears that first, staff too: it is why nobody who prepared it decides.
    if let Some(maker) = ballot.makers.iter().find(|m| m.user_id == person.id) {
        return Standing::Maker(maker.part);
    }
    match may_decide(person, ballot) {
        Ok(()) => Standing::MayDecide,
        Err(Refusal::Maker(part)) => Standing::Maker(part),
        Err(Refusal::NotOwner(_)) => Standing::NotOwner,
        Err(Refusal::AlreadyDecided) => Standing::Decided,
    }
}

/// The approvals that count: distinct people, none of whom prepared it.
pub fn counted(approvers: &[i64], ballot: &Ballot) -> u32 {
    let mut people: Vec<i64> = approvers.iter().copied().filter(|a| !ballot.is_maker(*a)).collect();
    people.sort_unstable();
    people.dedup();
    u32::try_from(people.len()).unwrap_or(u32::MAX)
}

/// Whether enough owners approved (at least one, whatever the configuration says).
pub fn is_approved(counted: u32, required: u32) -> bool {
    counted >= required.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roles::Role::{Auditor, Manager, Staff};

    fn person(id: i64, roles: &[crate::roles::Role], departments: &[&str]) -> Person {
        let departments: Vec<String> = departments.iter().map(|d| d.to_string()).collect();
        Person { id, access: crate::membership::Access::granted(roles, &departments) }
    }

    fn ballot(makers: &[i64], decided: &[i64]) -> Ballot {
        let makers = makers.iter().map(|&user_id| Maker { user_id, part: MakerPart::Started }).collect();
        Ballot { department: "sales".into(), makers, decided: decided.to_vec() }
    }

    #[test]
    fn validity_is_a_day_unless_a_key_is_kept_shorter() {
        assert_eq!(validity([30, 45]), Duration::hours(24));
        assert_eq!(validity([]), Duration::hours(24));
        assert!(validity([30, 0]) < Duration::hours(24));
    }

    #[test]
    fn a_maker_never_decides_and_only_member_managers_do() {
        let owner = person(7, &[Manager], &["sales"]);
        assert_eq!(may_decide(&owner, &ballot(&[7], &[])), Err(Refusal::Maker(MakerPart::Started)));
        assert_eq!(may_decide(&owner, &ballot(&[1, 2, 7], &[])), Err(Refusal::Maker(MakerPart::Started)));
        assert_eq!(may_decide(&owner, &ballot(&[1], &[7])), Err(Refusal::AlreadyDecided));
        assert_eq!(may_decide(&owner, &ballot(&[1], &[2])), Ok(()));
        let other = person(8, &[Auditor, Manager], &["billing"]);
        assert_eq!(may_decide(&other, &ballot(&[1], &[])), Err(Refusal::NotOwner(rights::Refusal::NotAllowed)));
        let staff = person(9, &[Staff], &["sales"]);
        assert_eq!(may_decide(&staff, &ballot(&[1], &[])), Err(Refusal::NotOwner(rights::Refusal::NotAllowed)));
        assert_eq!(
            may_decide(&person(10, &[Manager], &[]), &ballot(&[1], &[])),
            Err(Refusal::NotOwner(rights::Refusal::Unseen))
        );
    }

    #[test]
    fn every_part_of_preparing_makes_a_maker_who_may_not_decide() {
        let owner = person(7, &[Manager], &["sales"]);
        for &part in MakerPart::ALL {
            let ballot = Ballot {
                department: "sales".into(),
                makers: vec![Maker { user_id: 1, part: MakerPart::Started }, Maker { user_id: 7, part }],
                decided: vec![],
            };
            assert_eq!(may_decide(&owner, &ballot), Err(Refusal::Maker(part)), "{part}");
            assert_eq!(counted(&[7, 8], &ballot), 1, "a maker's approval never counts ({part})");
        }
    }

    #[test]
    fn only_a_maker_withdraws_and_the_page_says_where_each_person_stands() {
        let b = Ballot {
            department: "sales".into(),
            makers: vec![Maker { user_id: 1, part: MakerPart::Started }],
            decided: vec![2],
        };
        let (staff, owner, other) =
            (person(1, &[Staff], &["sales"]), person(2, &[Manager], &["sales"]), person(3, &[Manager], &["sales"]));
        assert!(may_withdraw(&staff, &b));
        assert!(!may_withdraw(&other, &b), "a manager who did not prepare it decides instead");
        assert_eq!(standing(&staff, &b, true, false), Standing::Maker(MakerPart::Started));
        assert_eq!(standing(&owner, &b, true, false), Standing::Decided);
        assert_eq!(standing(&other, &b, true, false), Standing::MayDecide);
        assert_eq!(standing(&other, &b, false, false), Standing::NotWaiting);
        assert_eq!(standing(&other, &b, true, true), Standing::InBatch);
        assert_eq!(standing(&person(4, &[Manager], &["billing"]), &b, true, false), Standing::NotOwner);
    }

    #[test]
    fn n_of_m_counts_distinct_people_who_did_not_prepare_it() {
        let b = ballot(&[7], &[]);
        assert_eq!(counted(&[1, 1, 7], &b), 1);
        assert!(!is_approved(counted(&[1, 7], &b), 2));
        assert!(is_approved(counted(&[1, 2], &b), 2));
        assert!(is_approved(1, 0), "at least one, whatever the configuration says");
    }

    #[test]
    fn an_approval_expires_at_its_validity() {
        let now = DateTime::<Utc>::from_timestamp(1_000_000, 0).unwrap();
        assert!(!is_expired(None, now));
        assert!(is_expired(Some(now), now));
        assert!(!is_expired(Some(now + Duration::seconds(1)), now));
    }
}
