//! Media the sim holds: uploads at the platform's `POST /{phone-number-id}/media`
//! (multipart), bytes stored by tests at `POST /sim/media`, `GET /{media-id}` answering
//! where they are, and the download URL serving them only with the bearer token.

use actix_web::http::header::CONTENT_TYPE;
use actix_web::{HttpRequest, HttpResponse, web};
use bytes::Bytes;
use serde_json::{Value, json};

use crate::reply::{refusal, reject_unauthorized, reject_unless_number};
use crate::state::{Refusal, Sim};

/// Where the bytes of a media id are served (token required), like the platform's
/// lookaside URLs.
pub const DOWNLOAD_PATH: &str = "/whatsapp_business/attachments/{media_id}";

/// The platform's upload limit for a mime type, or `None` when it takes no such type.
fn upload_limit(mime: &str, data: &[u8]) -> Option<usize> {
    const MB: usize = 1024 * 1024;
    const KB: usize = 1024;
    let animated_webp = data.len() > 20 && &data[12..16] == b"VP8X" && data[20] & 0x02 != 0;
    Some(match mime {
        "image/jpeg" | "image/png" => 5 * MB,
        "video/mp4" | "video/3gpp" => 16 * MB,
        "audio/aac" | "audio/amr" | "audio/mpeg" | "audio/mp4" | "audio/ogg" => 16 * MB,
        "image/webp" if animated_webp => 500 * KB,
        "image/webp" => 100 * KB,
        "text/plain" | "application/pdf" => 100 * MB,
        m if m.starts_with("application/vnd.") || m == "application/msword" => 100 * MB,
        _ => return None,
    })
}

/// One part of a multipart body.
struct Part {
    name: String,
    filename: Option<String>,
    content_type: Option<String>,
    data: Bytes,
}

fn header_param(line: &str, key: &str) -> Option<String> {
    let at = line.find(&format!("{key}=\""))? + key.len() + 2;
    let rest = &line[at..];
    Some(rest[..rest.find('"')?].to_owned())
}

fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    if from > hay.len() {
        return None;
    }
    hay[from..]
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

/// Parses `multipart/form-data`; `None` when it is not well formed.
fn multipart(content_type: &str, body: &Bytes) -> Option<Vec<Part>> {
    let boundary = content_type
        .split(';')
        .map(str::trim)
        .find_map(|p| p.strip_prefix("boundary="))?
        .trim_matches('"');
    let delim = format!("--{boundary}");
    let mut parts = Vec::new();
    let mut pos = find(body, delim.as_bytes(), 0)? + delim.len();
    loop {
        if body.get(pos..pos + 2) == Some(b"--") {
            return Some(parts);
        }
        let head_start = pos + 2; // \r\n after the delimiter
        let head_end = find(body, b"\r\n\r\n", head_start)?;
        let head = std::str::from_utf8(&body[head_start..head_end]).ok()?;
        let next = find(body, format!("\r\n{delim}").as_bytes(), head_end + 4)?;
        let mut part = Part {
            name: String::new(),
            filename: None,
            content_type: None,
            data: body.slice(head_end + 4..next),
        };
        for line in head.split("\r\n") {
            let lower = line.to_ascii_lowercase();
            if lower.starts_with("content-disposition:") {
                part.name = header_param(line, "name")?;
                part.filename = header_param(line, "filename");
            } else if let Some(v) = lower.strip_prefix("content-type:") {
                part.content_type = Some(v.trim().to_owned());
            }
        }
        parts.push(part);
        pos = next + 2 + delim.len();
    }
}

fn upload_error(details: impl Into<String>) -> HttpResponse {
    refusal(Refusal::new(400, 131053, details))
}

