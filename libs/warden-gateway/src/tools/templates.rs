//! Message templates: list_templates (the local copies), create_template (submitted to the
//! platform for approval) and sync_template_status (the platform's current verdict).

use rmcp::handler::server::tool::ToolName;
use rmcp::model::{CallToolResult, JsonObject};
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::answer::finish;
use crate::error::{ToolError, ToolResult, code};
use crate::gateway::Gateway;
use crate::input::{Input, parse};
use crate::schema::{self, *};
use chrono::Utc;
use warden_core::templates::{Submitted, SyncSource};
use warden_platform::template::CreateTemplateRequest;
use warden_rules::kinds::TemplateCategory;
use warden_rules::template_spec::{
    ParameterFormat, SpecError, TemplateSpec, parse_buttons, parse_header,
};

use crate::input::checks::{check_len, lower};
use crate::input::fields::{Json, Text, Whole, opt_string};
use crate::input::parsers::{MAX_LANGUAGE_CHARS, check_language};
use crate::input::shared::{SenderName, template_locale};
use crate::quoting::{detail, echo, kind_message};
use crate::tools::senders::sender_arg;
use crate::tools::{page, platform_template, template_name_arg};

/// create_template's carousel, limited-time offer and authentication parameters.
mod formats;

/// The longest status or category filter taken (the longest real value has 14 letters).
const MAX_FILTER_CHARS: usize = 32;

#[derive(Deserialize, JsonSchema)]
pub struct ListTemplatesIn {
    /// Only templates with this status: "APPROVED", "PENDING" or "REJECTED" (case-insensitive).
    pub status_filter: Option<Text>,
    /// Only templates of this category: "marketing", "utility" or "authentication" (case-insensitive).
    pub category_filter: Option<Text>,
    /// Only templates in this language, e.g. "en" or "id".
    pub locale_filter: Option<Text>,
    /// Page size, 1 to 500; default 50.
    #[schemars(range(min = 1, max = 500), extend("default" = 50))]
    pub limit: Option<Whole<u32>>,
    /// Number of templates to skip; default 0.
    #[schemars(range(min = 0), extend("default" = 0))]
    pub offset: Option<Whole<u32>>,
    /// The business whose templates these are, named by one of its numbers: a sender id or
    /// its phone_number_id (list_senders lists them; templates belong to a business, shared
    /// by its numbers). Default: the default sender's business.
    pub from: Option<SenderName>,
}

#[derive(Deserialize, JsonSchema)]
pub struct SyncTemplateIn {
    /// The template's name (at most 512 characters).
    #[schemars(length(max = 512))]
    pub template_name: Text,
    /// The template's language code such as "en", "id" or "pt_BR"; default "en".
    #[schemars(extend("default" = "en"))]
    pub locale: Option<Text>,
    /// Accepted for `locale`, as the platform calls it.
    #[schemars(skip)]
    pub language: Option<Text>,
    /// The business whose templates these are, named by one of its numbers: a sender id or
    /// its phone_number_id (list_senders lists them; templates belong to a business, shared
    /// by its numbers). Default: the default sender's business.
    pub from: Option<SenderName>,
}

#[derive(Deserialize, JsonSchema)]
pub struct CreateTemplateIn {
    /// Template name: lower-case letters, digits and underscores, at most 512 characters, e.g. "order_update_2".
    #[schemars(length(max = 512))]
    pub name: Text,
    /// "UTILITY", "MARKETING" or "AUTHENTICATION".
    pub category: Text,
    /// Language code, e.g. "en" or "en_US".
    #[schemars(with = "String")]
    pub language: Option<Text>,
    /// Accepted for `language`, as the other template tools call it.
    #[schemars(skip)]
    pub locale: Option<Text>,
    /// The body, at most 1024 characters, with numbered placeholders {{1}}, {{2}}, ... without gaps (or {{first_name}}-style names when parameter_format is named). Required, except for an AUTHENTICATION template with otp_type, whose body the platform writes.
    #[schemars(length(max = 1024))]
    pub body_text: Option<Text>,
    /// JSON object (as a string): {"format": "TEXT"|"IMAGE"|"VIDEO"|"DOCUMENT"|"LOCATION", "text": "..."}; text only for TEXT, at most 60 characters with at most 1 variable.
    pub header: Option<Json>,
    /// Footer text, at most 60 characters, no variables.
    #[schemars(length(max = 60))]
    pub footer: Option<Text>,
    /// JSON array (as a string) of buttons, at most 10: {"type": "QUICK_REPLY", "text"}, {"type": "URL", "text", "url"} (url may end in {{1}}; at most 2), {"type": "PHONE_NUMBER", "text", "phone_number"} (at most 1), {"type": "COPY_CODE", "text", "example"}, {"type": "OTP", "otp_type"} (AUTHENTICATION only), {"type": "FLOW", "text", "flow_id" or "flow_name", "flow_action"?: "navigate"|"data_exchange", "navigate_screen"?} (opens a Flow; at most 1; send_template fills it with flow_token and flow_data). Quick replies must sit together; button text at most 25 characters.
    pub buttons: Option<Json>,
    /// "positional" ({{1}}, the default) or "named" ({{first_name}}: lower-case letters, digits and underscores).
    #[schemars(extend("default" = "positional"))]
    pub parameter_format: Option<Text>,
    #[serde(flatten)]
    pub formats: formats::FormatsIn,
    /// The business whose templates these are, named by one of its numbers: a sender id or
    /// its phone_number_id (list_senders lists them; templates belong to a business, shared
    /// by its numbers). Default: the default sender's business.
    pub from: Option<SenderName>,
}

