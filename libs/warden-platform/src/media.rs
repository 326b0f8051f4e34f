//! Media: `POST /{phone-number-id}/media` (multipart upload), `GET /{media-id}` (where
//! the bytes are) and the download of those bytes with the access token, streamed and
//! stopped at a size limit.

use std::time::Duration;

use reqwest::Method;
use serde::{Deserialize, Serialize};

use crate::client::{PlatformClient, transport_error};
use crate::error::PlatformError;
use crate::lenient;

/// Uploads and downloads move more bytes than a send: they get longer than the
/// client's whole-request timeout.
const MEDIA_TIMEOUT: Duration = Duration::from_secs(120);

/// The answer to an upload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UploadResponse {
    /// The media id to send with (`image.id`, ...).
    #[serde(deserialize_with = "lenient::string")]
    pub id: String,
}

/// `GET /{media-id}`: where the bytes are and what they are.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MediaInfo {
    /// Download URL; needs the access token.
    pub url: String,
    pub mime_type: String,
    /// Hex SHA-256 of the bytes.
    pub sha256: String,
    /// Bytes (the platform sends a number or a numeric string).
    #[serde(deserialize_with = "lenient::int")]
    pub file_size: i64,
    #[serde(deserialize_with = "lenient::string")]
    pub id: String,
}

/// Why a download did not give the bytes.
#[derive(Debug, thiserror::Error)]
pub enum DownloadError {
    /// The platform (or the transport) failed.
    #[error(transparent)]
    Platform(#[from] PlatformError),
    /// More than `limit` bytes; nothing past the limit was read.
    #[error("the media has {} bytes; at most {limit} are allowed", size.map_or_else(|| format!("more than {limit}"), |s| s.to_string()))]
    TooLarge {
        /// The size, when the server said it.
        size: Option<u64>,
        limit: u64,
    },
}

/// Quotes, CR and LF would break the multipart header: replace them.
fn safe_filename(name: &str) -> String {
    name.chars()
        .map(|c| {
            if matches!(c, '"' | '\r' | '\n' | '\\') {
                '_'
            } else {
                c
            }
        })
        .collect()
}

/// A `multipart/form-data` body with `messaging_product`, `type` and `file`; returns the
/// content type (with its boundary) and the body.
pub fn multipart_body(data: &[u8], mime_type: &str, filename: &str) -> (String, Vec<u8>) {
    // Derived from the data: a part cannot contain its own digest.
    let digest = ring::digest::digest(&ring::digest::SHA256, data);
    let boundary = format!("warden-{}", &hex::encode(digest.as_ref())[..32]);
    let mut body = Vec::with_capacity(data.len() + 512);
    for (name, value) in [("messaging_product", "whatsapp"), ("type", mime_type)] {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
            )
            .as_bytes(),
        );
    }
    body.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{}\"\r\nContent-Type: {mime_type}\r\n\r\n",
            safe_filename(filename)
        )
        .as_bytes(),
    );
    body.extend_from_slice(data);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

/// Hex SHA-256 of `data`, as the platform reports it.
pub fn sha256_hex(data: &[u8]) -> String {
    hex::encode(ring::digest::digest(&ring::digest::SHA256, data).as_ref())
}

impl PlatformClient {
    /// `POST /{phone-number-id}/media`, multipart.
    pub async fn upload_media(
        &self,
        data: &[u8],
        mime_type: &str,
        filename: &str,
    ) -> Result<UploadResponse, PlatformError> {
        let url = self.url(&[&self.config().phone_number_id, "media"], &[])?;
        let (content_type, body) = multipart_body(data, mime_type, filename);
        let resp = self
            .http
            .request(Method::POST, url)
            .bearer_auth(&self.config().access_token)
            .header(reqwest::header::CONTENT_TYPE, content_type)
            .timeout(MEDIA_TIMEOUT)
            .body(body)
            .send()
            .await
            .map_err(transport_error)?;
        json_answer(resp).await
    }

    /// `GET /{media-id}`.
    pub async fn media_info(&self, media_id: &str) -> Result<MediaInfo, PlatformError> {
        let url = self.url(&[media_id], &[])?;
        let resp = self
            .http
            .request(Method::GET, url)
            .bearer_auth(&self.config().access_token)
            .send()
            .await
            .map_err(transport_error)?;
        json_answer(resp).await
    }

    /// Downloads `url` with the access token, reading at most `limit` bytes: a declared
    /// or actual size above it stops the download.
    pub async fn download_media(&self, url: &str, limit: u64) -> Result<Vec<u8>, DownloadError> {
        let url = reqwest::Url::parse(url)
            .map_err(|e| PlatformError::Config(format!("bad media url: {e}")))?;
        let mut resp = self
            .http
            .get(url)
            .bearer_auth(&self.config().access_token)
            .timeout(MEDIA_TIMEOUT)
            .send()
            .await
            .map_err(transport_error)?;
        let status = resp.status().as_u16();
        if !(200..300).contains(&status) {
            let bytes = resp.bytes().await.map_err(transport_error)?;
            return Err(PlatformError::from_response(status, &bytes).into());
        }
        if let Some(len) = resp.content_length().filter(|l| *l > limit) {
            return Err(DownloadError::TooLarge {
                size: Some(len),
                limit,
            });
        }
        let mut out = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(transport_error)? {
            if (out.len() + chunk.len()) as u64 > limit {
                return Err(DownloadError::TooLarge { size: None, limit });
            }
            out.extend_from_slice(&chunk);
        }
        Ok(out)
    }
}

/// A platform answer read as `T`; a non-2xx status or a body that is not `T` is the
/// platform's error.
async fn json_answer<T: serde::de::DeserializeOwned>(
    resp: reqwest::Response,
) -> Result<T, PlatformError> {
    let status = resp.status().as_u16();
    let bytes = resp.bytes().await.map_err(transport_error)?;
    if !(200..300).contains(&status) {
        return Err(PlatformError::from_response(status, &bytes));
    }
    serde_json::from_slice(&bytes).map_err(|_| PlatformError::from_response(status, &bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multipart_has_the_three_parts() {
        let (ct, body) = multipart_body(b"\x89PNG..", "image/png", "a\"b.png");
        let boundary = ct.strip_prefix("multipart/form-data; boundary=").unwrap();
        let text = String::from_utf8_lossy(&body);
        assert!(text.starts_with(&format!("--{boundary}\r\n")));
        assert!(text.contains("name=\"messaging_product\"\r\n\r\nwhatsapp\r\n"));
        assert!(text.contains("name=\"type\"\r\n\r\nimage/png\r\n"));
        assert!(text.contains("filename=\"a_b.png\"\r\nContent-Type: image/png\r\n\r\n"));
        assert!(text.ends_with(&format!("\r\n--{boundary}--\r\n")));
    }

    #[test]
    fn sha256_is_hex() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
