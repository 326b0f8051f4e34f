//! A delivery status of an outbound message (`statuses[]` of a `messages` change), with
//! its error and what the platform charged.

use chrono::{DateTime, Utc};
use warden_platform::webhook::{Status, StatusKind};

use super::{Builder, EventBody, MAX_ID_LEN, clean, clip, event_time};

/// A delivery status of an outbound message.
#[derive(Debug, Clone)]
pub struct StatusEvent {
    /// Empty when the platform sent none (then only `callback` can match).
    pub wamid: String,
    pub status: StatusKind,
    pub at: DateTime<Utc>,
    /// `biz_opaque_callback_data`: our message_id when we set it.
    pub callback: Option<String>,
    pub recipient_id: String,
    /// The first error of a failed status.
    pub error: Option<StatusError>,
    /// The status's `pricing` object (what the platform charged), when it had one.
    pub pricing: Option<StatusPricing>,
}

/// A status's `pricing` object, cleaned (`warden_core::account::pricing`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusPricing {
    pub billable: Option<bool>,
    pub pricing_model: Option<String>,
    pub category: Option<String>,
    /// regular, free_customer_service, free_entry_point
    pub pricing_type: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusError {
    pub code: i32,
    pub title: Option<String>,
    pub details: Option<String>,
}

impl Builder<'_> {
    pub(super) fn status(&mut self, status: Status, now: DateTime<Utc>) {
        let kind = status.kind();
        if !matches!(
            kind,
            StatusKind::Sent | StatusKind::Delivered | StatusKind::Read | StatusKind::Failed
        ) {
            self.skip("status_kind", clip(&status.status, 64));
            return;
        }
        let wamid = clean(&status.id);
        let callback = status
            .biz_opaque_callback_data
            .as_deref()
            .map(clean)
            .filter(|c| !c.is_empty() && c.len() <= MAX_ID_LEN);
        if wamid.len() > MAX_ID_LEN || (wamid.is_empty() && callback.is_none()) {
            self.skip("bad_wamid", clip(&wamid, 64));
            return;
        }
        let key = if wamid.is_empty() {
            format!(
                "st:cb:{}:{}",
                callback.as_deref().unwrap_or(""),
                kind.as_str()
            )
        } else {
            format!("st:{wamid}:{}", kind.as_str())
        };
        let error = status.errors.first().map(|e| StatusError {
            code: i32::try_from(e.code).unwrap_or(0),
            title: e.title.as_deref().map(|t| clip(&clean(t), 512)),
            details: e.details().map(|d| clip(&clean(d), 1024)),
        });
        self.push(
            key,
            EventBody::Status(StatusEvent {
                wamid,
                status: kind,
                at: event_time(status.timestamp, now),
                callback,
                // The phone, else the BSUID (a send by BSUID to a phone-less user).
                recipient_id: clip(
                    &clean(if status.recipient_id.is_empty() {
                        status.recipient_user_id.as_deref().unwrap_or("")
                    } else {
                        &status.recipient_id
                    }),
                    64,
                ),
                error,
                pricing: status.pricing.as_ref().map(|p| {
                    let short = |s: &Option<String>| {
                        s.as_deref()
                            .map(|s| clip(&clean(s.trim()), 64))
                            .filter(|s| !s.is_empty())
                    };
                    StatusPricing {
                        billable: p.billable,
                        pricing_model: short(&p.pricing_model),
                        category: short(&p.category),
                        pricing_type: short(&p.kind),
                    }
                }),
            }),
        );
    }
}