#[tool_router(router = template_tools, vis = "pub(crate)")]
impl Gateway {
    #[tool(
        description = "List the locally stored message templates page by page, optionally filtered by status (APPROVED, \
PENDING, REJECTED), category (marketing, utility, authentication) and locale; filters are case-insensitive. Use it to find \
an APPROVED template for send_template or schedule_campaign. Returns templates (name, locale, category, status, body_text \
with {{n}} placeholders), total, limit, offset. Errors: INVALID_ARGUMENT (limit outside 1..500, negative offset), \
UNAVAILABLE.",
        input_schema = schema::input::<ListTemplatesIn>(),
        output_schema = schema::output::<TemplatesPage>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn list_templates(&self, tool: ToolName, args: JsonObject) -> CallToolResult {
        finish(&tool.0, self.list_templates_impl(args).await)
    }

    #[tool(
        description = "Submit a new message template to the platform for approval. Validated locally first: name (lower-case \
letters, digits, underscores, at most 512), category (UTILITY, MARKETING, AUTHENTICATION), language code, body_text (at \
most 1024 characters, placeholders {{1}}, {{2}}, ... without gaps, or {{first_name}} names with parameter_format named), \
and the optional header ({format, text?}; text at most 60 characters with at most 1 variable), footer (at most 60) and \
buttons (at most 10; at most 2 URL, 1 PHONE_NUMBER, 1 COPY_CODE; quick replies together; OTP only for AUTHENTICATION). Returns template_name, locale, category, status \
\"PENDING\", platform_id and a note: approval (or rejection) arrives later by webhook; list_templates or \
sync_template_status show it, and only APPROVED templates can be sent. Errors: INVALID_ARGUMENT (fix the field named; \
also when the name already exists in that language), UPSTREAM_ERROR (the platform refused; the message explains its \
code), UNAVAILABLE.",
        input_schema = schema::input::<CreateTemplateIn>(),
        output_schema = schema::output::<CreateTemplateOut>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = true)
    )]
    async fn create_template(&self, tool: ToolName, args: JsonObject) -> CallToolResult {
        finish(&tool.0, self.create_template_impl(args).await)
    }

    #[tool(
        description = "Ask the platform, live, for a template's current status and update the local record (the recovery \
path when an approval webhook was missed). Returns template_name, locale, status (APPROVED, PENDING, REJECTED, ...), \
category and previous_status; when REJECTED also the platform's reason and a suggested_action. Also imports a template \
that exists on the platform but not locally. Errors: INVALID_ARGUMENT (template_name over 512 characters, locale not a \
language code), NOT_FOUND (the platform has no such template: check name and locale), UPSTREAM_ERROR (the platform \
refused; the message explains its code), UNAVAILABLE (platform or database unreachable).",
        input_schema = schema::input::<SyncTemplateIn>(),
        output_schema = schema::output::<SyncTemplateOut>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = true, open_world_hint = true)
    )]
    async fn sync_template_status(&self, tool: ToolName, args: JsonObject) -> CallToolResult {
        finish(&tool.0, self.sync_template_status_impl(args).await)
    }
}

