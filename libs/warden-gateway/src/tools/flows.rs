//! Flows (docs/tools.md, Flows): get_flow_responses (customers' submissions, read-only) and
//! list_flows (the business's flows on the platform), plus the parameters of
//! send_interactive's kind `flow` and send_template's flow_token / flow_data, which the
//! send tools take from here.

use rmcp::handler::server::tool::ToolName;
use rmcp::model::{CallToolResult, JsonObject};
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use uuid::Uuid;
use warden_core::flows::responses::{self, Filter};
use warden_rules::rich::flow::{
    FLOW_MESSAGE_VERSION, FlowActionPayload, FlowParameters, Parameters,
};
use warden_rules::rich::{ActionFields, RichError};

use crate::answer::{finish, ts};
use crate::error::{ToolError, ToolResult};
use crate::gateway::Gateway;
use crate::input::checks::{bounded, check_len};
use crate::input::fields::{Customer, Id, Json, Text, Whole, opt_string, opt_whole};
use crate::input::shared::SenderName;
use crate::input::{Input, parse};
use crate::schema::{self, FlowOut, FlowResponseOut, FlowResponsesOut, FlowsOut, SendOut};
use crate::tools::senders::sender_arg;

/// send_interactive's parameters of kind `flow` (flattened into its input).
#[derive(Deserialize, JsonSchema, Default)]
pub struct FlowArgs {
    /// kind flow: the flow's id (list_flows lists them). Give exactly one of flow_id and flow_name.
    pub flow_id: Option<Text>,
    /// kind flow: the flow's name, instead of flow_id.
    pub flow_name: Option<Text>,
    /// kind flow: the text of the button that opens the flow, 1 to 20 characters, no emoji.
    pub flow_cta: Option<Text>,
    /// kind flow: 1 to 256 printable characters that come back with the customer's answers (get_flow_responses); generated when left out. The result carries it as flow_token.
    pub flow_token: Option<Text>,
    /// kind flow: "navigate" (default: open `screen`) or "data_exchange" (the flow's endpoint chooses the first screen).
    pub flow_action: Option<Text>,
    /// kind flow with flow_action navigate (required then): the screen the flow opens on, e.g. "BOOKING".
    pub screen: Option<Text>,
    /// kind flow with flow_action navigate: the first screen's data, a non-empty JSON object (as a string, or the object itself), e.g. {"party_size": 2}.
    pub data: Option<Json>,
    /// kind flow: "published" (default) or "draft" (to try a flow not yet published).
    pub mode: Option<Text>,
}

