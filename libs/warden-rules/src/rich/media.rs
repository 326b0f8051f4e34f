//! Media: the five kinds of `send_media` and the platform's media object (also an
//! interactive message's media header).

use serde::{Deserialize, Serialize};

use super::{
    MAX_BUTTON_ID_CHARS, MAX_CAPTION_CHARS, MAX_LABEL_CHARS, RichError, err, shown, text, url,
};
use crate::text::TextKind;

/// The five media kinds of `send_media`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MediaType {
    /// JPEG or PNG.
    Image,
    /// MP4 or 3GPP.
    Video,
    /// AAC, AMR, MP3, MP4 audio, OGG.
    Audio,
    /// Any document (PDF, office files, text).
    Document,
    /// WebP, static or animated.
    Sticker,
}

impl MediaType {
    /// All of them, in a stable order.
    pub const ALL: [MediaType; 5] = [
        MediaType::Image,
        MediaType::Video,
        MediaType::Audio,
        MediaType::Document,
        MediaType::Sticker,
    ];

    /// The platform's `type` (and object key).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Image => "image",
            Self::Video => "video",
            Self::Audio => "audio",
            Self::Document => "document",
            Self::Sticker => "sticker",
        }
    }

    /// Case-insensitive parse of `image|video|audio|document|sticker`.
    pub fn parse(s: &str) -> Result<Self, RichError> {
        Self::ALL
            .into_iter()
            .find(|m| m.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| {
                err(
                    "media_type",
                    format!(
                        "is {}; use image, video, audio, document or sticker",
                        shown(s)
                    ),
                )
            })
    }

    /// Whether the platform takes a caption with this kind.
    pub fn takes_caption(self) -> bool {
        !matches!(self, Self::Audio | Self::Sticker)
    }
}

/// The platform's media object: exactly one of `id` (an uploaded media id) or `link`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MediaObject {
    /// A media id returned by an upload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// A public http(s) URL the platform fetches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
    /// Image, video and document only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caption: Option<String>,
    /// Document only: the name the customer sees.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
}

impl MediaObject {
    pub(super) fn validate(&self, kind: MediaType) -> Result<(), RichError> {
        match (&self.id, &self.link) {
            (Some(_), Some(_)) => {
                return Err(err(
                    "link",
                    "and `media_id` were both given; pass exactly one",
                ));
            }
            (None, None) => return Err(err("link", "or `media_id` is required (exactly one)")),
            (Some(id), None) => text("media_id", id, MAX_BUTTON_ID_CHARS, TextKind::Plain)?,
            (None, Some(link)) => url("link", link)?,
        }
        if let Some(caption) = &self.caption {
            if !kind.takes_caption() {
                return Err(err(
                    "caption",
                    format!(
                        "is not allowed for {}; send it as a separate text",
                        kind.as_str()
                    ),
                ));
            }
            text("caption", caption, MAX_CAPTION_CHARS, TextKind::FreeText)?;
        }
        if let Some(filename) = &self.filename {
            if kind != MediaType::Document {
                return Err(err("filename", "is only allowed for documents"));
            }
            text("filename", filename, MAX_LABEL_CHARS, TextKind::Plain)?;
        }
        Ok(())
    }
}
