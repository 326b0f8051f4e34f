//! `forged-webhooks`: POSTs forged webhook events at a running `webhook` server and checks
//! that every one is refused with 401/403 and that nothing in Postgres changed.
//!
//! ```text
//! forged-webhooks --url http://127.0.0.1:8080 --secret S --database-url postgres://... [--posts 1000]
//! ```
//!
//! Every body is a real-shaped platform event that would write if accepted (statuses for
//! existing messages, inbound texts incl. STOP, marketing stops, template decisions,
//! quality changes, batches); only the signature is wrong, in one of five ways (see
//! [`Class`]). `--secret` is the server's real `PLATFORM_APP_SECRET`: it proves the
//! endpoint accepts a correct signature (one control POST of an empty batch, which writes
//! nothing) and lets the tampered and malformed classes carry a signature that would be
//! valid but for the tampering. Exit 0 when all were refused and nothing changed, 1 when
//! not, 2 on bad usage.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use diesel::QueryableByName;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use futures::StreamExt;
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use reqwest::header::{CONTENT_TYPE, HeaderValue};
use serde_json::{Value, json};
use warden_platform::signature::{HEADER, sign};

const USAGE: &str = "usage: forged-webhooks --url http://127.0.0.1:PORT --secret S --database-url postgres://... [--posts 1000] [--concurrency 16] [--seed 1]";

/// POSTs in flight at once.
const DEFAULT_CONCURRENCY: usize = 16;

struct Opts {
    url: String,
    secret: String,
    database_url: String,
    posts: usize,
    concurrency: usize,
    seed: u64,
}

