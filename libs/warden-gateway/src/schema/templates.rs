//! What the template tools answer: the catalogue, its sync, a created template.

use schemars::JsonSchema;
use serde::Serialize;

#[derive(Serialize, JsonSchema)]
pub struct TemplateItem {
    pub name: String,
    pub locale: String,
    pub category: String,
    pub status: String,
    pub body_text: String,
    /// "positional" or "named".
    pub parameter_format: String,
    /// The template's components as created (HEADER, BODY, FOOTER, BUTTONS), in the platform's shape.
    pub components: Vec<serde_json::Value>,
    /// The platform's reason for the last rejection, pause or disable (e.g. `INCORRECT_CATEGORY`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The platform's quality score of the template (GREEN, YELLOW, RED, UNKNOWN).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quality_score: Option<String>,
    /// A re-categorisation the platform announced and that has not taken effect yet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub category_change: Option<CategoryChangeItem>,
}

#[derive(Serialize, JsonSchema)]
pub struct CategoryChangeItem {
    /// The category the template gets (lower case).
    pub to: String,
    /// When (RFC 3339); from then on sends obey that category's rules.
    pub at: String,
}

#[derive(Serialize, JsonSchema)]
pub struct TemplatesPage {
    /// The sender whose business's templates these are.
    pub from: String,
    pub templates: Vec<TemplateItem>,
    /// All matching templates (not just this page).
    pub total: i64,
    pub limit: i64,
    pub offset: i64,
}

#[derive(Serialize, JsonSchema)]
pub struct SyncTemplateOut {
    pub template_name: String,
    pub locale: String,
    pub status: String,
    pub category: String,
    pub platform_id: Option<String>,
    /// The local status before this sync (null when the template was not stored locally).
    pub previous_status: Option<String>,
    /// Present when REJECTED: the platform's reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Present when REJECTED: what to do next.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suggested_action: Option<String>,
}

#[derive(Serialize, JsonSchema)]
pub struct CreateTemplateOut {
    pub template_name: String,
    pub locale: String,
    pub category: String,
    /// "PENDING" until the platform decides.
    pub status: String,
    pub platform_id: String,
    pub note: String,
}
