//! Media: upload_media (bytes to the platform, for send_media's media_id) and get_media
//! (a customer's media, as MCP content an agent can look at or listen to).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use rmcp::handler::server::tool::ToolName;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, ResourceContents};
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::Serialize;
use warden_platform::PlatformError;
use warden_platform::media::{DownloadError, sha256_hex};

use serde::Deserialize;

use crate::answer::finish;
use crate::error::{ToolError, ToolResult, code};
use crate::gateway::Gateway;
use crate::input::fields::{Text, opt_string};
use crate::input::shared::SenderName;
use crate::input::{Input, parse};
use crate::schema;
use crate::tools::rich::rich_error;
use crate::tools::senders::sender_arg;

/// The longest media id taken.
const MAX_MEDIA_ID_CHARS: usize = 256;

#[derive(Deserialize, JsonSchema)]
pub struct UploadMediaIn {
    /// The file's bytes, base64-encoded.
    pub data: Text,
    /// image/jpeg, image/png (5 MB); video/mp4, video/3gpp (16 MB); audio/aac, audio/amr, audio/mpeg, audio/mp4, audio/ogg (16 MB); application/pdf, text/plain, office documents (100 MB); image/webp for stickers (100 KB static, 500 KB animated).
    pub mime_type: Text,
    /// File name sent with the upload.
    pub filename: Option<Text>,
    /// The number that will send it (a sender id or its phone_number_id; list_senders lists
    /// them): media uploaded to one number is sent from that number. Default: the default sender.
    pub from: Option<SenderName>,
}

#[derive(Serialize, JsonSchema)]
pub struct UploadMediaOut {
    /// Pass it to send_media as media_id.
    pub media_id: String,
    pub mime_type: String,
    /// Bytes uploaded.
    #[schemars(range(min = 0))]
    pub size: u64,
}

#[derive(Deserialize, JsonSchema)]
pub struct GetMediaIn {
    /// The media id of a customer's image, audio, video, document or sticker (from their message's media.media_id).
    pub media_id: Text,
    /// The number the customer's message arrived at (a sender id or its phone_number_id, as
    /// the message's `from` says). Default: the default sender.
    pub from: Option<SenderName>,
}

#[derive(Serialize, JsonSchema)]
pub struct MediaOut {
    pub media_id: String,
    pub mime_type: String,
    /// Hex SHA-256 of the bytes, checked against the platform's.
    pub sha256: String,
    /// Bytes.
    #[schemars(range(min = 0))]
    pub file_size: u64,
}

#[tool_router(router = media_tools, vis = "pub(crate)")]
impl Gateway {
    #[tool(
        description = "Upload a file (base64 data) to the platform and get a media_id to use with send_media. The \
platform's type and size limits are checked first. Returns media_id, mime_type and size. Errors: INVALID_ARGUMENT (bad \
base64, a type the platform does not take, or over its size limit: the message names the limit), UPSTREAM_ERROR (the \
platform refused), UNAVAILABLE.",
        input_schema = schema::input::<UploadMediaIn>(),
        output_schema = schema::output::<UploadMediaOut>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = true)
    )]
    async fn upload_media(&self, tool: ToolName, args: JsonObject) -> CallToolResult {
        finish(&tool.0, self.upload_media_impl(args).await)
    }

    #[tool(
        description = "Fetch a customer's media by media_id: returns media_id, mime_type, sha256 and file_size, plus the \
bytes as an image content block (images), an audio block (audio) or an embedded resource blob (anything else). The \
checksum is verified. Errors: INVALID_ARGUMENT (larger than MEDIA_MAX_BYTES, default 5 MiB: nothing is downloaded past \
the limit), NOT_FOUND (the platform has no such media), UPSTREAM_ERROR (download failed or checksum mismatch), UNAVAILABLE.",
        input_schema = schema::input::<GetMediaIn>(),
        output_schema = schema::output::<MediaOut>(),
        annotations(read_only_hint = true, open_world_hint = true)
    )]
    async fn get_media(&self, tool: ToolName, args: JsonObject) -> CallToolResult {
        match self.get_media_impl(args).await {
            Ok((out, block)) => {
                let mut result = finish(&tool.0, Ok(out));
                result.content.push(block);
                result
            }
            Err(e) => finish::<MediaOut>(&tool.0, Err(e)),
        }
    }
}