fn parse_opts() -> Result<Opts, String> {
    let mut url = None;
    let mut secret = None;
    let mut database_url = None;
    let mut posts = 1000usize;
    let mut concurrency = DEFAULT_CONCURRENCY;
    let mut seed = 1u64;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "--help" || flag == "-h" {
            return Err(String::new());
        }
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let number = |v: &str| {
            v.parse::<u64>()
                .map_err(|_| format!("{flag} must be a whole number, got {v:?}"))
        };
        match flag.as_str() {
            "--url" => url = Some(value),
            "--secret" => secret = Some(value),
            "--database-url" => database_url = Some(value),
            "--posts" => posts = number(&value)? as usize,
            "--concurrency" => concurrency = number(&value)?.max(1) as usize,
            "--seed" => seed = number(&value)?,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let mut url = url.ok_or("--url is required")?;
    // Accept the server's base URL or the endpoint itself.
    if !url.trim_end_matches('/').ends_with("/webhook") {
        url = format!("{}/webhook", url.trim_end_matches('/'));
    }
    Ok(Opts {
        url,
        secret: secret.ok_or("--secret is required")?,
        database_url: database_url.ok_or("--database-url is required")?,
        posts,
        concurrency,
        seed,
    })
}

// ------------------------------------------------------------------ database snapshot

/// Tables a webhook POST can write (directly or through warden-core), with their keys.
const TABLES: [(&str, &str); 9] = [
    ("webhook_events", "event_key"),
    ("messages", "id"),
    ("customers", "phone"),
    ("conversations", "id"),
    ("audit_logs", "id"),
    ("templates", "id"),
    ("account_quality_events", "id"),
    ("message_frequencies", "id"),
    ("campaigns", "id"),
];

#[derive(QueryableByName)]
struct TableState {
    #[diesel(sql_type = diesel::sql_types::Text)]
    t: String,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    n: i64,
    #[diesel(sql_type = diesel::sql_types::Text)]
    h: String,
}

/// Row count and a digest of every row's full text per table, so in-place updates (an
/// opt-out, a status moving to `read`) show up as well as inserts.
async fn snapshot(conn: &mut AsyncPgConnection) -> Result<BTreeMap<String, (i64, String)>> {
    let sql = TABLES
        .iter()
        .map(|(t, key)| {
            format!(
                "SELECT '{t}'::text AS t, count(*)::bigint AS n, \
                 md5(coalesce(string_agg(x::text, '|' ORDER BY x.{key}), '')) AS h FROM {t} x"
            )
        })
        .collect::<Vec<_>>()
        .join(" UNION ALL ");
    let rows: Vec<TableState> = diesel::sql_query(sql)
        .load(conn)
        .await
        .context("snapshot query")?;
    Ok(rows.into_iter().map(|r| (r.t, (r.n, r.h))).collect())
}

#[derive(QueryableByName)]
struct MessageRow {
    #[diesel(sql_type = diesel::sql_types::Text)]
    id: String,
    #[diesel(sql_type = diesel::sql_types::Text)]
    wamid: String,
    #[diesel(sql_type = diesel::sql_types::Text)]
    phone: String,
}

#[derive(QueryableByName)]
struct PhoneRow {
    #[diesel(sql_type = diesel::sql_types::Text)]
    phone: String,
}

#[derive(QueryableByName)]
struct TemplateRow {
    #[diesel(sql_type = diesel::sql_types::Text)]
    name: String,
    #[diesel(sql_type = diesel::sql_types::Text)]
    locale: String,
}

/// Real rows to aim the forged events at, so an accepted forgery would change them;
/// made-up ones stand in when the database has none.
struct Targets {
    messages: Vec<MessageRow>,
    phones: Vec<String>,
    templates: Vec<TemplateRow>,
    real: (usize, usize, usize),
}

async fn targets(conn: &mut AsyncPgConnection) -> Result<Targets> {
    let mut messages: Vec<MessageRow> = diesel::sql_query(
        "SELECT id::text AS id, coalesce(wamid, '') AS wamid, customer_phone AS phone FROM messages \
         WHERE direction = 'outbound' ORDER BY (status = 'read'), created_at DESC LIMIT 50",
    )
    .load(conn)
    .await
    .context("reading messages")?;
    let mut phones: Vec<String> = diesel::sql_query(
        "SELECT phone FROM customers ORDER BY opt_in_marketing DESC, updated_at DESC LIMIT 50",
    )
    .load::<PhoneRow>(conn)
    .await
    .context("reading customers")?
    .into_iter()
    .map(|r| r.phone)
    .collect();
    let mut templates: Vec<TemplateRow> = diesel::sql_query(
        "SELECT name, locale FROM templates ORDER BY (status = 'APPROVED') DESC, updated_at DESC LIMIT 50",
    )
    .load(conn)
    .await
    .context("reading templates")?;
    let real = (messages.len(), phones.len(), templates.len());
    if messages.is_empty() {
        messages.push(MessageRow {
            id: uuid::Uuid::now_v7().to_string(),
            wamid: format!("wamid.forged-{}", uuid::Uuid::new_v4().simple()),
            phone: "6281234567890".into(),
        });
    }
    if phones.is_empty() {
        phones.push("6281234567890".into());
    }
    if templates.is_empty() {
        templates.push(TemplateRow {
            name: "order_update".into(),
            locale: "en".into(),
        });
    }
    Ok(Targets {
        messages,
        phones,
        templates,
        real,
    })
}

// ------------------------------------------------------------------ forged payloads

fn envelope(changes: Vec<Value>) -> Value {
    json!({
        "object": "whatsapp_business_account",
        "entry": [{"id": "200000000000001", "time": chrono::Utc::now().timestamp(), "changes": changes}]
    })
}

fn metadata() -> Value {
    json!({"display_phone_number": "15550100000", "phone_number_id": "100000000000001"})
}

fn status_change(m: &MessageRow, status: &str, ts: i64) -> Value {
    let wamid = if m.wamid.is_empty() {
        format!("wamid.forged-{}", uuid::Uuid::new_v4().simple())
    } else {
        m.wamid.clone()
    };
    let mut s = json!({
        "id": wamid, "status": status, "timestamp": ts.to_string(),
        "recipient_id": m.phone, "biz_opaque_callback_data": m.id,
        "pricing": {"billable": true, "pricing_model": "PMP", "category": "marketing", "type": "regular"}
    });
    if status == "failed" {
        // 131050 would also opt the customer out of marketing.
        s["errors"] = json!([{"code": 131050, "title": "User stopped marketing messages",
            "message": "User stopped marketing messages",
            "error_data": {"details": "forged"}}]);
    }
    json!({"field": "messages", "value": {"messaging_product": "whatsapp", "metadata": metadata(), "statuses": [s]}})
}

fn inbound_change(phone: &str, text: &str, ts: i64) -> Value {
    json!({"field": "messages", "value": {
        "messaging_product": "whatsapp", "metadata": metadata(),
        "contacts": [{"profile": {"name": "Forged"}, "wa_id": phone}],
        "messages": [{"from": phone, "id": format!("wamid.forged-{}", uuid::Uuid::new_v4().simple()),
                      "timestamp": ts.to_string(), "type": "text", "text": {"body": text}}]
    }})
}

fn preference_change(phone: &str, ts: i64) -> Value {
    json!({"field": "user_preferences", "value": {
        "messaging_product": "whatsapp", "metadata": metadata(),
        "contacts": [{"wa_id": phone, "profile": {"name": "Forged"}}],
        "user_preferences": [{"wa_id": phone, "detail": "User requested to stop marketing messages",
                              "category": "marketing_messages", "value": "stop", "timestamp": ts}]
    }})
}

fn template_change(t: &TemplateRow, event: &str) -> Value {
    json!({"field": "message_template_status_update", "value": {
        "event": event, "message_template_id": 1_689_556_908_129_832u64,
        "message_template_name": t.name, "message_template_language": t.locale,
        "reason": if event == "REJECTED" { "ABUSIVE_CONTENT" } else { "NONE" },
        "message_template_category": "MARKETING"
    }})
}

fn quality_change() -> Value {
    json!({"field": "phone_number_quality_update", "value": {
        "display_phone_number": "15550100000", "event": "DOWNGRADE",
        "current_limit": "TIER_50", "old_limit": "TIER_1K"
    }})
}

/// The event kinds a forged body carries, cycled so each class sees each kind.
const KINDS: [&str; 11] = [
    "status_sent",
    "status_delivered",
    "status_read",
    "status_failed",
    "inbound_text",
    "inbound_stop",
    "user_preferences_stop",
    "template_rejected",
    "template_paused",
    "phone_quality",
    "batch",
];

fn forged_body(kind: &str, t: &Targets, rng: &mut StdRng) -> Value {
    let now = chrono::Utc::now().timestamp();
    let m = t.messages.choose(rng).expect("at least one");
    let phone = t.phones.choose(rng).expect("at least one");
    let tpl = t.templates.choose(rng).expect("at least one");
    let change = match kind {
        "status_sent" => status_change(m, "sent", now),
        "status_delivered" => status_change(m, "delivered", now),
        "status_read" => status_change(m, "read", now),
        "status_failed" => status_change(m, "failed", now),
        "inbound_text" => inbound_change(phone, "hello, is my order on its way?", now),
        "inbound_stop" => inbound_change(phone, "STOP", now),
        "user_preferences_stop" => preference_change(phone, now),
        "template_rejected" => template_change(tpl, "REJECTED"),
        "template_paused" => template_change(tpl, "PAUSED"),
        "phone_quality" => quality_change(),
        _ => {
            return envelope(vec![
                status_change(m, "read", now),
                inbound_change(phone, "STOP", now),
                preference_change(phone, now),
                template_change(tpl, "DISABLED"),
                quality_change(),
            ]);
        }
    };
    envelope(vec![change])
}

// ------------------------------------------------------------------ forged signatures

/// How the signature is wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Class {
    /// No X-Hub-Signature-256 at all.
    MissingHeader,
    /// Well-formed, but made with another secret.
    WrongSecret,
    /// Valid for a body, sent with different bytes.
    TamperedBody,
    /// Not a well-formed `sha256=<64 hex>` value.
    MalformedHeader,
    /// Header-level tricks: duplicates, non-UTF-8 bytes, the wrong header name.
    HeaderTricks,
}

