//! The business's Flows: `GET /{waba-id}/flows` (list_flows).

use serde::{Deserialize, Serialize};

use crate::client::PlatformClient;
use crate::error::PlatformError;
use crate::lenient;

/// The fields list_flows reads.
const FLOW_FIELDS: &str = "id,name,status,categories";

/// One flow as `GET /{waba-id}/flows` lists it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FlowInfo {
    #[serde(default, deserialize_with = "lenient::string")]
    pub id: String,
    #[serde(default)]
    pub name: String,
    /// DRAFT, PUBLISHED, DEPRECATED, BLOCKED, THROTTLED.
    #[serde(default)]
    pub status: String,
    /// SIGN_UP, APPOINTMENT_BOOKING, ... (the platform's closed list).
    #[serde(default)]
    pub categories: Vec<String>,
}

impl PlatformClient {
    /// Every flow of the account, following paging.
    pub async fn list_flows(&self) -> Result<Vec<FlowInfo>, PlatformError> {
        let url = self.url(
            &[&self.config().waba_id, "flows"],
            &[("fields", FLOW_FIELDS), ("limit", "100")],
        )?;
        self.collect_pages(url).await
    }
}
