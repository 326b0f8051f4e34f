//! The platform's upload limits by media type, checked before an upload.

use super::{MediaType, RichError, err, shown};

/// 1 MiB, the unit of the platform's upload limits.
pub const MB: usize = 1024 * 1024;
/// 1 KiB.
pub const KB: usize = 1024;

/// Document types the platform takes.
const DOCUMENT_MIMES: [&str; 8] = [
    "text/plain",
    "application/pdf",
    "application/msword",
    "application/vnd.ms-excel",
    "application/vnd.ms-powerpoint",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation",
];

/// An animated WebP carries the animation flag in its VP8X header.
pub fn webp_is_animated(data: &[u8]) -> bool {
    data.len() > 20
        && &data[0..4] == b"RIFF"
        && &data[8..12] == b"WEBP"
        && &data[12..16] == b"VP8X"
        && data[20] & 0x02 != 0
}

/// The media kind an upload of `mime_type` becomes and its size limit in bytes, checked
/// against `data`: the platform's limits (image jpeg/png 5 MB; video mp4/3gpp 16 MB; audio
/// aac/amr/mpeg/mp4/ogg 16 MB; document 100 MB; sticker webp 100 KB static / 500 KB
/// animated). Fails naming `mime_type` or the size and the limit.
pub fn check_upload(mime_type: &str, data: &[u8]) -> Result<(MediaType, usize), RichError> {
    let mime = mime_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let (kind, limit, label) = match mime.as_str() {
        "image/jpeg" | "image/png" => (MediaType::Image, 5 * MB, "5 MB"),
        "video/mp4" | "video/3gpp" => (MediaType::Video, 16 * MB, "16 MB"),
        "audio/aac" | "audio/amr" | "audio/mpeg" | "audio/mp4" | "audio/ogg" => {
            (MediaType::Audio, 16 * MB, "16 MB")
        }
        "image/webp" if webp_is_animated(data) => {
            (MediaType::Sticker, 500 * KB, "500 KB (animated sticker)")
        }
        "image/webp" => (MediaType::Sticker, 100 * KB, "100 KB (static sticker)"),
        m if DOCUMENT_MIMES.contains(&m) => (MediaType::Document, 100 * MB, "100 MB"),
        _ => {
            return Err(err(
                "mime_type",
                format!(
                    "is {}, which the platform does not take; use image/jpeg, image/png, video/mp4, \
                     video/3gpp, audio/aac, audio/amr, audio/mpeg, audio/mp4, audio/ogg, image/webp (sticker), \
                     application/pdf, text/plain or an office document type",
                    shown(mime_type)
                ),
            ));
        }
    };
    if data.is_empty() {
        return Err(err("data", "must not be empty"));
    }
    if data.len() > limit {
        return Err(err(
            "data",
            format!(
                "is {} bytes; a {} upload may have at most {label} ({limit} bytes)",
                data.len(),
                kind.as_str()
            ),
        ));
    }
    Ok((kind, limit))
}
