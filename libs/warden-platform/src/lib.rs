//! The upstream messaging platform (Graph API, version configurable) as Warden sees it: wire types of
//! webhooks, sends, templates and phone numbers; the webhook signature rule; and an
//! HTTP client. Shared by the webhook server, the dispatcher, the gateway and the sim,
//! so every side agrees on the same shapes.

pub mod account;
pub mod client;
pub mod error;
pub mod flows;
pub mod lenient;
pub mod marketing;
pub mod media;
pub mod message;
pub mod receipt;
pub mod signature;
pub mod template;
pub mod thread_control;
pub mod webhook;

pub use account::{PhoneNumber, Throughput};
pub use client::{API_VERSION, PlatformClient, PlatformConfig};
pub use error::{ApiError, ErrorBody, ErrorData, PlatformError};
pub use marketing::SendEndpoint;
pub use message::{SendRequest, SendResponse};
pub use template::{CreateTemplateRequest, CreateTemplateResponse, TemplateInfo};
pub use webhook::{Change, Status, StatusKind, WebhookEnvelope};
