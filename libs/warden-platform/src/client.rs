//! HTTP client of the platform API (version from `PLATFORM_API_VERSION`, default v25.0).
//!
//! The binary installs the rustls crypto provider (ring) before building a client;
//! this crate enables no TLS provider of its own.

use crate::account::{PhoneNumber, QUALITY_FIELDS};
use crate::error::PlatformError;
use crate::message::{SendRequest, SendResponse};
use crate::template::{CreateTemplateRequest, CreateTemplateResponse, ListResponse, TemplateInfo};
use reqwest::{Method, Url};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::time::Duration;

/// The Graph API version used when none is configured. v20.0 was retired on 2026-09-24.
pub const API_VERSION: &str = "v25.0";
const TEMPLATE_FIELDS: &str = "id,name,status,category,language,components,rejected_reason";
/// Guards against a platform (or a fake) whose paging never ends.
const MAX_PAGES: usize = 100;

/// Where and as whom to call the platform.
#[derive(Clone)]
pub struct PlatformConfig {
    /// e.g. `https://graph.facebook.com` or the sim's `http://127.0.0.1:8089`.
    pub base_url: String,
    pub api_version: String,
    pub access_token: String,
    pub phone_number_id: String,
    /// The business account id (`PLATFORM_ACCOUNT_ID`).
    pub waba_id: String,
    pub connect_timeout: Duration,
    /// Whole-request limit, connect included.
    pub timeout: Duration,
}

impl std::fmt::Debug for PlatformConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The access token stays out of logs.
        f.debug_struct("PlatformConfig")
            .field("base_url", &self.base_url)
            .field("api_version", &self.api_version)
            .field("phone_number_id", &self.phone_number_id)
            .field("waba_id", &self.waba_id)
            .field("connect_timeout", &self.connect_timeout)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl PlatformConfig {
    /// [`API_VERSION`], connect timeout 2 s, total 10 s.
    pub fn new(
        base_url: impl Into<String>,
        access_token: impl Into<String>,
        phone_number_id: impl Into<String>,
        waba_id: impl Into<String>,
    ) -> Self {
        Self {
            base_url: base_url.into(),
            api_version: API_VERSION.to_owned(),
            access_token: access_token.into(),
            phone_number_id: phone_number_id.into(),
            waba_id: waba_id.into(),
            connect_timeout: Duration::from_secs(2),
            timeout: Duration::from_secs(10),
        }
    }
}

/// Cheap to clone (the connection pool is shared).
#[derive(Clone, Debug)]
pub struct PlatformClient {
    pub(crate) http: reqwest::Client,
    root: Url,
    config: PlatformConfig,
}

impl PlatformClient {
    pub fn new(config: PlatformConfig) -> Result<Self, PlatformError> {
        // reqwest panics when no rustls provider is installed; fall back to ring so a
        // forgotten install in some binary or test cannot crash it. Err only means
        // another provider was installed first, which is fine.
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        let http = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .timeout(config.timeout)
            .pool_idle_timeout(Duration::from_secs(60))
            .build()
            .map_err(|e| PlatformError::Config(e.to_string()))?;
        let mut base = config.base_url.trim_end_matches('/').to_owned();
        base.push('/');
        base.push_str(config.api_version.trim_matches('/'));
        base.push('/');
        let root = Url::parse(&base)
            .map_err(|e| PlatformError::Config(format!("bad base url {base:?}: {e}")))?;
        Ok(Self { http, root, config })
    }

    pub fn config(&self) -> &PlatformConfig {
        &self.config
    }

    /// `POST /{phone-number-id}/messages`.
    pub async fn send_message(&self, req: &SendRequest) -> Result<SendResponse, PlatformError> {
        self.send_at(crate::SendEndpoint::Messages, req).await
    }

    /// `POST /{phone-number-id}/{endpoint}`: a send at `/messages` or at the Marketing
    /// Messages API, the same call (errors, timeouts, answers) but for the path.
    pub async fn send_at(
        &self,
        endpoint: crate::SendEndpoint,
        req: &SendRequest,
    ) -> Result<SendResponse, PlatformError> {
        let url = self.url(&[&self.config.phone_number_id, endpoint.path()], &[])?;
        self.call(Method::POST, url, Some(req)).await
    }

    /// `POST /{phone-number-id}/messages` with `status: "read"`: marks a received message
    /// read (and shows "typing…" when asked).
    pub async fn mark_read(
        &self,
        receipt: &crate::receipt::ReadReceipt,
    ) -> Result<crate::receipt::ReceiptResponse, PlatformError> {
        let url = self.url(&[&self.config.phone_number_id, "messages"], &[])?;
        self.call(Method::POST, url, Some(receipt)).await
    }

    /// `POST /{waba-id}/message_templates` with one BODY component.
    pub async fn create_template(
        &self,
        name: &str,
        language: &str,
        category: &str,
        body_text: &str,
    ) -> Result<CreateTemplateResponse, PlatformError> {
        let body = CreateTemplateRequest::new(name, language, category, body_text);
        self.submit_template(&body).await
    }

    /// `POST /{waba-id}/message_templates` with a full request (header, footer, buttons,
    /// parameter format).
    pub async fn submit_template(
        &self,
        body: &CreateTemplateRequest,
    ) -> Result<CreateTemplateResponse, PlatformError> {
        let url = self.url(&[&self.config.waba_id, "message_templates"], &[])?;
        self.call(Method::POST, url, Some(body)).await
    }

