//! Rich messages: send_media, send_interactive, send_location, react_to_message.
//!
//! Each builds a `warden_rules::rich::RichMessage` (the platform's own shape), which the
//! rules check against every platform limit, and sends it through `Core::send` like any
//! message: it is free-form, so it needs the care window (else TEMPLATE_REQUIRED), and
//! opt-outs and policies apply. `reply_to` quotes an earlier message by our message_id.

use rmcp::handler::server::tool::ToolName;
use rmcp::model::{CallToolResult, JsonObject};
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use uuid::Uuid;
use warden_core::SendKind;
use warden_rules::phone::PhoneNumber;
use warden_rules::rich::{
    ActionFields, CallPermissionAction, CtaParameters, Header, Interactive, InteractiveFields,
    InteractiveType, Location, LocationRequestAction, MediaObject, MediaType, Parameters, Reaction,
    Reply, ReplyButton, RichBody, RichError, RichMessage, Section, TextObject,
};

use serde::Deserialize;

use crate::answer::finish;
use crate::error::{ToolError, ToolResult};
use crate::gateway::Gateway;
use crate::input::fields::{Customer, Decimal, Id, Json, Text, opt_string};
use crate::input::shared::{Keyed, OnChannel};
use crate::input::{Input, parse};
use crate::schema::{self, SendOut};
use crate::tools::flows::FlowArgs;

mod commerce;

#[derive(Deserialize, JsonSchema)]
pub struct SendMediaIn {
    /// Recipient: phone number with country code (e.g. "+6281234567890") or BSUID (e.g. "US.13491208655302741918").
    pub to: Customer,
    /// image (jpeg/png), video (mp4/3gpp), audio (aac/amr/mpeg/mp4/ogg), document (pdf, office, text) or sticker (webp).
    pub media_type: Text,
    /// Public http(s) URL of the file. Give exactly one of link and media_id.
    pub link: Option<Text>,
    /// A media id from upload_media. Give exactly one of link and media_id.
    pub media_id: Option<Text>,
    /// Caption (at most 1024 characters); not allowed for audio and sticker.
    pub caption: Option<Text>,
    /// File name the customer sees (documents only).
    pub filename: Option<Text>,
    #[serde(flatten)]
    pub on: OnChannel,
    /// message_id of an earlier message in this conversation to quote (it must have been sent or received).
    pub reply_to: Option<Id>,
    #[serde(flatten)]
    pub keyed: Keyed,
}

#[derive(Deserialize, JsonSchema)]
pub struct SendInteractiveIn {
    /// Recipient: phone number with country code (e.g. "+6281234567890") or BSUID (e.g. "US.13491208655302741918").
    pub to: Customer,
    /// buttons (1 to 3 reply buttons), list (up to 10 rows behind a button), cta_url (one URL button), flow (a button that opens a Flow: flow_id or flow_name, flow_cta, screen, ...), location_request (the customer's "Send location" button; body only), call_permission_request (asks permission to call the customer; body only; refused while a grant is valid and after 2 requests in 24 h), product (one catalog product), product_list (up to 30 catalog products in sections) or catalog (the whole catalog behind a button).
    pub kind: Text,
    /// The message text, at most 1024 characters; required by every kind but product.
    pub body: Option<Text>,
    /// kind buttons: JSON array (as a string, or the array itself) of 1 to 3 {"id", "title"} (title at most 20 characters, ids unique), e.g. [{"id":"yes","title":"Yes"},{"id":"no","title":"No"}].
    pub buttons: Option<Json>,
    /// kind list: JSON array (string or array) of sections {"title"?, "rows": [{"id", "title" (≤ 24), "description"? (≤ 72)}]}, ≤ 10 rows in all, titles required when several. kind product_list: 1..10 sections {"title" (≤ 24), "product_items": [{"product_retailer_id"}]}, 1..30 products in all, ids unique.
    pub sections: Option<Json>,
    /// kind list: the label of the button that opens the list, at most 20 characters.
    pub button_label: Option<Text>,
    /// kind cta_url: the http(s) URL the button opens.
    pub url: Option<Text>,
    /// kind cta_url: the button text, at most 20 characters.
    pub display_text: Option<Text>,
    /// kinds product and product_list: the catalog's id.
    pub catalog_id: Option<Text>,
    /// kind product: the product's id in the catalog (its retailer id / SKU).
    pub product_retailer_id: Option<Text>,
    /// kind catalog: the product whose image is the message's thumbnail (default: the catalog's first).
    pub thumbnail_product_retailer_id: Option<Text>,
    /// Header text, at most 60 characters (required by kind product_list; not allowed with product and catalog).
    pub header: Option<Text>,
    /// Instead of `header`, a media header (kinds buttons and cta_url): JSON object (as a string, or the object itself) {"type": "image"|"video"|"document", "media_id" (from upload_media) or "link" (public http(s) URL), "filename"? (document only)}, e.g. {"type":"image","link":"https://shop.example/p.jpg"}.
    pub header_media: Option<Json>,
    /// Footer text, at most 60 characters.
    pub footer: Option<Text>,
    #[serde(flatten)]
    pub flow: FlowArgs,
    #[serde(flatten)]
    pub on: OnChannel,
    /// message_id of an earlier message in this conversation to quote.
    pub reply_to: Option<Id>,
    #[serde(flatten)]
    pub keyed: Keyed,
}

