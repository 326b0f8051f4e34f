//! Published schemas: [`input`] of a tool's parameter struct (beside its handler, read by
//! [`crate::input::parse`]) and [`output`] of the structs the tools serialise into
//! `structuredContent`, which live here.

// The outputs, one module per group of tools (as in `crate::tools`).
mod account;
mod campaigns;
mod conversations;
mod cost;
mod customers;
mod delivery;
mod flows;
mod sending;
mod templates;

pub use account::{
    AccountQualityOut, CostOut, MessagingLimitOut, PricingOut, ProtectionOut, SenderOut,
    SendersOut, SyncWebhooksOut, ThroughputOut,
};
pub use campaigns::{
    CampaignMoveOut, CampaignOut, CampaignPreviewOut, CancelCampaignOut, CountryPreviewOut,
    ScheduleCampaignOut, ScheduleMessageOut,
};
pub use conversations::{ArchiveOut, ConversationItem, ConversationOut, ConversationsPage};
pub use cost::{CostLineOut, CostReport, SpendOut};
pub use customers::{
    ContextConversation, CustomerContextOut, CustomerIds, Eligibility, Eligible, FrequencyOut,
    LastRefusalOut, OptIn,
};
pub use delivery::{
    DeliveryOut, ErrorObj, ExplainOut, MessagePricingOut, RateLimitOut, RetryItem, RetryOut,
};
pub use flows::{FlowOut, FlowResponseOut, FlowResponsesOut, FlowsOut};
pub use sending::{ComplianceOut, SendOut};
pub use templates::{
    CategoryChangeItem, CreateTemplateOut, SyncTemplateOut, TemplateItem, TemplatesPage,
};

use std::sync::Arc;

use rmcp::model::JsonObject;
use schemars::JsonSchema;

/// inputSchema of `T` (object root, title/description stripped), standard JSON Schema only.
pub fn input<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    let schema = rmcp::handler::server::tool::schema_for_input::<T>()
        .unwrap_or_else(|e| panic!("input schema of {}: {e}", std::any::type_name::<T>()));
    standard(schema)
}

/// outputSchema of `T` (what its Serialize writes), standard JSON Schema only.
pub fn output<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    standard(rmcp::handler::server::tool::schema_for_output::<T>())
}

/// The `format`s JSON Schema 2020-12 defines; validators (the MCP Inspector's among them)
/// warn about any other.
pub const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Every schema goes through here: schemars writes Rust-flavoured formats (`uint32`,
/// `int64`, `double`, ...) that are not JSON Schema. They are dropped; an unsigned one
/// becomes `minimum: 0` when no minimum is set, so the bound is kept in standard terms.
fn standard(schema: Arc<JsonObject>) -> Arc<JsonObject> {
    let mut obj = Arc::unwrap_or_clone(schema);
    strip_formats(&mut obj);
    Arc::new(obj)
}

fn strip_formats(obj: &mut JsonObject) {
    let format = obj
        .get("format")
        .and_then(|f| f.as_str())
        .map(str::to_owned);
    if let Some(f) = format
        && !STANDARD_FORMATS.contains(&f.as_str())
    {
        obj.remove("format");
        if f.starts_with("uint") && !obj.contains_key("minimum") {
            obj.insert("minimum".into(), serde_json::json!(0));
        }
    }
    for v in obj.values_mut() {
        strip_value(v);
    }
}

fn strip_value(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(o) => strip_formats(o),
        serde_json::Value::Array(a) => a.iter_mut().for_each(strip_value),
        _ => {}
    }
}

/// The input of a tool that takes no parameters.
#[derive(JsonSchema)]
pub struct NoParams {}
