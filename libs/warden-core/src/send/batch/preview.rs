//! The batch's decisions with nothing written: a campaign preview judges its audience
//! chunk by chunk through the same `plan_batch` and `judge_chunk` a send uses, on plain
//! reads (no row locked, no message, count, reach or audit row written), carrying each
//! portfolio's reach from one chunk to the next as the real run would use it up.

use std::collections::HashMap;

use warden_rules::compliance::Decision;

use super::{Batch, BatchOutcome, Judged, Reach};
use crate::Core;
use crate::send::error::SendError;

/// What the real run would do with one recipient now.
#[derive(Debug, Clone, PartialEq)]
pub enum Previewed {
    /// It would be accepted (queued).
    Send,
    /// It would be refused (or held) with this decision.
    Refuse(Decision),
    /// It would not be judged: already given a message of the campaign, not a customer
    /// any more, or not reachable from its number (`code`, `message`).
    Skip(Option<(&'static str, String)>),
}

impl Core {
    /// The decisions [`Core::send_batch`] would take for `batch` now, writing nothing.
    /// `reaches`: each portfolio's reach as earlier chunks of the same preview left it
    /// (start with an empty map). Errors that would refuse the whole message (channel,
    /// content, template) are the preview's.
    pub async fn preview_batch(
        &self,
        batch: &Batch,
        reaches: &mut HashMap<String, Reach>,
    ) -> Result<Vec<Previewed>, SendError> {
        let mut out: Vec<Option<BatchOutcome>> = vec![None; batch.recipients.len()];
        let (groups, _) = self.plan_batch(batch, &mut out, true).await?;
        let mut previewed: Vec<Previewed> = out
            .into_iter()
            .map(|o| match o {
                Some(BatchOutcome::Error { code, message }) => {
                    Previewed::Skip(Some((code, message)))
                }
                _ => Previewed::Skip(None),
            })
            .collect();
        let mut conn = self
            .pg()
            .get()
            .await
            .map_err(|e| SendError::Unavailable(format!("database unavailable: {e}")))?;
        let now = self.now();
        for (checked, targets) in groups {
            let judged = self
                .judge_chunk(
                    &mut conn,
                    batch,
                    checked.category,
                    &checked.kind,
                    &targets,
                    Some(reaches),
                    now,
                    false,
                )
                .await
                .map_err(|e| SendError::Unavailable(format!("database unavailable: {e}")))?;
            for (t, j) in targets.iter().zip(judged) {
                previewed[t.index] = match j {
                    Judged::Accept { .. } => Previewed::Send,
                    Judged::Refuse(d) | Judged::Limit(d) => Previewed::Refuse(d),
                    Judged::Skip => Previewed::Skip(None),
                };
            }
        }
        Ok(previewed)
    }
}