impl FlowArgs {
    /// The parameters given, by name, in the order they are refused for another kind.
    fn given(&self) -> [(&'static str, bool); 8] {
        [
            ("flow_id", self.flow_id.is_some()),
            ("flow_name", self.flow_name.is_some()),
            ("flow_cta", self.flow_cta.is_some()),
            ("flow_token", self.flow_token.is_some()),
            ("flow_action", self.flow_action.is_some()),
            ("screen", self.screen.is_some()),
            ("data", self.data.is_some()),
            ("mode", self.mode.is_some()),
        ]
    }

    /// Another kind than flow: any flow parameter is refused by name.
    pub(crate) fn refuse_for_other_kind(&self) -> ToolResult<()> {
        match self.given().into_iter().find(|(_, given)| *given) {
            Some((field, _)) => Err(rich_error(RichError {
                field: field.into(),
                problem: "belongs to kind flow only".into(),
            })),
            None => Ok(()),
        }
    }

    /// The action of a flow message and its token (the one given, else a new one). Every
    /// limit is the rules' (`warden_rules::rich::flow`); only a missing `flow_cta` is
    /// named here, since the action cannot be made without it.
    pub(crate) fn action(&self) -> ToolResult<(ActionFields, String)> {
        let flow_cta = opt_string(&self.flow_cta).ok_or_else(|| {
            rich_error(RichError {
                field: "flow_cta".into(),
                problem: "is required for kind flow (the button text, 1 to 20 characters)".into(),
            })
        })?;
        let token = opt_string(&self.flow_token).unwrap_or_else(new_token);
        let screen = opt_string(&self.screen);
        let data = self.data.as_ref().map(|Json(v)| v.clone());
        let flow_action_payload = match (screen, data) {
            (None, None) => None,
            (screen, data) => Some(FlowActionPayload { screen, data }),
        };
        let parameters = FlowParameters {
            flow_message_version: FLOW_MESSAGE_VERSION.into(),
            flow_token: token.clone(),
            flow_id: opt_string(&self.flow_id),
            flow_name: opt_string(&self.flow_name),
            flow_cta,
            mode: opt_string(&self.mode).unwrap_or_else(|| "published".into()),
            flow_action: opt_string(&self.flow_action).unwrap_or_else(|| "navigate".into()),
            flow_action_payload,
        };
        Ok((
            ActionFields {
                name: Some("flow".into()),
                parameters: Some(Parameters::Flow(parameters)),
                ..ActionFields::default()
            },
            token,
        ))
    }
}

/// A flow rule broken: INVALID_ARGUMENT naming the field, as every rich message's refusal.
fn rich_error(e: RichError) -> ToolError {
    ToolError::invalid(
        format!("The parameter {}.", crate::quoting::detail(e)),
        "Fix that parameter to fit the platform's limit and call again.",
    )
}

/// A new flow token: random and opaque (it travels to the customer's device and back).
pub(crate) fn new_token() -> String {
    format!("flow-{}", Uuid::new_v4().simple())
}

/// send_template's FLOW button: the platform's `button` component (`sub_type "flow"`) at
/// `index`, carrying the token and the flow's first data.
pub(crate) fn template_flow_button(index: usize, token: &str, data: Option<&Value>) -> Value {
    let mut action = json!({ "flow_token": token });
    if let Some(data) = data {
        action["flow_action_data"] = data.clone();
    }
    json!({
        "type": "button",
        "sub_type": "flow",
        "index": index.to_string(),
        "parameters": [{ "type": "action", "action": action }],
    })
}

/// send_template's parameters for a template with a FLOW button (flattened into its input).
#[derive(Deserialize, JsonSchema, Default)]
pub struct TemplateFlowArgs {
    /// For a template with a FLOW button: 1 to 256 printable characters that come back with the customer's answers (get_flow_responses); generated when left out. The result carries it as flow_token.
    pub flow_token: Option<Text>,
    /// For a template with a FLOW button: the flow's first data, a non-empty JSON object (as a string, or the object itself), e.g. {"order_id": "A-1"}.
    pub flow_data: Option<Json>,
}

#[derive(Deserialize, JsonSchema)]
pub struct FlowResponsesIn {
    /// Only the answers to the flow message that carried this flow_token (send_interactive and send_template return it).
    pub flow_token: Option<Text>,
    /// Only this customer's answers: phone number with country code (e.g. "+6281234567890") or BSUID.
    pub customer_id: Option<Customer>,
    /// Only the answers to this flow message (its message_id from send_interactive or send_template), or the submission with this message_id.
    pub message_id: Option<Id>,
    /// At most this many, newest first: 1 to 100; default 20.
    #[schemars(range(min = 1, max = 100), extend("default" = 20))]
    pub limit: Option<Whole<u32>>,
    /// Only submissions to this business number: a sender id or its phone_number_id (list_senders lists them). Default: every number the caller may read.
    pub from: Option<SenderName>,
}

#[derive(Deserialize, JsonSchema)]
pub struct ListFlowsIn {
    /// The business whose flows to list, named by one of its numbers: a sender id or its phone_number_id (list_senders lists them). Default: the default sender's business.
    pub from: Option<SenderName>,
}

/// get_flow_responses' default page.
const DEFAULT_LIMIT: i64 = 20;

#[tool_router(router = flow_tools, vis = "pub(crate)")]
impl Gateway {
    #[tool(
        description = "Read customers' flow submissions (the answers to a send_interactive kind flow or a template's FLOW \
button), newest first, filtered by flow_token, customer_id or message_id (at least one). Each: flow_token, customer_id, \
received_at, response (the answers as a JSON object; {\"raw\": ...} with parse_error true when the customer's app sent \
something that is not JSON), flow_message_id (our message_id of the flow message, null when unknown) and message_id \
(the submission's own). Read-only. Errors: INVALID_ARGUMENT (no filter, or a limit outside 1..100), NOT_FOUND \
(message_id names no message of the caller's numbers), UNAVAILABLE.",
        input_schema = schema::input::<FlowResponsesIn>(),
        output_schema = schema::output::<FlowResponsesOut>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn get_flow_responses(&self, tool: ToolName, args: JsonObject) -> CallToolResult {
        finish(&tool.0, self.get_flow_responses_impl(args).await)
    }

    #[tool(
        description = "List the business's Flows on the platform: id (what send_interactive kind flow and create_template's \
FLOW buttons take as flow_id), name, status (DRAFT flows are sent with mode draft) and categories. Read-only. \
Errors: INVALID_ARGUMENT (unknown from), UPSTREAM_ERROR (the platform refused or failed), UNAVAILABLE.",
        input_schema = schema::input::<ListFlowsIn>(),
        output_schema = schema::output::<FlowsOut>(),
        annotations(read_only_hint = true, open_world_hint = true)
    )]
    async fn list_flows(&self, tool: ToolName, args: JsonObject) -> CallToolResult {
        finish(&tool.0, self.list_flows_impl(args).await)
    }
}

