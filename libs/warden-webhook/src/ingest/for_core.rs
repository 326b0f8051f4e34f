//! The parsed events as the core takes them (`warden_core::platform_events`): borrowed
//! views, nothing decided here but the status names the platform uses.

use warden_core::account::pricing::ReportedPricing;
use warden_core::delivery::statuses::StatusUpdate;
use warden_core::platform_events::{
    Body, Event as CoreEvent, Origin, account, inbound, opt_outs, shared_numbers, statuses,
    templates,
};
use warden_platform::webhook::StatusKind;
use warden_rules::message_status::MessageStatus;

use crate::events::{
    Event, EventBody, InboundEvent, StatusEvent, TemplateChange, TemplateChangeEvent, TemplateEvent,
};

impl Event {
    pub(super) fn for_core(&self) -> CoreEvent<'_> {
        let origin = Origin {
            number: self.number.as_deref(),
            account: &self.account,
            display: self.display.as_deref(),
        };
        let body = match &self.body {
            EventBody::Inbound(i) => Body::Inbound(inbound_message(i)),
            EventBody::Status(s) => Body::Status(status_report(s)),
            EventBody::Template(t) => Body::TemplateStatus(template_review(t)),
            EventBody::Preference(p) => Body::Preference(opt_outs::Preference {
                phone: &p.phone,
                change: p.change,
                at: p.at,
            }),
            EventBody::Quality(q) => Body::Quality(account::QualityReport {
                event: &q.event,
                current_limit: q.current_limit.as_deref(),
                display_phone_number: q.display_phone_number.as_deref(),
                payload: &q.payload,
            }),
            EventBody::TemplateChange(t) => Body::TemplateChange(template_changed(t)),
            EventBody::Echo(e) => Body::Echo(shared_numbers::EchoReport {
                phone: &e.phone,
                wamid: &e.wamid,
                message_type: &e.message_type,
                content: &e.content,
                at: e.at,
            }),
            EventBody::Handover(h) => Body::Handover(shared_numbers::HandoverReport {
                phone: &h.phone,
                handover: h.handover,
                previous_role: h.previous_role.as_deref(),
                new_role: h.new_role.as_deref(),
                at: h.at,
            }),
            EventBody::Standby(s) => Body::Standby(shared_numbers::StandbyReport {
                phone: &s.phone,
                at: s.at,
            }),
        };
        CoreEvent { origin, body }
    }
}

fn inbound_message(i: &InboundEvent) -> inbound::InboundMessage<'_> {
    inbound::InboundMessage {
        wamid: &i.wamid,
        phone: &i.phone,
        identity: &i.identity,
        at: i.at,
        window: i.window,
        message_type: &i.message_type,
        content: &i.content,
        keyword: i.keyword,
        flow: i.flow.as_ref().map(|f| inbound::FlowReply {
            response_json: f.response_json.as_ref(),
            context_wamid: f.context_wamid.as_deref(),
        }),
        call_permission: i.call_permission.clone(),
    }
}

/// The platform's status as a message status (`None` for those without delivery meaning:
/// deleted, warning, played, unknown).
fn status_report(s: &StatusEvent) -> statuses::StatusReport<'_> {
    let status = match s.status {
        StatusKind::Sent => Some(MessageStatus::Sent),
        StatusKind::Delivered => Some(MessageStatus::Delivered),
        StatusKind::Read => Some(MessageStatus::Read),
        StatusKind::Failed => Some(MessageStatus::Failed),
        StatusKind::Deleted | StatusKind::Warning | StatusKind::Played | StatusKind::Unknown => {
            None
        }
    };
    statuses::StatusReport {
        update: StatusUpdate {
            wamid: &s.wamid,
            callback: s.callback.as_deref(),
            status,
            reported: s.status.as_str(),
            at: s.at,
            error_code: s.error.as_ref().map(|e| e.code),
        },
        pricing: s.pricing.as_ref().map(|p| ReportedPricing {
            billable: p.billable,
            pricing_model: p.pricing_model.as_deref(),
            category: p.category.as_deref(),
            pricing_type: p.pricing_type.as_deref(),
        }),
    }
}

fn template_review(t: &TemplateEvent) -> templates::TemplateReview<'_> {
    templates::TemplateReview {
        name: &t.name,
        language: &t.language,
        event: &t.event,
        template_id: &t.template_id,
        reason: t.reason.as_deref(),
        category: t.category.as_deref(),
        at: t.at,
    }
}

fn template_changed(t: &TemplateChangeEvent) -> templates::TemplateChanged<'_> {
    let change = match &t.change {
        TemplateChange::Category {
            new_category,
            previous_category,
            effective_at,
        } => templates::TemplateChange::Category {
            new_category,
            previous_category: previous_category.as_deref(),
            effective_at: *effective_at,
        },
        TemplateChange::Quality { score, .. } => templates::TemplateChange::Quality { score },
    };
    templates::TemplateChanged {
        name: &t.name,
        language: &t.language,
        change,
    }
}
