//! Sending text and templates: check_compliance (the dry run), send_message, send_template
//! and reply_customer. Each goes through the one send path, `warden_core::Core::send_keyed`.

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
use warden_core::{RefusalMode, SendError, SendKind, SendRequest, TemplateSend};
use warden_rules::compliance::ReasonCode;
use warden_rules::kinds::MessageType;
use warden_rules::template_params::Variables;

use crate::input::fields::{Customer, Json, Text};
use crate::input::shared::{Keyed, OnChannel, template_locale};
use crate::input::template_values::{FormatValuesIn, code_components};
use crate::quoting::detail;
use crate::tools::flows::TemplateFlowArgs;
use crate::tools::{check_text, check_variables, components_of, parse_message_type};

#[derive(Deserialize, JsonSchema)]
pub struct CheckComplianceIn {
    /// The customer: phone number with country code (e.g. "+6281234567890") or BSUID (e.g. "US.13491208655302741918"); spaces, dashes and a leading + are fine in a phone.
    pub customer_id: Customer,
    /// What you plan to send: "marketing", "utility", "template" (judged as a utility template) or "service" (free-form text; "text" also works). Case-insensitive.
    pub message_type: Text,
    #[serde(flatten)]
    pub on: OnChannel,
    /// Optional: the text you plan to send, so content policies (content_filter, duplicate_guard) are judged too.
    pub text: Option<Text>,
}

#[derive(Deserialize, JsonSchema)]
pub struct SendMessageIn {
    /// Recipient: phone number with country code (e.g. "+6281234567890") or BSUID (e.g. "US.13491208655302741918").
    pub to: Customer,
    /// The message body (free-form text, at most 4096 characters).
    pub text: Text,
    #[serde(flatten)]
    pub on: OnChannel,
    #[serde(flatten)]
    pub keyed: Keyed,
}

#[derive(Deserialize, JsonSchema)]
pub struct SendTemplateIn {
    /// Recipient: phone number with country code (e.g. "+6281234567890") or BSUID (e.g. "US.13491208655302741918").
    pub to: Customer,
    /// Name of an APPROVED template stored locally (see list_templates); at most 512 characters.
    #[schemars(length(max = 512))]
    pub template_name: Text,
    /// Template language code such as "en", "id" or "pt_BR"; default "en".
    #[schemars(extend("default" = "en"))]
    pub locale: Option<Text>,
    /// Accepted for `locale`, as the platform calls it.
    #[schemars(skip)]
    pub language: Option<Text>,
    /// JSON array (as a string) of values for the template's {{1}}, {{2}}, ... placeholders, in order, e.g. "[\"Ana\", \"#1234\"]"; for a named template a JSON object keyed by parameter name, e.g. "{\"first_name\": \"Ana\"}". Omit for a template without placeholders.
    pub variables: Option<Json>,
    /// JSON array (as a string) of template components in the platform's shape, for a template with a media or variable header or with URL/copy-code/OTP buttons, e.g. "[{\"type\": \"header\", \"parameters\": [{\"type\": \"image\", \"image\": {\"link\": \"https://...\"}}]}, {\"type\": \"button\", \"sub_type\": \"url\", \"index\": \"0\", \"parameters\": [{\"type\": \"text\", \"text\": \"A1\"}]}]". Body values may be given here instead of in variables. Checked against the template's components (list_templates shows them).
    pub components: Option<Json>,
    #[serde(flatten)]
    pub flow: TemplateFlowArgs,
    #[serde(flatten)]
    pub formats: FormatValuesIn,
    /// For an AUTHENTICATION template (required there, refused otherwise): the one-time code, 1 to 15 characters; it fills the body and the code button. The customer must be known by phone number.
    #[schemars(length(min = 1, max = 15))]
    pub code: Option<Text>,
    #[serde(flatten)]
    pub on: OnChannel,
    #[serde(flatten)]
    pub keyed: Keyed,
}

#[derive(Deserialize, JsonSchema)]
pub struct ReplyCustomerIn {
    /// The customer: phone number with country code (e.g. "+6281234567890") or BSUID (e.g. "US.13491208655302741918").
    pub customer_id: Customer,
    /// The reply text (free-form, at most 4096 characters).
    pub message_text: Text,
    #[serde(flatten)]
    pub on: OnChannel,
    #[serde(flatten)]
    pub keyed: Keyed,
}

#[tool_router(router = send_tools, vis = "pub(crate)")]
impl Gateway {
    #[tool(
        description = "Decide whether a planned outbound message to a customer is allowed right now, without sending anything. \
Use it before send_message, send_template or reply_customer. Returns allowed, reason_code (OK when allowed; otherwise \
TEMPLATE_REQUIRED = the 24-hour care window is closed so free-form text needs a template, USER_OPTED_OUT, \
FREQUENCY_CAP_EXCEEDED = the marketing cap is reached, POLICY_RESTRICTION = a business policy named in human_explanation \
forbids it), human_explanation and suggested_action. A refusal is a normal result (allowed false), not an error. \
Errors: INVALID_ARGUMENT (bad phone, message_type or channel: fix and retry), UNAVAILABLE (retry shortly).",
        input_schema = schema::input::<CheckComplianceIn>(),
        output_schema = schema::output::<ComplianceOut>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn check_compliance(&self, tool: ToolName, args: JsonObject) -> CallToolResult {
        finish(&tool.0, self.check_compliance_impl(args).await)
    }