#[derive(Deserialize, JsonSchema)]
pub struct SendLocationIn {
    /// Recipient: phone number with country code (e.g. "+6281234567890") or BSUID (e.g. "US.13491208655302741918").
    pub to: Customer,
    /// Latitude in degrees, -90 to 90.
    pub latitude: Decimal,
    /// Longitude in degrees, -180 to 180.
    pub longitude: Decimal,
    /// Name of the place.
    pub name: Option<Text>,
    /// Address of the place.
    pub address: Option<Text>,
    #[serde(flatten)]
    pub on: OnChannel,
    /// message_id of an earlier message in this conversation to quote.
    pub reply_to: Option<Id>,
    #[serde(flatten)]
    pub keyed: Keyed,
}

#[derive(Deserialize, JsonSchema)]
pub struct ReactIn {
    /// message_id of the customer's (inbound) message to react to.
    pub message_id: Id,
    /// One emoji such as "👍"; an empty string "" removes the reaction.
    #[schemars(with = "String")]
    pub emoji: Option<Text>,
    #[serde(flatten)]
    pub keyed: Keyed,
}

#[tool_router(router = rich_tools, vis = "pub(crate)")]
impl Gateway {
    #[tool(
        description = "Send an image, video, audio, document or sticker to a customer inside their open 24-hour care window, \
by public link or by a media_id from upload_media (exactly one). Goes through the same compliance and policy checks as every \
send. Returns status \"queued\" and message_id; delivery is reported by get_delivery_status. Errors: TEMPLATE_REQUIRED (care window closed: only templates may be sent), USER_OPTED_OUT, POLICY_RESTRICTION, \
INVALID_ARGUMENT (names the parameter and the limit), NOT_FOUND (reply_to or message_id names no message), UNAVAILABLE.",
        input_schema = schema::input::<SendMediaIn>(),
        output_schema = schema::output::<SendOut>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = true)
    )]
    async fn send_media(&self, tool: ToolName, args: JsonObject) -> CallToolResult {
        finish(&tool.0, self.send_media_impl(args).await)
    }

    #[tool(
        description = "Send an interactive message inside the customer's open care window: up to 3 reply buttons \
(kind buttons), a list of up to 10 rows behind a button (kind list), one call-to-action URL button (kind cta_url), \
a button that opens a Flow (kind flow; the result carries its flow_token, and get_flow_responses reads the answers), \
a request for the customer's location (kind location_request: body only; the answer is an inbound location), a \
request for permission to call them (kind call_permission_request: body only; the answer shows as call_permission in \
get_customer_context), one catalog product (kind product), up to 30 catalog products in sections (kind product_list) \
or the whole catalog (kind catalog). The customer's choice (or cart, an inbound order) comes back as an inbound message. \
Returns status \"queued\" and message_id. \
Errors: TEMPLATE_REQUIRED (care window closed: only templates may be sent), USER_OPTED_OUT, POLICY_RESTRICTION, \
FREQUENCY_CAP_EXCEEDED (call_permission_request: 2 already sent to this customer from this number in 24 h), \
INVALID_ARGUMENT (names the parameter and the limit; call_permission while a grant is valid), NOT_FOUND (reply_to or message_id names no message), UNAVAILABLE.",
        input_schema = schema::input::<SendInteractiveIn>(),
        output_schema = schema::output::<SendOut>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = true)
    )]
    async fn send_interactive(&self, tool: ToolName, args: JsonObject) -> CallToolResult {
        finish(&tool.0, self.send_interactive_impl(args).await)
    }

    #[tool(
        description = "Send a location pin (latitude, longitude, optional name and address) inside the customer's open \
care window. Returns status \"queued\" and message_id. Errors: TEMPLATE_REQUIRED (care window closed: only templates may be sent), USER_OPTED_OUT, POLICY_RESTRICTION, \
INVALID_ARGUMENT (names the parameter and the limit), NOT_FOUND (reply_to or message_id names no message), UNAVAILABLE.",
        input_schema = schema::input::<SendLocationIn>(),
        output_schema = schema::output::<SendOut>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = true)
    )]
    async fn send_location(&self, tool: ToolName, args: JsonObject) -> CallToolResult {
        finish(&tool.0, self.send_location_impl(args).await)
    }

    #[tool(
        description = "React with an emoji to a customer's message (by its message_id); an empty emoji removes the \
reaction. Needs the customer's open care window like any free-form message. Returns status \"queued\" and message_id \
of the reaction. Errors: TEMPLATE_REQUIRED (care window closed: only templates may be sent), USER_OPTED_OUT, POLICY_RESTRICTION, \
INVALID_ARGUMENT (names the parameter and the limit), NOT_FOUND (reply_to or message_id names no message), UNAVAILABLE.",
        input_schema = schema::input::<ReactIn>(),
        output_schema = schema::output::<SendOut>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = true, open_world_hint = true)
    )]
    async fn react_to_message(&self, tool: ToolName, args: JsonObject) -> CallToolResult {
        finish(&tool.0, self.react_to_message_impl(args).await)
    }
}