/// `POST /{version}/{phone-number-id}/media`.
pub async fn upload(
    sim: web::Data<Sim>,
    req: HttpRequest,
    path: web::Path<(String, String)>,
    body: web::Bytes,
) -> HttpResponse {
    if let Some(resp) = reject_unauthorized(&sim, &req) {
        return resp;
    }
    let (_, id) = path.into_inner();
    let Some(number) = sim.numbers.get(&id) else {
        return refusal(Refusal::new(
            400,
            100,
            format!("Object with ID '{id}' does not exist"),
        ));
    };
    if let Some(resp) = reject_unless_number(&req, number) {
        return resp;
    }
    let content_type = req
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !content_type
        .to_ascii_lowercase()
        .starts_with("multipart/form-data")
    {
        return upload_error("the upload must be multipart/form-data");
    }
    let Some(parts) = multipart(content_type, &body) else {
        return upload_error("the multipart body is not well formed");
    };
    let field = |name: &str| parts.iter().find(|p| p.name == name);
    if field("messaging_product").map(|p| p.data.as_ref()) != Some(b"whatsapp".as_ref()) {
        return refusal(Refusal::new(
            400,
            100,
            "The parameter messaging_product is required and must be 'whatsapp'",
        ));
    }
    let Some(file) = field("file") else {
        return upload_error("the parameter file is required");
    };
    let mime = field("type")
        .and_then(|p| std::str::from_utf8(&p.data).ok().map(str::to_owned))
        .or_else(|| file.content_type.clone())
        .unwrap_or_default()
        .to_ascii_lowercase();
    match upload_limit(&mime, &file.data) {
        None => return upload_error(format!("unsupported media type {mime:?}")),
        Some(_) if file.data.is_empty() => return upload_error("the file is empty"),
        Some(limit) if file.data.len() > limit => {
            return upload_error(format!(
                "{mime} file of {} bytes is larger than the limit of {limit} bytes",
                file.data.len()
            ));
        }
        Some(_) => {}
    }
    let id = sim
        .media
        .put(file.data.clone(), &mime, file.filename.clone());
    HttpResponse::Ok().json(json!({ "id": id }))
}

/// `POST /sim/media`: the body is the bytes, `Content-Type` their mime type.
pub async fn sim_store(sim: web::Data<Sim>, req: HttpRequest, body: web::Bytes) -> HttpResponse {
    let mime = req
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/octet-stream")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let id = sim.media.put(body, &mime, None);
    HttpResponse::Ok().json(json!({ "id": id }))
}

/// `GET /{version}/{media-id}` for a media id the sim holds.
pub fn info(sim: &Sim, req: &HttpRequest, id: &str) -> Option<Value> {
    let item = sim.media.get(id)?;
    let conn = req.connection_info();
    let url = format!(
        "{}://{}{}",
        conn.scheme(),
        conn.host(),
        DOWNLOAD_PATH.replace("{media_id}", id)
    );
    Some(json!({
        "messaging_product": "whatsapp",
        "url": url,
        "mime_type": item.mime_type,
        "sha256": item.sha256,
        "file_size": item.bytes.len(),
        "id": id,
    }))
}

/// The download URL: the bytes, with the bearer token only.
pub async fn download(
    sim: web::Data<Sim>,
    req: HttpRequest,
    path: web::Path<String>,
) -> HttpResponse {
    if let Some(resp) = reject_unauthorized(&sim, &req) {
        return resp;
    }
    match sim.media.get(&path.into_inner()) {
        Some(item) => HttpResponse::Ok()
            .content_type(item.mime_type.clone())
            .body(item.bytes.clone()),
        None => refusal(Refusal::new(404, 131052, "media not found")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_gateway_multipart() {
        let (ct, body) =
            warden_platform::media::multipart_body(b"abc\r\n--x", "image/png", "p.png");
        let parts = multipart(&ct, &Bytes::from(body)).unwrap();
        let names: Vec<_> = parts.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["messaging_product", "type", "file"]);
        assert_eq!(parts[2].data.as_ref(), b"abc\r\n--x");
        assert_eq!(parts[2].filename.as_deref(), Some("p.png"));
        assert_eq!(parts[2].content_type.as_deref(), Some("image/png"));
        assert!(
            multipart(
                "multipart/form-data; boundary=zz",
                &Bytes::from_static(b"junk")
            )
            .is_none()
        );
    }
}
