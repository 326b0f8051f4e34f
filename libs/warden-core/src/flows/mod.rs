//! Flows: the token of each flow message Warden sends (`sends`, written by the one send
//! path), where a template's FLOW button is (`template_button`, for send_template),
//! customers' submissions (`submissions`, written by the webhook's inbound rule in
//! `platform_events::inbound`) and get_flow_responses (`responses`, read-only).
//!
//! A submission names its flow message by `context.id` (a wamid) and, usually, by the
//! `flow_token` inside its answers. Either may be unknown when it arrives: the dispatcher
//! may not have recorded the flow message's wamid yet, and a response may carry no token.
//! What is unknown at receive time is resolved again on every read, so a read is never
//! stale.

pub mod responses;
pub mod sends;
pub mod submissions;
pub mod template_button;
