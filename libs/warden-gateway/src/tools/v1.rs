//! Group v1: check_compliance, send_message, send_template, explain_error.

use chrono::Utc;
use rmcp::model::{CallToolResult, JsonObject};
use rmcp::{tool, tool_router};
use warden_core::{RefusalMode, SendError, SendKind, SendRequest};
use warden_rules::kinds::MessageType;

use crate::args::Args;
use crate::error::{ToolError, ToolResult};
use crate::gateway::Gateway;
use crate::schema::{self, *};
use crate::text::{detail, echo};
use crate::tools::{check_text, check_variables, parse_components, parse_message_type};
use crate::util::finish;
use warden_rules::template_params::Variables;

#[tool_router(router = v1_tools, vis = "pub(crate)")]
impl Gateway {
    #[tool(
        name = "check_compliance",
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
    async fn check_compliance(&self, args: JsonObject) -> CallToolResult {
        finish(
            "check_compliance",
            self.check_compliance_impl(Args::new(args)).await,
        )
    }

    #[tool(
        name = "send_message",
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
    async fn send_message(&self, args: JsonObject) -> CallToolResult {
        finish(
            "send_message",
            self.send_message_impl(Args::new(args)).await,
        )
    }

    #[tool(
        name = "send_template",
        description = "Send an APPROVED message template (works outside the care window). Give variables as a JSON array with one \
value per {{n}} placeholder (a named template: a JSON object keyed by name). A template with a media or variable header \
or with URL/copy-code/OTP buttons also takes components (the platform's header/body/button parameters). Runs compliance (opt-outs, the marketing frequency cap, policies) by the template's category, \
records the message and queues it. Returns status \"queued\" and message_id. Errors: NOT_FOUND (no template of that name \
and locale: see list_templates), TEMPLATE_NOT_APPROVED (wait for approval; sync_template_status shows it), INVALID_ARGUMENT \
(variables do not match the placeholders, or another bad parameter), USER_OPTED_OUT, FREQUENCY_CAP_EXCEEDED (wait: \
check_frequency_cap tells when), POLICY_RESTRICTION, UNAVAILABLE (retry shortly).",
        input_schema = schema::input::<SendTemplateIn>(),
        output_schema = schema::output::<SendOut>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = true)
    )]
    async fn send_template(&self, args: JsonObject) -> CallToolResult {
        finish(
            "send_template",
            self.send_template_impl(Args::new(args)).await,
        )
    }

    #[tool(
        name = "explain_error",
        description = "Explain a platform error code (for example from get_delivery_status): its category, whether a retry can \
succeed (can_retry), a plain explanation and what to do. Codes Warden does not know get a cautious fallback (known false). \
Errors: INVALID_ARGUMENT (code is not a number).",
        input_schema = schema::input::<ExplainErrorIn>(),
        output_schema = schema::output::<ExplainOut>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn explain_error(&self, args: JsonObject) -> CallToolResult {
        finish(
            "explain_error",
            self.explain_error_impl(Args::new(args)).await,
        )
    }
}

impl Gateway {
    async fn check_compliance_impl(&self, a: Args) -> ToolResult<ComplianceOut> {
        let phone = self.customer(&a, "customer_id").await?;
        let raw_type = a.string(
            "message_type",
            "marketing, utility, template or service (free-form text).",
        )?;
        let message_type = parse_message_type(&raw_type)?;
        let channel = a.channel()?;
        // No content here: message_type describes it (service = free-form, marketing =
        // a marketing template, ...; `template` = the least restricted, utility). The
        // same content judged by a send gets the same answer.
        let text = a.opt_string("text")?;
        let content = message_type.described_content();
        let mut decision = self.core().check(&phone, content, Utc::now()).await?;
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
            channel: channel.to_string(),
            message_type: message_type.as_str().to_string(),
            allowed: decision.allowed,
            reason_code: decision.reason_code.as_str().to_string(),
            human_explanation: explanation,
            suggested_action: decision.suggested_action,
            policy_id: decision.policy_id,
        })
    }

    async fn send_message_impl(&self, a: Args) -> ToolResult<SendOut> {
        let key = a.idempotency("send_message", self.actor())?;
        let phone = self.customer(&a, "to").await?;
        let text = a.string("text", "the message text.")?;
        check_text("text", &text)?;
        let channel = a.channel()?;
        self.send_free_form(
            phone,
            channel,
            SendKind::Text { body: text },
            self.actor(),
            key,
        )
        .await
    }

    async fn send_template_impl(&self, a: Args) -> ToolResult<SendOut> {
        let key = a.idempotency("send_template", self.actor())?;
        let phone = self.customer(&a, "to").await?;
        let name = a.string(
            "template_name",
            "the name of an APPROVED template (see list_templates).",
        )?;
        let locale = a.locale()?;
        let (variables, components) = template_values(&a)?;
        let channel = a.channel()?;
        if warden_core::templates::impossible_name(&name) {
            // No template can have it: answer without asking the database.
            return Err(SendError::TemplateNotFound { name, locale }.into());
        }
        let accepted = self
            .core()
            .send_keyed(
                SendRequest {
                    phone: phone.clone(),
                    channel: channel.to_string(),
                    kind: SendKind::Template {
                        name,
                        locale,
                        variables,
                        components,
                    },
                    message_type: MessageType::Template,
                    campaign_id: None,
                    existing_message_id: None,
                    refusal: RefusalMode::Error,
                    actor: self.actor(),
                },
                key,
            )
            .await?;
        Ok(SendOut::queued(&accepted, &phone, channel))
    }

    async fn explain_error_impl(&self, a: Args) -> ToolResult<ExplainOut> {
        let raw = a.string(
            "code",
            "the platform's numeric error code, e.g. \"131047\".",
        )?;
        let digits = raw.trim().trim_start_matches('#');
        let code: i32 = digits
            .parse()
            .ok()
            .filter(|c: &i32| *c >= 0)
            .ok_or_else(|| {
                ToolError::invalid(
                    format!(
                        "The parameter `code` must be a numeric platform error code, got {}.",
                        echo(&raw)
                    ),
                    "Pass the number only, e.g. \"131047\".",
                )
            })?;
        let mut conn = self.conn().await?;
        let e = warden_core::delivery::knowledge::explain(&mut conn, code).await?;
        Ok(ExplainOut {
            code: e.code,
            title: e.title,
            category: e.category,
            can_retry: e.can_retry,
            human_explanation: e.human_explanation,
            suggested_action: e.suggested_action,
            known: e.known,
        })
    }
}

/// send_template's `variables`: a JSON array (an object keyed by placeholder number is
/// accepted too).
/// send_template's `variables` (positional values, or named values that travel as a body
/// component) and `components`.
fn template_values(a: &Args) -> ToolResult<(Vec<String>, Vec<serde_json::Value>)> {
    let mut components = parse_components(a)?;
    let Some(value) = a.opt_json("variables", "a JSON array such as [\"Ana\", \"#1234\"]")? else {
        return Ok((Vec::new(), components));
    };
    let variables = warden_rules::template_params::parse_any_variables(&value).map_err(|e| {
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
