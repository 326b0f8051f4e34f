//! `GET /policies`: the running policies, and the tester (customer + message type + text
//! -> the decision and the rule that made it; nothing is sent).

use actix_web::{HttpResponse, web};
use minijinja::context;
use serde::Deserialize;
use warden_core::reports::{policies, tester};
use warden_rules::kinds::MessageType;

use super::{Flash, failed, frame};
use crate::auth::Signed;
use crate::render::ser;
use crate::state::AppState;

/// The tester's fields (a GET form: trying a rule changes nothing).
#[derive(Deserialize)]
pub struct Tester {
    #[serde(default)]
    customer: String,
    #[serde(default)]
    message_type: String,
    #[serde(default)]
    text: String,
}

pub async fn page(
    state: web::Data<AppState>,
    signed: Signed,
    flash: web::Query<Flash>,
    t: web::Query<Tester>,
) -> HttpResponse {
    let running = match policies::list(state.core.pg()).await {
        Ok(p) => p,
        Err(e) => return failed(&state, &e),
    };
    let mut result = None;
    let mut problem = None;
    if !t.customer.trim().is_empty() {
        let message_type = if t.message_type.is_empty() {
            "service"
        } else {
            t.message_type.as_str()
        };
        match (
            warden_rules::bsuid::customer_key(&t.customer),
            message_type.parse::<MessageType>(),
        ) {
            (Err(e), _) => problem = Some(format!("`{}`: {e}", t.customer)),
            (_, Err(_)) => {
                problem = Some(format!(
                    "`{message_type}`: use service, marketing, utility, authentication or template"
                ))
            }
            (Ok(id), Ok(kind)) => {
                let text = Some(t.text.as_str());
                match tester::decide(&state.core, &id, kind, text).await {
                    Ok(d) => result = Some(d),
                    Err(e) => problem = Some(e.to_string()),
                }
            }
        }
    }
    state.templates.page(
        "policies.html",
        context! {
            ..frame(&signed.0, "policies", &flash),
            ..context! {
                policies => ser(&running),
                policies_path => state.core.settings().policies_path.display().to_string(),
                customer => &t.customer,
                message_type => &t.message_type,
                text => &t.text,
                result => result.map(|d| context! {
                    allowed => d.allowed,
                    reason_code => d.reason_code.as_str(),
                    explanation => d.human_explanation,
                    suggested_action => d.suggested_action,
                    policy_id => d.policy_id,
                }),
                problem => problem,
            }
        },
    )
}