/// A rule broken: INVALID_ARGUMENT naming the field and the limit.
pub(crate) fn rich_error(e: RichError) -> ToolError {
    ToolError::invalid(
        format!("The parameter {}.", crate::quoting::detail(e)),
        "Fix that parameter to fit the platform's limit and call again.",
    )
}

/// A JSON array parameter parsed into `T` items; failures name the parameter.
fn json_arg<T: serde::de::DeserializeOwned>(
    value: &Option<Json>,
    key: &str,
    what: &str,
) -> ToolResult<Option<T>> {
    let Some(Json(v)) = value else {
        return Ok(None);
    };
    serde_json::from_value(v.clone()).map(Some).map_err(|e| {
        ToolError::invalid(
            format!("The parameter `{key}` is not {what}: {e}."),
            format!("Pass `{key}` as {what}."),
        )
    })
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ButtonArg {
    id: String,
    title: String,
}

/// `header_media` of send_interactive: send_media's names for the media object.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct HeaderMediaArg {
    #[serde(rename = "type")]
    kind: String,
    media_id: Option<String>,
    link: Option<String>,
    filename: Option<String>,
}

/// The interactive header from `header` (text) or `header_media` (a media object).
fn interactive_header(a: &SendInteractiveIn) -> ToolResult<Option<Header>> {
    let text = opt_string(&a.header);
    let media: Option<HeaderMediaArg> = json_arg(
        &a.header_media,
        "header_media",
        "a JSON object {\"type\": \"image\"|\"video\"|\"document\", \"media_id\" or \"link\", \"filename\"?}",
    )?;
    let empty = |kind: &str| Header {
        kind: kind.into(),
        text: None,
        image: None,
        video: None,
        document: None,
    };
    Ok(match (text, media) {
        (Some(_), Some(_)) => {
            return Err(rich_error(RichError {
                field: "header_media".into(),
                problem: "and `header` were both given; pass one header".into(),
            }));
        }
        (Some(text), None) => Some(Header {
            text: Some(text),
            ..empty("text")
        }),
        (None, Some(m)) => {
            let object = MediaObject {
                id: m.media_id,
                link: m.link,
                caption: None,
                filename: m.filename,
            };
            let mut header = empty(&m.kind);
            match m.kind.as_str() {
                "image" => header.image = Some(object),
                "video" => header.video = Some(object),
                "document" => header.document = Some(object),
                other => {
                    return Err(rich_error(RichError {
                        field: "header_media".into(),
                        problem: format!("type must be image, video or document, not {:?}", other),
                    }));
                }
            }
            Some(header)
        }
        (None, None) => None,
    })
}

