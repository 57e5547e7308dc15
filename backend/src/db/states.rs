//! The database mapping of the domain's states: each is stored as its snake_case name and read back through the
//! domain's `parse`, so a name the domain does not know is a decode error, never a silent default. Rows carry the
//! enums (`#[sqlx(try_from = "Stored<…>")]`), statements bind `Stored(state)`; the names exist only here and on the
//! wire. The enums are the domain crate's and the traits sqlx's, so the mapping is a wrapper of this crate's.
use domain::approval::{Decision, MakerPart};
use domain::audit_action::AuditAction;
use domain::batches::{BatchStatus, MemberState};
use domain::canary::StageOutcome;
use domain::directory::ClientPurpose;
use domain::dispatch::{DeliveryStatus, DispatchStatus};
use domain::idempotency::IdempotencyState;
use domain::indicators::ReviewChange;
use domain::operations::{OperationStatus, StepState};
use domain::reconciliation::Verdict;
use domain::rerun_request::RerunRequestStatus;
use domain::tallies::RegistrationRefusal;
use sqlx::encode::IsNull;
use sqlx::error::BoxDynError;
use sqlx::{Database, Decode, Encode, Postgres, Sqlite, Type};

/// A state as stored: its name (`Stored<Option<_>>`: a name or NULL).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stored<T>(pub T);

/// A state the database keeps by name.
pub trait Named: Copy + Send + Sync + Unpin + 'static {
    fn name(self) -> &'static str;
    fn from_name(name: &str) -> Option<Self>;
}

macro_rules! stored_by_name {
    ($($t:ty),+ $(,)?) => {$(
        impl Named for $t {
            fn name(self) -> &'static str {
                self.as_str()
            }
            fn from_name(name: &str) -> Option<Self> {
                <$t>::parse(name)
            }
        }

        impl From<Stored<$t>> for $t {
            fn from(stored: Stored<$t>) -> $t {
                stored.0
            }
        }

        impl From<Stored<Option<$t>>> for Option<$t> {
            fn from(stored: Stored<Option<$t>>) -> Option<$t> {
                stored.0
            }
        }
    )+};
}

stored_by_name!(
    RerunRequestStatus,
    BatchStatus,
    MemberState,
    StageOutcome,
    OperationStatus,
    StepState,
    DispatchStatus,
    Decision,
    MakerPart,
    DeliveryStatus,
    IdempotencyState,
    Verdict,
    RegistrationRefusal,
    AuditAction,
    ReviewChange,
    ClientPurpose,
);

macro_rules! on_engine {
    ($db:ty) => {
        impl<T: Named> Type<$db> for Stored<T> {
            fn type_info() -> <$db as Database>::TypeInfo {
                <&str as Type<$db>>::type_info()
            }
            fn compatible(ty: &<$db as Database>::TypeInfo) -> bool {
                <&str as Type<$db>>::compatible(ty)
            }
        }

        impl<'r, T: Named> Decode<'r, $db> for Stored<T> {
            fn decode(value: <$db as Database>::ValueRef<'r>) -> Result<Self, BoxDynError> {
                let name = <&str as Decode<$db>>::decode(value)?;
                let unknown = || format!("unknown {} '{name}'", std::any::type_name::<T>());
                T::from_name(name).map(Stored).ok_or_else(|| unknown().into())
            }
        }

        impl<T: Named> Type<$db> for Stored<Option<T>> {
            fn type_info() -> <$db as Database>::TypeInfo {
                <Stored<T> as Type<$db>>::type_info()
            }
            fn compatible(ty: &<$db as Database>::TypeInfo) -> bool {
                <Stored<T> as Type<$db>>::compatible(ty)
            }
        }

        impl<'r, T: Named> Decode<'r, $db> for Stored<Option<T>> {
            fn decode(value: <$db as Database>::ValueRef<'r>) -> Result<Self, BoxDynError> {
                if sqlx::ValueRef::is_null(&value) {
                    return Ok(Stored(None));
                }
                <Stored<T> as Decode<$db>>::decode(value).map(|stored| Stored(Some(stored.0)))
            }
        }

        impl<'q, T: Named> Encode<'q, $db> for Stored<T> {
            fn encode_by_ref(&self, buf: &mut <$db as Database>::ArgumentBuffer<'q>) -> Result<IsNull, BoxDynError> {
                <&str as Encode<'q, $db>>::encode(self.0.name(), buf)
            }
        }
    };
}

on_engine!(Sqlite);
on_engine!(Postgres);
