//! The policy step's guard on a call permission request (`crate::calls::guard`): not
//! while a grant is valid, at most two to one customer from one number in 24 hours,
//! counted under the customer's row lock the compliance step took.

use chrono::{DateTime, Utc};
use diesel_async::AsyncPgConnection;
use uuid::Uuid;
use warden_rules::compliance::Decision;
use warden_settings::StoreKeys;
use warden_store::tx::Abort;

use super::{RefusalMode, SendError, SendRequest, local_refusal};
use crate::calls::guard::{Refusal, admit};

/// `None`: not a request, or it may go (and is counted). A grant still valid is the
/// caller's mistake: a tool is answered INVALID_ARGUMENT (nothing written); a scheduled
/// row ends refused and recorded, like any other refusal.
pub(super) async fn guard(
    c: &mut AsyncPgConnection,
    req: &SendRequest,
    keys: &StoreKeys,
    message_id: Uuid,
    now: DateTime<Utc>,
) -> Result<Option<Decision>, Abort<SendError>> {
    if !req.kind.is_call_permission_request() {
        return Ok(None);
    }
    match admit(c, &keys.sender, req.phone.digits(), message_id, now).await? {
        Ok(()) => Ok(None),
        Err(Refusal::Capped(refusal)) => Ok(Some(refusal)),
        Err(Refusal::Granted(why)) if req.refusal == RefusalMode::Error => {
            Err(Abort::App(SendError::InvalidArgument(why)))
        }
        Err(Refusal::Granted(why)) => Ok(Some(local_refusal(
            "INVALID_ARGUMENT",
            why,
            "Do not ask for call permission while a grant is valid.".into(),
        ))),
    }
}