impl Gateway {
    /// A template with a FLOW button gets its `button` component (the token given, else a
    /// new one, and `flow_data`) unless the caller wrote it in `components`; returns the
    /// token the result carries. `flow_token` or `flow_data` for a template without a FLOW
    /// button is refused by name. An unknown template is left to the send path.
    pub(crate) async fn fill_flow_button(
        &self,
        f: &TemplateFlowArgs,
        from: Option<&str>,
        name: &str,
        locale: &str,
        components: &mut Vec<Value>,
    ) -> ToolResult<Option<String>> {
        let given = |field: &str| {
            rich_error(RichError {
                field: field.into(),
                problem: "is only for a template with a FLOW button".into(),
            })
        };
        let Some(index) = warden_core::flows::template_button::flow_button_index(
            &self.core(),
            from,
            name,
            locale,
        )
        .await?
        else {
            return Ok(None);
        };
        let Some(index) = index else {
            return match (&f.flow_token, &f.flow_data) {
                (Some(_), _) => Err(given("flow_token")),
                (None, Some(_)) => Err(given("flow_data")),
                (None, None) => Ok(None),
            };
        };
        let written = components
            .iter()
            .find(|c| c.get("sub_type").and_then(Value::as_str) == Some("flow"));
        if let Some(c) = written {
            if f.flow_token.is_some() || f.flow_data.is_some() {
                return Err(rich_error(RichError {
                    field: if f.flow_token.is_some() {
                        "flow_token"
                    } else {
                        "flow_data"
                    }
                    .into(),
                    problem: "was given besides a flow button in `components`; give one of them"
                        .into(),
                }));
            }
            let token = c
                .pointer("/parameters/0/action/flow_token")
                .and_then(Value::as_str)
                .map(str::to_owned);
            return Ok(token);
        }
        let token = opt_string(&f.flow_token).unwrap_or_else(new_token);
        warden_rules::rich::flow::check_token("flow_token", &token).map_err(rich_error)?;
        let data = f.flow_data.as_ref().map(|Json(v)| v);
        if let Some(d) = data {
            warden_rules::rich::flow::check_data("flow_data", d).map_err(rich_error)?;
        }
        components.push(template_flow_button(index, &token, data));
        Ok(Some(token))
    }

    /// A flow send's answer carries its token: the one just sent, or (an idempotent replay)
    /// the one the first call stored.
    pub(crate) async fn with_flow_token(
        &self,
        mut out: SendOut,
        token: String,
    ) -> ToolResult<SendOut> {
        out.flow_token = if out.replayed {
            let id: Uuid = out.message_id.parse().map_err(|_| {
                ToolError::unavailable("the replayed message's id could not be read")
            })?;
            responses::token_of_message(&self.core(), id).await?
        } else {
            Some(token)
        };
        Ok(out)
    }

    async fn get_flow_responses_impl(&self, args: JsonObject) -> ToolResult<FlowResponsesOut> {
        let a: Input<FlowResponsesIn> = parse(args)?;
        if a.flow_token.is_none() && a.customer_id.is_none() && a.message_id.is_none() {
            return Err(ToolError::invalid(
                "get_flow_responses needs a filter: give `flow_token`, `customer_id` or `message_id`.",
                "Pass the flow_token or message_id a flow send returned, or the customer_id whose answers to read.",
            ));
        }
        let limit = match opt_whole(&a.limit) {
            Some(l) => bounded(
                "limit",
                l,
                1,
                responses::MAX_LIMIT,
                "between 1 and 100 (default 20)",
            )?,
            None => DEFAULT_LIMIT,
        };
        let customer = match &a.customer_id {
            Some(c) => Some(self.resolve(c).await?.digits().to_string()),
            None => None,
        };
        let core = self.core();
        let sender = match sender_arg(&a.from) {
            Some(from) => Some(core.sender_keys(Some(from))?.sender),
            None => None,
        };
        let flow_token = opt_string(&a.flow_token);
        if let Some(t) = &flow_token {
            // No token is longer: refused before it reaches a query.
            check_len(
                "flow_token",
                t,
                warden_rules::rich::flow::MAX_FLOW_TOKEN_CHARS,
                "Pass the flow_token a flow send returned (at most 256 characters).",
            )?;
        }
        let filter = Filter {
            flow_token,
            customer,
            message_id: a.message_id.map(|id| id.0),
            sender,
        };
        let found = responses::read(&core, &filter, limit).await?;
        Ok(FlowResponsesOut {
            responses: found
                .into_iter()
                .map(|r| FlowResponseOut {
                    flow_token: r.flow_token,
                    from: core.sender_id_of_key(&r.sender).to_string(),
                    customer_id: r.customer,
                    received_at: ts(r.received_at),
                    response: r.response,
                    parse_error: r.parse_error,
                    flow_message_id: r.flow_message_id.map(|id| id.to_string()),
                    message_id: r.message_id.to_string(),
                })
                .collect(),
        })
    }

    async fn list_flows_impl(&self, args: JsonObject) -> ToolResult<FlowsOut> {
        let a: Input<ListFlowsIn> = parse(args)?;
        let (keys, platform) = self.sender_platform(sender_arg(&a.from))?;
        let flows = match platform.list_flows().await {
            Ok(flows) => flows,
            Err(e) => return Err(self.upstream_error("list the flows", &e).await),
        };
        Ok(FlowsOut {
            from: self.core().sender_id_of_key(&keys.sender).to_string(),
            flows: flows
                .into_iter()
                .map(|f| FlowOut {
                    id: f.id,
                    name: f.name,
                    status: f.status,
                    categories: f.categories,
                })
                .collect(),
        })
    }
}
