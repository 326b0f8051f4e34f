//! The policy file (POLICIES_PATH): parsed into the rule engine and into the rows the
//! store seeds the policies table with.

use std::path::Path;

use warden_rules::policy::{PolicyError, PolicySet};
use warden_store::PolicySeed;

/// Why the policy file cannot be used: one line naming the file, the policy and why.
#[derive(Debug, thiserror::Error)]
pub enum PolicyFileError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Invalid { path: String, source: PolicyError },
}

/// Parse and validate the file.
pub fn load(path: &Path) -> Result<(PolicySet, Vec<PolicySeed>), PolicyFileError> {
    let text = std::fs::read_to_string(path).map_err(|source| PolicyFileError::Read {
        path: path.display().to_string(),
        source,
    })?;
    let set = PolicySet::from_yaml(&text).map_err(|source| PolicyFileError::Invalid {
        path: path.display().to_string(),
        source,
    })?;
    let seeds = set
        .policies()
        .iter()
        .map(|p| PolicySeed {
            id: p.id().to_string(),
            policy_type: p.policy_type().as_str().to_string(),
            message_types: p
                .message_types()
                .map(|types| types.iter().map(|c| c.as_str().to_string()).collect())
                .unwrap_or_default(),
            enabled: p.enabled(),
            definition: p.to_json(),
        })
        .collect();
    Ok((set, seeds))
}