impl Gateway {
    /// Quote, validate, send: the one path of every rich tool. `body` is `Err` when the
    /// parameters broke a rule already while making it: refused here, with the other
    /// limits, so an unknown `reply_to` is reported first either way.
    pub(crate) async fn send_rich(
        &self,
        phone: PhoneNumber,
        on: &OnChannel,
        body: Result<RichBody, RichError>,
        reply_to: Option<Uuid>,
        key: Option<warden_core::send::idempotency::IdempotencyKey>,
    ) -> ToolResult<SendOut> {
        let context = match reply_to {
            Some(id) => Some(self.core().quoted_wamid(id, &phone).await?),
            None => None,
        };
        let body = body.map_err(rich_error)?;
        let message = RichMessage { body, context };
        message.validate().map_err(rich_error)?;
        self.send_free_form(phone, on, SendKind::Rich(message), self.actor(), key)
            .await
    }

    async fn send_media_impl(&self, args: JsonObject) -> ToolResult<SendOut> {
        let a: Input<SendMediaIn> = parse(args)?;
        let key = a.idempotency(&a.keyed, "send_media", self.actor())?;
        let phone = self.resolve(&a.to).await?;
        let media_type = MediaType::parse(a.media_type.as_str()).map_err(rich_error)?;
        let object = MediaObject {
            id: opt_string(&a.media_id),
            link: opt_string(&a.link),
            caption: opt_string(&a.caption),
            filename: opt_string(&a.filename),
        };
        let reply_to = a.reply_to.map(|id| id.0);
        self.send_rich(
            phone,
            &a.on,
            Ok(RichBody::Media(media_type, object)),
            reply_to,
            key,
        )
        .await
    }

