//! `GET /conversations` (the inbox, with each conversation's holder),
//! `GET /conversations/{customer}` (history, holder, forms), and the actions: take over,
//! reply as the operator (the one send path, `sent_by: operator:NAME`), release.

use actix_web::{HttpResponse, web};
use chrono::Utc;
use minijinja::{Value, context};
use serde::Deserialize;
use warden_core::conversations::view;
use warden_core::{CoreError, SendError, SendKind, SendRequest};
use warden_rules::kinds::MessageType;

use super::{Flash, actor, customer, done, failed, frame};
use crate::auth::{ActionForm, Signed};
use crate::render::ser;
use crate::state::AppState;

const PAGE: i64 = 50;

#[derive(Deserialize)]
pub struct Paging {
    #[serde(default)]
    offset: Option<i64>,
}

impl Paging {
    pub fn offset(&self) -> i64 {
        self.offset.unwrap_or(0).max(0)
    }
}

/// The inbox page from `offset` (the page and its live fragment read the same).
pub async fn read_inbox(state: &AppState, offset: i64) -> Result<view::InboxPage, CoreError> {
    let core = &state.core;
    let mut conn = core.pg().get().await?;
    view::inbox(
        &mut conn,
        core.settings().channel(),
        core.senders(),
        None,
        PAGE,
        offset,
        Utc::now(),
    )
    .await
}

/// What `inbox_table.html` shows: the page, and the offsets of its neighbours.
pub fn inbox_context(p: &view::InboxPage, offset: i64) -> Value {
    context! {
        page => ser(p),
        offset => offset,
        next => (offset + PAGE < p.total).then_some(offset + PAGE),
        prev => (offset > 0).then_some((offset - PAGE).max(0)),
    }
}

pub async fn inbox(
    state: web::Data<AppState>,
    signed: Signed,
    flash: web::Query<Flash>,
    paging: web::Query<Paging>,
) -> HttpResponse {
    let offset = paging.offset();
    match read_inbox(&state, offset).await {
        Ok(p) => state.templates.page(
            "conversations.html",
            context! {
                ..frame(&signed.0, "conversations", &flash),
                ..inbox_context(&p, offset)
            },
        ),
        Err(e) => failed(&state, &e),
    }
}

pub async fn page(
    state: web::Data<AppState>,
    signed: Signed,
    path: web::Path<String>,
    flash: web::Query<Flash>,
) -> HttpResponse {
    let phone = match customer(&state, &path).await {
        Ok(p) => p,
        Err(res) => return res,
    };
    let core = &state.core;
    let read = async {
        let sender = core.sender_ref(None)?;
        let mut conn = core.pg().get().await?;
        let history = view::history(
            &mut conn,
            phone.digits(),
            core.settings().channel(),
            &sender,
            100,
            None,
        )
        .await?;
        Ok::<_, warden_core::CoreError>(history)
    };
    let allows = match consent(&state, &signed.0.actor(), &phone).await {
        Ok(a) => a,
        Err(e) => return failed(&state, &e),
    };
    match read.await {
        Ok(history) => {
            let holder = &history.holder;
            // Oldest first, as a conversation reads.
            let mut messages = history.messages.clone();
            messages.reverse();
            state.templates.page(
                "conversation.html",
                context! {
                    ..frame(&signed.0, "conversations", &flash),
                    ..context! {
                        customer => phone.digits(),
                        from => &history.from,
                        messages => ser(&messages),
                        holder => ser(holder),
                        held => holder.held(),
                        reply => &allows[0],
                        allows => &allows[1..],
                    }
                },
            )
        }
        Err(e) => failed(&state, &e),
    }
}