    #[tool(
        description = "Send a free-form text message. Allowed only while the customer's 24-hour care window is open (they wrote \
within the last 24 hours). Runs compliance and policies, records the message and queues it for delivery. Returns status \
\"queued\" and the message_id (track it with get_delivery_status). Errors: TEMPLATE_REQUIRED (window closed: use \
send_template with an approved template), USER_OPTED_OUT (do not message them), FREQUENCY_CAP_EXCEEDED, POLICY_RESTRICTION \
(the message names the policy; follow suggested_action), INVALID_ARGUMENT (fix the parameter), UNAVAILABLE (nothing was \
written; retry shortly).",
        input_schema = schema::input::<SendMessageIn>(),
        output_schema = schema::output::<SendOut>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = true)
    )]
    async fn send_message(&self, tool: ToolName, args: JsonObject) -> CallToolResult {
        finish(&tool.0, self.send_message_impl(args).await)
    }

    #[tool(
        description = "Send an APPROVED message template (works outside the care window). Give variables as a JSON array with one \
value per {{n}} placeholder (a named template: a JSON object keyed by name). A template with a media or variable header \
or with URL/copy-code/OTP buttons also takes components (the platform's header/body/button parameters); a carousel takes cards, a \
limited-time offer offer_expires_at, an AUTHENTICATION template code (to a customer known by phone number). Runs compliance (opt-outs, the marketing frequency cap, policies) by the template's category, \
records the message and queues it. Returns status \"queued\" and message_id. Errors: NOT_FOUND (no template of that name \
and locale: see list_templates), TEMPLATE_NOT_APPROVED (wait for approval; sync_template_status shows it), INVALID_ARGUMENT \
(variables do not match the placeholders, or another bad parameter), USER_OPTED_OUT, FREQUENCY_CAP_EXCEEDED (wait: \
check_frequency_cap tells when), POLICY_RESTRICTION, UNAVAILABLE (retry shortly).",
        input_schema = schema::input::<SendTemplateIn>(),
        output_schema = schema::output::<SendOut>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = true)
    )]
    async fn send_template(&self, tool: ToolName, args: JsonObject) -> CallToolResult {
        finish(&tool.0, self.send_template_impl(args).await)
    }

    #[tool(
        description = "Reply to a customer with free-form text inside their open 24-hour care window (they wrote within the \
last 24 hours). Goes through the same compliance, policy and send chain as every send. Returns status \"queued\" and \
message_id. Errors: WINDOW_CLOSED (the window is closed: use send_template with an approved template instead), \
USER_OPTED_OUT (do not message them), POLICY_RESTRICTION (the message names the policy), INVALID_ARGUMENT (fix the \
parameter), UNAVAILABLE (nothing was written; retry shortly).",
        input_schema = schema::input::<ReplyCustomerIn>(),
        output_schema = schema::output::<SendOut>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = true)
    )]
    async fn reply_customer(&self, tool: ToolName, args: JsonObject) -> CallToolResult {
        finish(&tool.0, self.reply_customer_impl(args).await)
    }
}

impl Gateway {
    async fn check_compliance_impl(&self, args: JsonObject) -> ToolResult<ComplianceOut> {
        let a: Input<CheckComplianceIn> = parse(args)?;
        let phone = self.resolve(&a.customer_id).await?;
        let message_type = parse_message_type(a.message_type.as_str())?;
        let channel = a.on.channel();
        // No content here: message_type describes it (service = free-form, marketing =
        // a marketing template, ...; `template` = the least restricted, utility). The
        // same content judged by a send gets the same answer.
        let text = a.text.clone().map(|t| t.0);
        let content = message_type.described_content();
        let mut decision = self
            .core()
            .check(&phone, a.on.from(), content, Utc::now())
            .await?;
        // A planned text is judged by the content policies too, as a send would judge it.
        if let Some(body) = text.filter(|_| decision.allowed) {
            let content = SendKind::Text { body }.to_content();
            if let Some(refusal) = self
                .core()
                .check_content(
                    &phone,
                    message_type.described_content().category(),
                    &content,
                )
                .await?
            {
                decision = refusal;
            }
        }
        let mut explanation = decision.human_explanation;
        if message_type == MessageType::Template {
            explanation.push_str(
                " (message_type template was judged as a utility template; check marketing for a marketing template.)",
            );
        }
        Ok(ComplianceOut {
            customer_id: phone.digits().to_string(),
            from: self.core().sender(a.on.from())?.id.clone(),
            channel: channel.to_string(),
            message_type: message_type.as_str().to_string(),
            allowed: decision.allowed,
            reason_code: decision.reason_code.as_str().to_string(),
            human_explanation: explanation,
            suggested_action: decision.suggested_action,
            policy_id: decision.policy_id,
        })
    }