    /// The template of that name and language, `None` when the platform has none.
    pub async fn get_template(
        &self,
        name: &str,
        language: &str,
    ) -> Result<Option<TemplateInfo>, PlatformError> {
        let url = self.url(
            &[&self.config.waba_id, "message_templates"],
            &[("name", name), ("fields", TEMPLATE_FIELDS)],
        )?;
        // The name filter is not exact upstream and covers every language.
        let all = self.collect_pages::<TemplateInfo>(url).await?;
        Ok(all
            .into_iter()
            .find(|t| t.name == name && t.language.eq_ignore_ascii_case(language)))
    }

    /// Every template of the account, following paging.
    pub async fn list_templates(&self) -> Result<Vec<TemplateInfo>, PlatformError> {
        let url = self.url(
            &[&self.config.waba_id, "message_templates"],
            &[("fields", TEMPLATE_FIELDS), ("limit", "100")],
        )?;
        self.collect_pages(url).await
    }

    /// `GET /{waba-id}/phone_numbers`.
    pub async fn phone_numbers(&self) -> Result<Vec<PhoneNumber>, PlatformError> {
        let url = self.url(
            &[&self.config.waba_id, "phone_numbers"],
            &[("fields", QUALITY_FIELDS)],
        )?;
        self.collect_pages(url).await
    }

    /// `GET /{phone-number-id}?fields=...quality_rating,messaging_limit_tier,throughput`.
    pub async fn phone_number_quality(&self) -> Result<PhoneNumber, PlatformError> {
        let url = self.url(
            &[&self.config.phone_number_id],
            &[("fields", QUALITY_FIELDS)],
        )?;
        self.call::<PhoneNumber, ()>(Method::GET, url, None).await
    }

    pub(crate) fn url(
        &self,
        segments: &[&str],
        query: &[(&str, &str)],
    ) -> Result<Url, PlatformError> {
        let mut url = self.root.clone();
        {
            let mut path = url
                .path_segments_mut()
                .map_err(|_| PlatformError::Config("base url cannot take a path".into()))?;
            path.pop_if_empty();
            path.extend(segments);
        }
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(query);
        }
        Ok(url)
    }

    pub(crate) async fn collect_pages<T: DeserializeOwned>(
        &self,
        first: Url,
    ) -> Result<Vec<T>, PlatformError> {
        let mut out = Vec::new();
        let mut next = Some(first);
        let mut pages = 0;
        while let Some(url) = next.take() {
            let page: ListResponse<T> = self.call::<_, ()>(Method::GET, url, None).await?;
            out.extend(page.data);
            pages += 1;
            if pages >= MAX_PAGES {
                tracing::warn!(pages, "platform paging did not end; stopping");
                break;
            }
            next = page
                .paging
                .and_then(|p| p.next)
                .and_then(|n| Url::parse(&n).ok());
        }
        Ok(out)
    }

    pub(crate) async fn call<T: DeserializeOwned, B: Serialize + ?Sized>(
        &self,
        method: Method,
        url: Url,
        body: Option<&B>,
    ) -> Result<T, PlatformError> {
        let mut req = self
            .http
            .request(method, url)
            .bearer_auth(&self.config.access_token);
        if let Some(body) = body {
            req = req.json(body);
        }
        let resp = req.send().await.map_err(transport_error)?;
        let status = resp.status().as_u16();
        let bytes = resp.bytes().await.map_err(transport_error)?;
        if !(200..300).contains(&status) {
            return Err(PlatformError::from_response(status, &bytes));
        }
        serde_json::from_slice(&bytes).map_err(|e| {
            tracing::warn!(status, error = %e, "platform success body did not parse");
            PlatformError::from_response(status, &bytes)
        })
    }
}

pub(crate) fn transport_error(e: reqwest::Error) -> PlatformError {
    // Connect is checked first: a connect timeout never sent the request, so it is
    // safe to resend, unlike a timeout after sending.
    if e.is_connect() {
        PlatformError::Connect(error_chain(&e))
    } else if e.is_timeout() {
        PlatformError::Timeout
    } else if e.is_builder() {
        PlatformError::Config(error_chain(&e))
    } else {
        PlatformError::Io(error_chain(&e))
    }
}

/// An error and its sources, joined with `: ` (what a log line or an answer shows).
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(inner) = src {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        src = inner.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_urls_under_the_version() {
        let c = PlatformClient::new(PlatformConfig::new(
            "http://127.0.0.1:8089/",
            "t",
            "100",
            "200",
        ))
        .unwrap();
        assert_eq!(
            c.url(&["100", "messages"], &[]).unwrap().as_str(),
            "http://127.0.0.1:8089/v25.0/100/messages"
        );
        assert_eq!(
            c.url(&["200", "message_templates"], &[("name", "a b&c")])
                .unwrap()
                .as_str(),
            "http://127.0.0.1:8089/v25.0/200/message_templates?name=a+b%26c"
        );
        let prefixed =
            PlatformClient::new(PlatformConfig::new("http://h/proxy", "t", "1", "2")).unwrap();
        assert_eq!(
            prefixed.url(&["1"], &[]).unwrap().as_str(),
            "http://h/proxy/v25.0/1"
        );
        // A pinned older version is used as given.
        let mut cfg = PlatformConfig::new("http://h", "t", "1", "2");
        cfg.api_version = "v24.0".into();
        let pinned = PlatformClient::new(cfg).unwrap();
        assert_eq!(
            pinned.url(&["1", "messages"], &[]).unwrap().as_str(),
            "http://h/v24.0/1/messages"
        );
    }

    #[test]
    fn debug_hides_the_token() {
        let cfg = PlatformConfig::new("http://h", "secret-token", "1", "2");
        assert!(!format!("{cfg:?}").contains("secret-token"));
    }
}