impl Gateway {
    async fn list_templates_impl(&self, args: JsonObject) -> ToolResult<TemplatesPage> {
        let a: Input<ListTemplatesIn> = parse(args)?;
        let status = opt_string(&a.status_filter).map(|s| s.to_ascii_uppercase());
        let category = opt_string(&a.category_filter).map(|s| lower(&s));
        let locale = opt_string(&a.locale_filter).map(|s| lower(&s));
        // Filters reach the database: bounded (no stored value is longer).
        for (key, value, max, action) in [
            (
                "status_filter",
                &status,
                MAX_FILTER_CHARS,
                "Pass status_filter as APPROVED, PENDING or REJECTED, or leave it out.",
            ),
            (
                "category_filter",
                &category,
                MAX_FILTER_CHARS,
                "Pass category_filter as marketing, utility or authentication, or leave it out.",
            ),
            (
                "locale_filter",
                &locale,
                MAX_LANGUAGE_CHARS,
                "Pass locale_filter as a language code such as en or id, or leave it out.",
            ),
        ] {
            if let Some(v) = value {
                check_len(key, v, max, action)?;
            }
        }
        let (limit, offset) = page(&a.limit, &a.offset)?;
        let core = self.core();
        let sender = core.sender(sender_arg(&a.from))?;
        let (from, business) = (sender.id.clone(), core.senders().key_of(sender).business);
        let filters = warden_core::templates::list::TemplateFilters {
            business: Some(business),
            status,
            category,
            locale,
        };
        let listed =
            warden_core::templates::list::list(&self.core(), &filters, limit, offset).await?;
        let now = Utc::now();
        Ok(TemplatesPage {
            from,
            templates: listed
                .templates
                .into_iter()
                .map(|listed| {
                    // The category sends obey now (a re-categorisation counts from its time).
                    let category = lower(listed.effective_category(now));
                    let category_change =
                        listed
                            .upcoming_category(now)
                            .map(|(to, at)| CategoryChangeItem {
                                to: lower(to),
                                at: at.to_rfc3339(),
                            });
                    let t = listed.template;
                    TemplateItem {
                        category,
                        category_change,
                        reason: t.rejection_reason.clone().filter(|r| !r.is_empty()),
                        quality_score: listed.quality_score,
                        parameter_format: t
                            .parameter_format
                            .clone()
                            .unwrap_or_else(|| "positional".into()),
                        components: match &t.components {
                            Some(serde_json::Value::Array(c)) => c.clone(),
                            _ => vec![serde_json::json!({"type": "BODY", "text": t.body_text})],
                        },
                        name: t.name,
                        locale: t.locale,
                        status: t.status.to_ascii_uppercase(),
                        body_text: t.body_text,
                    }
                })
                .collect(),
            total: listed.total,
            limit,
            offset,
        })
    }

    async fn create_template_impl(&self, args: JsonObject) -> ToolResult<CreateTemplateOut> {
        let a: Input<CreateTemplateIn> = parse(args)?;
        let name = a.name.0.clone();
        let raw_category = a.category.0.clone();
        // `locale`, as the other template tools call it, is accepted too.
        let (language_key, language) = match (&a.locale, &a.language) {
            (Some(l), None) => ("locale", l.0.clone()),
            (_, Some(g)) => ("language", g.0.clone()),
            (None, None) => {
                return Err(ToolError::invalid(
                    "The parameter `language` is required and must not be empty.",
                    "Pass `language`: a language code such as en or en_US.",
                ));
            }
        };
        let body = formats::body_text(&a)?;
        warden_rules::templates::validate_template_name(&name).map_err(|e| {
            ToolError::invalid(
                format!("The template name is not valid: {}.", detail(e)),
                "Fix `name` and call again.",
            )
        })?;
        let category = raw_category.parse::<TemplateCategory>().map_err(|e| {
            ToolError::invalid(
                format!("{}.", kind_message(&e)),
                "Pass category as UTILITY, MARKETING or AUTHENTICATION.",
            )
        })?;
        check_language(language_key, &language)?;
        warden_rules::templates::validate_template_body(&body).map_err(|e| {
            ToolError::invalid(
                format!("The template body is not valid: {}.", detail(e)),
                "Fix `body_text` and call again.",
            )
        })?;
        let spec = template_spec(&a, &body, category)?;
        let (keys, platform) = self.sender_platform(sender_arg(&a.from))?;
        {
            let mut conn = self.conn().await?;
            if let Some(t) =
                warden_core::templates::find(&mut conn, &keys.business, &name, &language).await?
            {
                return Err(ToolError::invalid(
                    format!(
                        "A template named {} already exists in language {} (status {}).",
                        echo(&name),
                        echo(&language),
                        detail(&t.status)
                    ),
                    "Use that template (sync_template_status shows its latest status) or choose another name.",
                ));
            }
        }
        let request = if spec.is_body_only() {
            CreateTemplateRequest::new(&name, &language, category.as_upper(), &body)
        } else {
            CreateTemplateRequest {
                name: name.clone(),
                language: language.clone(),
                category: category.as_upper().to_owned(),
                components: serde_json::from_value(serde_json::Value::Array(spec.to_components()))
                    .map_err(|e| {
                        ToolError::invalid(
                            format!("The template components are not usable: {e}."),
                            "Fix `header` or `buttons` and call again.",
                        )
                    })?,
                parameter_format: (spec.parameter_format == ParameterFormat::Named)
                    .then(|| spec.parameter_format.as_str().to_uppercase()),
            }
        };
        let created = match platform.submit_template(&request).await {
            Ok(c) => c,
            Err(e) => return Err(self.upstream_error("create the template", &e).await),
        };
        let platform_id = created.id.clone();
        let submitted = Submitted {
            business: keys.business.clone(),
            name: name.clone(),
            language: language.clone(),
            category,
            body_text: body,
            status: created.status.clone(),
            platform_id: platform_id.clone(),
            components: (!spec.is_body_only())
                .then(|| serde_json::Value::Array(spec.to_components())),
            parameter_format: (!spec.is_body_only())
                .then(|| spec.parameter_format.as_str().to_owned()),
        };
        let stored =
            warden_core::templates::record_submitted(self.core().pg(), &submitted, self.actor())
                .await;
        let row = stored.map_err(|e| {
            let e = ToolError::from(e);
            if e.code == code::UNAVAILABLE {
                ToolError::new(
                    code::UNAVAILABLE,
                    format!(
                        "The platform accepted template {} (platform id {}), but the local record could not be written because the database is unavailable.",
                        echo(&name),
                        echo(&platform_id)
                    ),
                    "Once the database is back, call sync_template_status with this name and language to record it.",
                )
            } else {
                e
            }
        })?;
        Ok(CreateTemplateOut {
            template_name: row.name,
            locale: row.locale,
            category: category.as_upper().to_string(),
            status: row.status,
            platform_id,
            note: "Submitted for review: the platform's decision (APPROVED or REJECTED) arrives later by webhook, usually within minutes. list_templates or sync_template_status show it; only APPROVED templates can be sent.".into(),
        })
    }