/// What the customer's consent (and the window, the caps, the policies, who holds the
/// conversation) allows now, as the core's compliance check decides it for this operator:
/// first the reply the form sends (free-form text), then each template category.
async fn consent(
    state: &AppState,
    actor: &str,
    phone: &warden_rules::phone::PhoneNumber,
) -> Result<Vec<Value>, CoreError> {
    let core = state.core_as(actor);
    let now = Utc::now();
    let mut out = Vec::new();
    for (kind, label) in [
        (MessageType::Service, "A reply (free-form text)"),
        (MessageType::Marketing, "Marketing templates"),
        (MessageType::Utility, "Utility templates"),
    ] {
        let d = core
            .check(phone, None, kind.described_content(), now)
            .await?;
        out.push(context! {
            kind => label,
            allowed => d.allowed,
            code => d.reason_code.as_str(),
            why => d.human_explanation,
            next => d.suggested_action,
        });
    }
    Ok(out)
}

fn back(phone: &str) -> String {
    format!("/conversations/{}", crate::render::encode(phone))
}

/// `POST /conversations/{customer}/reply` (field `text`).
pub async fn reply(
    state: web::Data<AppState>,
    signed: Signed,
    path: web::Path<String>,
    form: web::Form<ActionForm>,
) -> HttpResponse {
    let who = match signed.act(&state, &form.csrf_token) {
        Ok(a) => a,
        Err(res) => return res,
    };
    let phone = match customer(&state, &path).await {
        Ok(p) => p,
        Err(res) => return res,
    };
    let text = form.text.trim();
    if text.is_empty() {
        return done(&back(phone.digits()), "Write a reply first.", true);
    }
    let actor = actor(&who);
    let core = state.core_as(actor);
    let sent = core
        .send(SendRequest::from_tool(
            phone.clone(),
            core.settings().channel(),
            SendKind::Text {
                body: text.to_string(),
            },
            MessageType::Service,
            actor,
        ))
        .await;
    match sent {
        Ok(accepted) => done(
            &back(phone.digits()),
            &format!("Reply queued (message {}).", accepted.message_id),
            false,
        ),
        Err(SendError::Refused(d)) => done(
            &back(phone.digits()),
            &format!(
                "Refused {}: {} {}",
                d.reason_code.as_str(),
                d.human_explanation,
                d.suggested_action
            ),
            true,
        ),
        Err(e) => done(&back(phone.digits()), &format!("Not sent: {e}"), true),
    }
}

pub fn holder_routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/conversations/{customer}/take", web::post().to(take))
        .route("/conversations/{customer}/release", web::post().to(release));
}

/// `POST /conversations/{customer}/take`: a person holds the conversation (agents'
/// free-form replies are refused CONVERSATION_HELD) until released.
pub async fn take(
    state: web::Data<AppState>,
    signed: Signed,
    path: web::Path<String>,
    form: web::Form<ActionForm>,
) -> HttpResponse {
    holder_action(state, signed, path, form, true).await
}

/// `POST /conversations/{customer}/release`: the agents hold the conversation again.
pub async fn release(
    state: web::Data<AppState>,
    signed: Signed,
    path: web::Path<String>,
    form: web::Form<ActionForm>,
) -> HttpResponse {
    holder_action(state, signed, path, form, false).await
}

async fn holder_action(
    state: web::Data<AppState>,
    signed: Signed,
    path: web::Path<String>,
    form: web::Form<ActionForm>,
    take: bool,
) -> HttpResponse {
    let who = match signed.act(&state, &form.csrf_token) {
        Ok(a) => a,
        Err(res) => return res,
    };
    let phone = match customer(&state, &path).await {
        Ok(p) => p,
        Err(res) => return res,
    };
    let core = state.core_as(actor(&who));
    let moved = if take {
        core.hand_off(
            &phone,
            None,
            warden_core::conversations::holder::HandOffTo::Human,
            Some(&format!("taken over in the console by {who}")),
        )
        .await
    } else {
        core.release(&phone, None).await
    };
    match moved {
        Ok(_) if take => done(
            &back(phone.digits()),
            "You hold this conversation: agents' replies are refused until you release it.",
            false,
        ),
        Ok(_) => done(
            &back(phone.digits()),
            "Released: the agents hold this conversation again.",
            false,
        ),
        Err(e) => failed(&state, &e),
    }
}