impl Gateway {
    async fn upload_media_impl(&self, args: JsonObject) -> ToolResult<UploadMediaOut> {
        let a: Input<UploadMediaIn> = parse(args)?;
        let raw = &a.data.0;
        let mime_type = a.mime_type.0.clone();
        let filename = opt_string(&a.filename);
        let compact: String = raw.split_ascii_whitespace().collect();
        let data = STANDARD.decode(compact.as_bytes()).map_err(|e| {
            ToolError::invalid(
                format!("The parameter `data` is not valid base64: {e}."),
                "Pass the file's bytes base64-encoded (standard alphabet, with padding).",
            )
        })?;
        let (kind, _) = warden_rules::rich::check_upload(&mime_type, &data).map_err(rich_error)?;
        let mime = mime_type.to_ascii_lowercase();
        let name = filename.unwrap_or_else(|| format!("upload.{}", kind.as_str()));
        let (_, platform) = self.sender_platform(sender_arg(&a.from))?;
        let uploaded = match platform.upload_media(&data, &mime, &name).await {
            Ok(u) => u,
            Err(e) => return Err(self.upstream_error("upload the media", &e).await),
        };
        Ok(UploadMediaOut {
            media_id: uploaded.id,
            mime_type: mime,
            size: data.len() as u64,
        })
    }

    async fn get_media_impl(&self, args: JsonObject) -> ToolResult<(MediaOut, ContentBlock)> {
        let a: Input<GetMediaIn> = parse(args)?;
        let id = a.media_id.0.clone();
        crate::input::checks::check_len(
            "media_id",
            &id,
            MAX_MEDIA_ID_CHARS,
            "Pass the media id exactly as the message gave it.",
        )?;
        if !id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        {
            return Err(ToolError::invalid(
                "The parameter `media_id` may hold only letters, digits, `_`, `-` and `.`.",
                "Pass the media id exactly as the message gave it.",
            ));
        }
        let limit = self.core().settings().media_max_bytes;
        let (_, platform) = self.sender_platform(sender_arg(&a.from))?;
        // A limited agent reaches only media its numbers received; another business's
        // answers as media the platform does not have.
        let missing = || {
            ToolError::not_found(
                format!("The platform has no media with id {id}."),
                "Check the media id (it is in the customer's message); platform media expire after some time.",
            )
        };
        match self.core().admit_media(&id).await {
            Err(warden_core::CoreError::NotFound(_)) => return Err(missing()),
            other => other?,
        }
        let info = match platform.media_info(&id).await {
            Ok(i) => i,
            Err(PlatformError::Api { code: 100, .. }) => return Err(missing()),
            Err(e) => return Err(self.upstream_error("describe the media", &e).await),
        };
        let too_large = |size: String| {
            ToolError::invalid(
                format!(
                    "The media is {size} bytes; get_media returns at most MEDIA_MAX_BYTES = {limit} bytes."
                ),
                "Ask an operator to raise MEDIA_MAX_BYTES, or ask the customer for a smaller file.",
            )
        };
        if u64::try_from(info.file_size).unwrap_or(0) > limit {
            return Err(too_large(info.file_size.to_string()));
        }
        let bytes = match platform.download_media(&info.url, limit).await {
            Ok(b) => b,
            Err(DownloadError::TooLarge { size, .. }) => {
                return Err(too_large(
                    size.map_or_else(|| format!("more than {limit}"), |s| s.to_string()),
                ));
            }
            Err(DownloadError::Platform(e)) => {
                return Err(self.upstream_error("download the media", &e).await);
            }
        };
        let sha256 = sha256_hex(&bytes);
        if !sha256.eq_ignore_ascii_case(info.sha256.trim()) {
            return Err(ToolError::new(
                code::UPSTREAM_ERROR,
                format!(
                    "The downloaded media does not match the platform's checksum (sha256 {sha256}, expected {}).",
                    info.sha256
                ),
                "Try again; if it repeats the media is corrupt on the platform's side.",
            ));
        }
        let mime = info.mime_type.clone();
        let data = STANDARD.encode(&bytes);
        let essence = mime
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        let block = if essence.starts_with("image/") {
            ContentBlock::image(data, essence)
        } else if essence.starts_with("audio/") {
            ContentBlock::audio(data, essence)
        } else {
            ContentBlock::resource(ResourceContents::BlobResourceContents {
                uri: format!("warden://media/{id}"),
                mime_type: Some(mime.clone()),
                blob: data,
                meta: None,
            })
        };
        Ok((
            MediaOut {
                media_id: id,
                mime_type: mime,
                sha256,
                file_size: bytes.len() as u64,
            },
            block,
        ))
    }
}