    async fn send_message_impl(&self, args: JsonObject) -> ToolResult<SendOut> {
        let a: Input<SendMessageIn> = parse(args)?;
        let key = a.idempotency(&a.keyed, "send_message", self.actor())?;
        let phone = self.resolve(&a.to).await?;
        let text = a.text.0.clone();
        check_text("text", &text)?;
        self.send_free_form(
            phone,
            &a.on,
            SendKind::Text { body: text },
            self.actor(),
            key,
        )
        .await
    }

    async fn send_template_impl(&self, args: JsonObject) -> ToolResult<SendOut> {
        let a: Input<SendTemplateIn> = parse(args)?;
        let key = a.idempotency(&a.keyed, "send_template", self.actor())?;
        let phone = self.resolve(&a.to).await?;
        let name = a.template_name.0.clone();
        let locale = template_locale(&a.locale, &a.language)?;
        let (variables, mut components) = template_values(&a.variables, &a.components)?;
        components.extend(a.formats.components(Utc::now())?);
        components.extend(code_components(&a.code)?);
        let channel = a.on.channel();
        if warden_core::templates::impossible_name(&name) {
            // No template can have it: answer without asking the database.
            return Err(SendError::TemplateNotFound { name, locale }.into());
        }
        let flow_token = self
            .fill_flow_button(&a.flow, a.on.from(), &name, &locale, &mut components)
            .await?;
        let accepted = self
            .core()
            .send_keyed(
                SendRequest {
                    sender: a.on.from().map(str::to_string),
                    phone: phone.clone(),
                    channel: channel.to_string(),
                    kind: SendKind::Template(TemplateSend {
                        name,
                        locale,
                        variables,
                        components,
                    }),
                    message_type: MessageType::Template,
                    campaign_id: None,
                    existing_message_id: None,
                    refusal: RefusalMode::Error,
                    actor: self.actor(),
                },
                key,
            )
            .await?;
        let out = SendOut::queued(&accepted, &phone, channel);
        match flow_token {
            Some(token) => self.with_flow_token(out, token).await,
            None => Ok(out),
        }
    }

    async fn reply_customer_impl(&self, args: JsonObject) -> ToolResult<SendOut> {
        let a: Input<ReplyCustomerIn> = parse(args)?;
        let key = a.idempotency(&a.keyed, "reply_customer", self.actor())?;
        let phone = self.resolve(&a.customer_id).await?;
        let text = a.message_text.0.clone();
        check_text("message_text", &text)?;
        let channel = a.on.channel();
        let result = self
            .core()
            .send_keyed(
                SendRequest::from_tool(
                    phone.clone(),
                    channel,
                    SendKind::Text { body: text },
                    MessageType::Service,
                    self.actor(),
                )
                .from_sender(a.on.from()),
                key,
            )
            .await;
        let accepted = match result {
            Ok(a) => a,
            Err(SendError::Refused(d)) if d.reason_code == ReasonCode::TemplateRequired => {
                return Err(ToolError::new(
                    code::WINDOW_CLOSED,
                    d.human_explanation,
                    "The care window is closed, so a free-form reply is not allowed: send an approved template with send_template instead (list_templates shows them); the window reopens when the customer writes again.",
                ));
            }
            Err(e) => return Err(e.into()),
        };
        Ok(SendOut::queued(&accepted, &phone, channel))
    }
}

/// send_template's `variables` (positional values, or named values that travel as a body
/// component) and `components`.
fn template_values(
    variables: &Option<Json>,
    components: &Option<Json>,
) -> ToolResult<(Vec<String>, Vec<serde_json::Value>)> {
    let mut components = components_of(components)?;
    let Some(Json(value)) = variables else {
        return Ok((Vec::new(), components));
    };
    let variables = warden_rules::template_params::parse_any_variables(value).map_err(|e| {
        ToolError::invalid(
            format!("The parameter `variables` is not usable: {}.", detail(e)),
            "Pass variables as a JSON array with one value per {{n}} placeholder, e.g. [\"Ana\", \"#1234\"] (or, for a named template, an object such as {\"first_name\": \"Ana\"}).",
        )
    })?;
    match variables {
        Variables::Positional(variables) => {
            check_variables("variables", &variables)?;
            Ok((variables, components))
        }
        Variables::Named(named) => {
            let values: Vec<String> = named.iter().map(|(_, v)| v.clone()).collect();
            check_variables("variables", &values)?;
            components.push(warden_rules::template_params::named_body_component(&named));
            Ok((Vec::new(), components))
        }
    }
}