const CLASSES: [Class; 5] = [
    Class::MissingHeader,
    Class::WrongSecret,
    Class::TamperedBody,
    Class::MalformedHeader,
    Class::HeaderTricks,
];

impl Class {
    fn name(self) -> &'static str {
        match self {
            Class::MissingHeader => "missing_header",
            Class::WrongSecret => "wrong_secret",
            Class::TamperedBody => "tampered_body",
            Class::MalformedHeader => "malformed_header",
            Class::HeaderTricks => "header_tricks",
        }
    }
}

/// One forged POST: the bytes sent and the headers to send with them.
struct Forged {
    class: Class,
    variant: &'static str,
    kind: &'static str,
    body: Vec<u8>,
    headers: Vec<(&'static str, HeaderValue)>,
}

fn hv(s: &str) -> HeaderValue {
    HeaderValue::from_str(s).expect("printable header value")
}

fn forge(
    class: Class,
    kind: &'static str,
    value: &Value,
    secret: &[u8],
    rng: &mut StdRng,
) -> Forged {
    let body = serde_json::to_vec(value).expect("serialises");
    let good = sign(secret, &body);
    let hex = &good["sha256=".len()..];
    let (variant, body, headers): (&'static str, Vec<u8>, Vec<(&'static str, HeaderValue)>) =
        match class {
            Class::MissingHeader => {
                let variants = [
                    "none",
                    "other_header_x_hub_signature",
                    "right_signature_other_header",
                ];
                match *variants.choose(rng).expect("non-empty") {
                    "other_header_x_hub_signature" => (
                        "other_header_x_hub_signature",
                        body,
                        vec![("X-Hub-Signature", hv(&format!("sha1={}", &hex[..40])))],
                    ),
                    // The right signature, in a header the server must not look at.
                    "right_signature_other_header" => (
                        "right_signature_other_header",
                        body,
                        vec![("X-Signature", hv(&good))],
                    ),
                    _ => ("none", body, vec![]),
                }
            }
            Class::WrongSecret => {
                let secret_str = String::from_utf8_lossy(secret).into_owned();
                let wrong: Vec<(&'static str, Vec<u8>)> = vec![
                    ("empty_secret", Vec::new()),
                    ("other_secret", b"not-the-app-secret".to_vec()),
                    ("secret_plus_char", format!("{secret_str}x").into_bytes()),
                    (
                        "secret_truncated",
                        secret[..secret.len().saturating_sub(1)].to_vec(),
                    ),
                    ("secret_uppercased", secret_str.to_uppercase().into_bytes()),
                    ("verify_token_as_secret", b"dev-verify-token".to_vec()),
                ];
                // Some wrong secrets equal the real one for odd secrets ("" or all caps).
                let wrong: Vec<_> = wrong.into_iter().filter(|(_, s)| s != secret).collect();
                let (name, s) = wrong.choose(rng).expect("non-empty");
                (name, body.clone(), vec![(HEADER, hv(&sign(s, &body)))])
            }
            Class::TamperedBody => {
                let variants = [
                    "trailing_newline",
                    "pretty_printed",
                    "swapped_body",
                    "appended_event",
                    "signature_of_empty_body",
                    "prefix_of_body",
                ];
                let variant = *variants.choose(rng).expect("non-empty");
                let (signed, sent): (Vec<u8>, Vec<u8>) = match variant {
                    "trailing_newline" => (body.clone(), [body.as_slice(), b"\n"].concat()),
                    "pretty_printed" => (
                        body.clone(),
                        serde_json::to_vec_pretty(value).expect("serialises"),
                    ),
                    "swapped_body" => {
                        // Signed as something harmless, sent as the forged event.
                        let harmless = envelope(vec![]);
                        (
                            serde_json::to_vec(&harmless).expect("serialises"),
                            body.clone(),
                        )
                    }
                    "appended_event" => {
                        let mut more = value.clone();
                        if let Some(changes) = more["entry"][0]["changes"].as_array_mut() {
                            changes.push(quality_change());
                        }
                        (body.clone(), serde_json::to_vec(&more).expect("serialises"))
                    }
                    "signature_of_empty_body" => (Vec::new(), body.clone()),
                    _ => (body[..body.len() / 2].to_vec(), body.clone()),
                };
                (variant, sent, vec![(HEADER, hv(&sign(secret, &signed)))])
            }
            Class::MalformedHeader => {
                let mut flipped = hex.to_string().into_bytes();
                flipped[10] = if flipped[10] == b'0' { b'1' } else { b'0' };
                let flipped = String::from_utf8(flipped).expect("ascii");
                let variants: Vec<(&'static str, String)> = vec![
                    ("no_prefix", hex.to_string()),
                    ("sha1_prefix", format!("sha1={hex}")),
                    ("sha512_prefix", format!("sha512={hex}")),
                    ("prefix_without_equals", format!("sha256{hex}")),
                    ("non_hex", format!("sha256={}", "zz".repeat(32))),
                    ("non_hex_tail", format!("sha256={}zz", &hex[..62])),
                    ("truncated_even", good[..good.len() - 2].to_string()),
                    ("truncated_odd", good[..good.len() - 1].to_string()),
                    ("too_long", format!("{good}00")),
                    ("odd_length_extra", format!("{good}0")),
                    ("empty", String::new()),
                    ("prefix_only", "sha256=".into()),
                    ("space_inside", format!("sha256= {hex}")),
                    ("two_signatures", format!("{good},{good}")),
                    (
                        "uppercase_wrong_secret",
                        sign(b"wrong", &body).to_uppercase(),
                    ),
                    ("one_nibble_flipped", format!("sha256={flipped}")),
                    (
                        "base64_not_hex",
                        "sha256=q83vEjRWeJCrze8SNFZ4kKvN7xI0VniQq83vEjRWeJA=".into(),
                    ),
                ];
                let (name, v) = variants.choose(rng).expect("non-empty");
                (name, body, vec![(HEADER, hv(v))])
            }
            Class::HeaderTricks => {
                let variants = [
                    "duplicate_wrong_then_right",
                    "non_utf8_value",
                    "tab_padded_wrong",
                ];
                match *variants.choose(rng).expect("non-empty") {
                    "duplicate_wrong_then_right" => (
                        "duplicate_wrong_then_right",
                        body.clone(),
                        vec![(HEADER, hv(&sign(b"wrong", &body))), (HEADER, hv(&good))],
                    ),
                    "non_utf8_value" => {
                        let mut raw = good.clone().into_bytes();
                        raw.extend_from_slice(&[0xff, 0xfe]);
                        let v = HeaderValue::from_bytes(&raw).expect("obs-text is allowed");
                        ("non_utf8_value", body, vec![(HEADER, v)])
                    }
                    _ => (
                        "tab_padded_wrong",
                        body.clone(),
                        vec![(HEADER, hv(&format!("\t{}\t", sign(b"wrong", &body))))],
                    ),
                }
            }
        };
    Forged {
        class,
        variant,
        kind,
        body,
        headers,
    }
}