    async fn sync_template_status_impl(&self, args: JsonObject) -> ToolResult<SyncTemplateOut> {
        let a: Input<SyncTemplateIn> = parse(args)?;
        // Both go into the platform's request URL: bounded before the call.
        let name = template_name_arg("template_name", &a.template_name)?;
        let locale = template_locale(&a.locale, &a.language)?;
        let (keys, platform) = self.sender_platform(sender_arg(&a.from))?;
        let info = match platform.get_template(&name, &locale).await {
            Ok(info) => info,
            Err(e) => return Err(self.upstream_error("read the template's status", &e).await),
        };
        let Some(info) = info else {
            return Err(ToolError::not_found(
                format!(
                    "The platform has no template named {} in locale {}.",
                    echo(&name),
                    echo(&locale)
                ),
                "Check the name and locale (list_templates shows the local ones), or create it with create_template.",
            ));
        };
        let synced = warden_core::templates::sync_from_platform(
            self.core().pg(),
            &keys.business,
            &platform_template(&info),
            &locale,
            SyncSource::SyncTemplateStatus,
            self.actor(),
        )
        .await?;
        let (previous, row) = (synced.previous_status, synced.template);
        let rejected = row.status == "REJECTED";
        Ok(SyncTemplateOut {
            template_name: row.name,
            locale: row.locale,
            status: row.status,
            category: lower(&row.category),
            platform_id: row.platform_id,
            previous_status: previous,
            reason: rejected.then(|| {
                row.rejection_reason
                    .unwrap_or_else(|| "The platform gave no reason.".into())
            }),
            suggested_action: rejected.then(|| {
                "Revise the body to address the reason (marketing wording in a utility template, missing examples, policy violations) and submit it again with create_template under a new name; use another APPROVED template meanwhile.".to_string()
            }),
        })
    }
}

/// create_template's header, footer, buttons and parameter_format, checked with the
/// platform's rules (each refusal names the field and the limit).
fn template_spec(
    a: &CreateTemplateIn,
    body: &str,
    category: TemplateCategory,
) -> ToolResult<TemplateSpec> {
    let invalid = |e: SpecError| {
        let field = e.field.split(['.', '[']).next().unwrap_or("").to_owned();
        ToolError::invalid(
            format!("The template is not valid: {}.", detail(e)),
            format!("Fix `{field}` and call again."),
        )
    };
    let parameter_format =
        ParameterFormat::parse(opt_string(&a.parameter_format).as_deref()).map_err(invalid)?;
    let header = a
        .header
        .as_ref()
        .map(|h| parse_header(&h.0))
        .transpose()
        .map_err(invalid)?;
    let buttons = a
        .buttons
        .as_ref()
        .map(|b| parse_buttons(&b.0))
        .transpose()
        .map_err(invalid)?
        .unwrap_or_default();
    let spec = TemplateSpec {
        parameter_format,
        header,
        body: body.to_owned(),
        footer: opt_string(&a.footer),
        buttons,
        ..Default::default()
    };
    let spec = formats::with_format(&a.formats, spec, a.buttons.is_some()).map_err(invalid)?;
    spec.validate(category).map_err(invalid)?;
    Ok(spec)
}
