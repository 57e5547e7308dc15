//! The database mapping of the domain's states: each is stored as its snake_case name and read back through the
//! domain's `parse`, so a name the domain does not know is a decode error, never a silent default. Rows and
//! statements carry the enums; the names exist only here and on the wire.
use domain::approval::{Decision, MakerPart};
use domain::audit_action::AuditAction;
use domain::batches::{BatchStatus, MemberState};
use domain::dispatch::{DeliveryStatus, DispatchStatus};
use domain::idempotency::IdempotencyState;
use domain::operations::{OperationStatus, StepState};
use domain::reconciliation::Verdict;
use domain::rerun_request::RerunRequestStatus;
use domain::tallies::Refusal;
use sqlx::encode::IsNull;
use sqlx::error::BoxDynError;
use sqlx::{Database, Decode, Encode, Postgres, Sqlite, Type};

macro_rules! stored_by_name {
    ($t:ty) => {
        stored_by_name!(@engine $t, Sqlite);
        stored_by_name!(@engine $t, Postgres);
    };
    (@engine $t:ty, $db:ty) => {
        impl Type<$db> for $t {
            fn type_info() -> <$db as Database>::TypeInfo {
                <&str as Type<$db>>::type_info()
            }
            fn compatible(ty: &<$db as Database>::TypeInfo) -> bool {
                <&str as Type<$db>>::compatible(ty)
            }
        }

        impl<'r> Decode<'r, $db> for $t {
            fn decode(value: <$db as Database>::ValueRef<'r>) -> Result<Self, BoxDynError> {
                let name = <&str as Decode<$db>>::decode(value)?;
                <$t>::parse(name).ok_or_else(|| format!("unknown {} '{name}'", stringify!($t)).into())
            }
        }

        impl<'q> Encode<'q, $db> for $t {
            fn encode_by_ref(&self, buf: &mut <$db as Database>::ArgumentBuffer<'q>) -> Result<IsNull, BoxDynError> {
                <&str as Encode<'q, $db>>::encode(self.as_str(), buf)
            }
        }
    };
}

stored_by_name!(RerunRequestStatus);
stored_by_name!(BatchStatus);
stored_by_name!(MemberState);
stored_by_name!(OperationStatus);
stored_by_name!(StepState);
stored_by_name!(DispatchStatus);
stored_by_name!(Decision);
stored_by_name!(MakerPart);
stored_by_name!(DeliveryStatus);
stored_by_name!(IdempotencyState);
stored_by_name!(Verdict);
stored_by_name!(Refusal);
stored_by_name!(AuditAction);