// ------------------------------------------------------------------ the drill

#[derive(Default)]
struct ClassTally {
    sent: usize,
    statuses: BTreeMap<String, usize>,
    variants: BTreeMap<&'static str, usize>,
}

/// `warden_webhook_signature_failures_total` from /metrics, when it answers.
async fn signature_failures(client: &reqwest::Client, webhook_url: &str) -> Option<u64> {
    let url = format!("{}/metrics", webhook_url.trim_end_matches("/webhook"));
    let text = client.get(url).send().await.ok()?.text().await.ok()?;
    text.lines()
        .find(|l| l.starts_with("warden_webhook_signature_failures_total"))
        .and_then(|l| l.split_whitespace().last())
        .and_then(|v| v.parse::<f64>().ok())
        .map(|v| v as u64)
}

async fn run(opts: Opts) -> Result<bool> {
    let started = Instant::now();
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .context("building the HTTP client")?;
    let mut conn = AsyncPgConnection::establish(&opts.database_url)
        .await
        .with_context(|| "connecting to --database-url".to_string())?;
    let secret = opts.secret.as_bytes();

    // Control: a correctly signed, empty batch must be accepted (it writes nothing), or
    // the drill would prove nothing (wrong URL or wrong --secret).
    let empty = serde_json::to_vec(&envelope(vec![]))?;
    let control = client
        .post(&opts.url)
        .header(CONTENT_TYPE, "application/json")
        .header(HEADER, sign(secret, &empty))
        .body(empty)
        .send()
        .await
        .with_context(|| format!("control POST to {}", opts.url))?;
    if !control.status().is_success() {
        bail!(
            "control POST (empty batch, correct signature) got HTTP {}; is --secret the webhook's PLATFORM_APP_SECRET and --url its address?",
            control.status().as_u16()
        );
    }

    let targets = targets(&mut conn).await?;
    eprintln!(
        "forged-webhooks: aiming at {} existing messages, {} customers, {} templates (made-up ids where none)",
        targets.real.0, targets.real.1, targets.real.2
    );
    let metric_before = signature_failures(&client, &opts.url).await;
    let before = snapshot(&mut conn).await?;

    let mut rng = StdRng::seed_from_u64(opts.seed);
    let forged: Vec<Forged> = (0..opts.posts)
        .map(|i| {
            let class = CLASSES[i % CLASSES.len()];
            let kind = KINDS[(i / CLASSES.len()) % KINDS.len()];
            let value = forged_body(kind, &targets, &mut rng);
            forge(class, kind, &value, secret, &mut rng)
        })
        .collect();

    let url = opts.url.clone();
    let results: Vec<(Class, &'static str, &'static str, Result<u16, String>)> =
        futures::stream::iter(forged)
            .map(|f| {
                let client = client.clone();
                let url = url.clone();
                async move {
                    let mut req = client
                        .post(&url)
                        .header(CONTENT_TYPE, "application/json")
                        .body(f.body);
                    for (name, value) in f.headers {
                        req = req.header(name, value);
                    }
                    let status = req
                        .send()
                        .await
                        .map(|r| r.status().as_u16())
                        .map_err(|e| e.to_string());
                    (f.class, f.variant, f.kind, status)
                }
            })
            .buffer_unordered(opts.concurrency)
            .collect()
            .await;

    // Writes are committed before the answer, but give any stray async work a moment.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = snapshot(&mut conn).await?;
    let metric_after = signature_failures(&client, &opts.url).await;

    let mut tallies: BTreeMap<Class, ClassTally> = BTreeMap::new();
    let (mut rejected, mut accepted, mut other) = (0usize, 0usize, 0usize);
    let mut offenders = Vec::new();
    for (class, variant, kind, status) in &results {
        let tally = tallies.entry(*class).or_default();
        tally.sent += 1;
        *tally.variants.entry(variant).or_default() += 1;
        let label = match status {
            Ok(code) => code.to_string(),
            Err(_) => "error".into(),
        };
        *tally.statuses.entry(label.clone()).or_default() += 1;
        match status {
            Ok(401 | 403) => rejected += 1,
            Ok(code) if (200..300).contains(code) => accepted += 1,
            _ => other += 1,
        }
        if !matches!(status, Ok(401 | 403)) && offenders.len() < 10 {
            offenders.push(format!(
                "{} / {variant} / {kind}: {label} {:?}",
                class.name(),
                status.as_ref().err()
            ));
        }
    }

    let mut rows_written = 0i64;
    let mut changed = Vec::new();
    for (table, (n0, h0)) in &before {
        let (n1, h1) = after.get(table).cloned().unwrap_or_default();
        rows_written += (n1 - n0).abs();
        if n1 != *n0 || h1 != *h0 {
            changed.push(json!({"table": table, "rows_before": n0, "rows_after": n1}));
        }
    }

    for (class, t) in &tallies {
        let statuses = t
            .statuses
            .iter()
            .map(|(s, n)| format!("{s} x{n}"))
            .collect::<Vec<_>>()
            .join(", ");
        eprintln!(
            "{:<17} {:>5} POSTs  HTTP {statuses}  ({} variants)",
            class.name(),
            t.sent,
            t.variants.len()
        );
    }
    eprintln!(
        "forged webhook POSTs: {} sent, {rejected} rejected (401/403), {accepted} accepted, rows written: {rows_written}",
        results.len()
    );
    for c in &changed {
        eprintln!("CHANGED: {c}");
    }
    for o in &offenders {
        eprintln!("NOT REJECTED: {o}");
    }
    let metric_delta = metric_before
        .zip(metric_after)
        .map(|(a, b)| b.saturating_sub(a));
    if let Some(d) = metric_delta {
        eprintln!("forged-webhooks: warden_webhook_signature_failures_total grew by {d}");
    }

    let ok = rejected == results.len() && changed.is_empty();
    let by_class: BTreeMap<&str, Value> = tallies
        .iter()
        .map(|(c, t)| {
            (
                c.name(),
                json!({"sent": t.sent, "statuses": t.statuses, "variants": t.variants}),
            )
        })
        .collect();
    let elapsed = started.elapsed();
    warden_faults::report::emit(&json!({
        "drill": "forged-webhooks",
        "ok": ok,
        "sent": results.len(),
        "rejected": rejected,
        "accepted": accepted,
        "other": other,
        "rows_written": rows_written,
        "tables_changed": changed,
        "signature_failures_metric_delta": metric_delta,
        "existing_targets": {"messages": targets.real.0, "customers": targets.real.1, "templates": targets.real.2},
        "by_class": by_class,
        "elapsed_ms": elapsed.as_millis() as u64,
    }));
    Ok(ok)
}

#[tokio::main]
async fn main() -> ExitCode {
    let opts = match parse_opts() {
        Ok(o) => o,
        Err(e) => return warden_faults::report::usage_error("forged-webhooks", USAGE, &e),
    };
    // reqwest is built without a default rustls provider; plain http needs none, but the
    // client builder still asks for one.
    let _ = rustls::crypto::ring::default_provider().install_default();
    warden_faults::report::exit_code("forged-webhooks", run(opts).await)
}