    async fn send_interactive_impl(&self, args: JsonObject) -> ToolResult<SendOut> {
        let a: Input<SendInteractiveIn> = parse(args)?;
        let key = a.idempotency(&a.keyed, "send_interactive", self.actor())?;
        let phone = self.resolve(&a.to).await?;
        let body = a.body.as_ref().map(|b| TextObject { text: b.0.clone() });
        let kind = InteractiveType::parse(a.kind.as_str()).map_err(rich_error)?;
        let buttons: Option<Vec<ButtonArg>> = json_arg(
            &a.buttons,
            "buttons",
            "a JSON array of {\"id\", \"title\"} objects",
        )?;
        let sections: Option<Vec<Section>> = json_arg(
            &a.sections,
            "sections",
            "a JSON array of {\"title\", \"rows\": [{\"id\", \"title\", \"description\"}]} (or, for product_list, {\"title\", \"product_items\": [{\"product_retailer_id\"}]}) objects",
        )?;
        let url = opt_string(&a.url);
        let display_text = opt_string(&a.display_text);
        if kind != InteractiveType::Flow {
            a.flow.refuse_for_other_kind()?;
        }
        let mut flow_token = None;
        // Each kind's parameters into the platform's action keys. Some parameters of
        // another kind are passed on (as given, or emptied) so the rules refuse them by name.
        let mut action = match kind {
            InteractiveType::Buttons => ActionFields {
                buttons: Some(
                    buttons
                        .unwrap_or_default()
                        .into_iter()
                        .map(|b| ReplyButton {
                            kind: "reply".into(),
                            reply: Reply {
                                id: b.id,
                                title: b.title,
                            },
                        })
                        .collect(),
                ),
                sections: sections.map(|_| Vec::new()),
                button: opt_string(&a.button_label),
                ..ActionFields::default()
            },
            InteractiveType::List => ActionFields {
                button: opt_string(&a.button_label),
                sections: Some(sections.unwrap_or_default()),
                buttons: buttons.map(|_| Vec::new()),
                ..ActionFields::default()
            },
            InteractiveType::CtaUrl => ActionFields {
                name: Some("cta_url".into()),
                parameters: match (display_text, url) {
                    (Some(display_text), Some(url)) => {
                        Some(Parameters::Cta(CtaParameters { display_text, url }))
                    }
                    (None, _) => {
                        return Err(rich_error(RichError {
                            field: "display_text".into(),
                            problem: "is required for kind cta_url".into(),
                        }));
                    }
                    (_, None) => {
                        return Err(rich_error(RichError {
                            field: "url".into(),
                            problem: "is required for kind cta_url".into(),
                        }));
                    }
                },
                buttons: buttons.map(|_| Vec::new()),
                sections: sections.map(|_| Vec::new()),
                button: opt_string(&a.button_label),
                ..ActionFields::default()
            },
            InteractiveType::Flow => {
                if let Some(field) = [("url", &url), ("display_text", &display_text)]
                    .into_iter()
                    .find_map(|(f, v)| v.is_some().then_some(f))
                {
                    return Err(rich_error(RichError {
                        field: field.into(),
                        problem: "does not belong to this kind of interactive message".into(),
                    }));
                }
                let (action, token) = a.flow.action()?;
                flow_token = Some(token);
                ActionFields {
                    buttons: buttons.map(|_| Vec::new()),
                    sections: sections.map(|_| Vec::new()),
                    button: opt_string(&a.button_label),
                    ..action
                }
            }
            // Body-only kinds: their action is its name; another kind's parameters are
            // passed on so the rules refuse them by name.
            InteractiveType::LocationRequest | InteractiveType::CallPermissionRequest => {
                ActionFields {
                    name: Some(if kind == InteractiveType::LocationRequest {
                        LocationRequestAction::NAME.into()
                    } else {
                        CallPermissionAction::NAME.into()
                    }),
                    parameters: (url.is_some() || display_text.is_some()).then(|| {
                        Parameters::Cta(CtaParameters {
                            display_text: display_text.unwrap_or_default(),
                            url: url.unwrap_or_default(),
                        })
                    }),
                    buttons: buttons.map(|_| Vec::new()),
                    sections: sections.map(|_| Vec::new()),
                    button: opt_string(&a.button_label),
                    ..ActionFields::default()
                }
            }
            InteractiveType::Product | InteractiveType::ProductList | InteractiveType::Catalog => {
                commerce::action(kind, &a, sections, buttons.is_some()).map_err(rich_error)?
            }
        };
        commerce::refuse_foreign(kind, &a, &mut action).map_err(rich_error)?;
        let interactive = Interactive::try_from(InteractiveFields {
            kind,
            header: interactive_header(&a)?,
            body,
            footer: opt_string(&a.footer).map(|text| TextObject { text }),
            action,
        });
        let reply_to = a.reply_to.map(|id| id.0);
        let out = self
            .send_rich(
                phone,
                &a.on,
                interactive.map(|i| RichBody::Interactive(Box::new(i))),
                reply_to,
                key,
            )
            .await?;
        match flow_token {
            Some(token) => self.with_flow_token(out, token).await,
            None => Ok(out),
        }
    }

    async fn send_location_impl(&self, args: JsonObject) -> ToolResult<SendOut> {
        let a: Input<SendLocationIn> = parse(args)?;
        let key = a.idempotency(&a.keyed, "send_location", self.actor())?;
        let phone = self.resolve(&a.to).await?;
        let location = Location {
            latitude: a.latitude.0,
            longitude: a.longitude.0,
            name: opt_string(&a.name),
            address: opt_string(&a.address),
        };
        let reply_to = a.reply_to.map(|id| id.0);
        self.send_rich(
            phone,
            &a.on,
            Ok(RichBody::Location(location)),
            reply_to,
            key,
        )
        .await
    }

    async fn react_to_message_impl(&self, args: JsonObject) -> ToolResult<SendOut> {
        let a: Input<ReactIn> = parse(args)?;
        let key = a.idempotency(&a.keyed, "react_to_message", self.actor())?;
        let id = a.message_id.0;
        if !a.given("emoji") {
            return Err(ToolError::invalid(
                "The parameter `emoji` is required: one emoji, or \"\" to remove the reaction.",
                "Pass `emoji`, e.g. \"👍\", or \"\" to remove your reaction.",
            ));
        }
        let emoji = opt_string(&a.emoji).unwrap_or_default();
        warden_rules::rich::check_emoji(&emoji).map_err(rich_error)?;
        let (phone, wamid, sender) = self.core().reaction_target(id).await?;
        let reaction = Reaction {
            message_id: wamid,
            emoji,
        };
        // A reaction goes out from the number the message was sent from or to.
        let on = OnChannel::from_sender(sender);
        self.send_rich(phone, &on, Ok(RichBody::Reaction(reaction)), None, key)
            .await
    }
}
