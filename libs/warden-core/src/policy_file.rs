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
    parse(path, &text)
}

/// The repository's `policies/default.yaml`, compiled in: used when POLICIES_PATH is not
/// set and that relative path does not exist (a binary started from another directory,
/// as agent hosts start mcp-gateway).
pub const BUILTIN_DEFAULT: &str = include_str!("../../../policies/default.yaml");

/// Where the policies in force came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicySource {
    File(std::path::PathBuf),
    BuiltinDefault,
}

/// The policy file of `settings`: POLICIES_PATH when set (missing or invalid is an
/// error); otherwise the default path when it exists, else [`BUILTIN_DEFAULT`]. Logs which.
pub fn load_configured(
    path: &Path,
    explicitly_set: bool,
) -> Result<(PolicySet, Vec<PolicySeed>, PolicySource), PolicyFileError> {
    if explicitly_set || path.exists() {
        let (set, seeds) = load(path)?;
        tracing::info!(path = %path.display(), "policy file loaded");
        return Ok((set, seeds, PolicySource::File(path.to_path_buf())));
    }
    let (set, seeds) = parse(
        Path::new("<built-in policies/default.yaml>"),
        BUILTIN_DEFAULT,
    )?;
    tracing::info!(
        looked_for = %path.display(),
        "POLICIES_PATH is not set and the default policy file is absent here: using the built-in default policies"
    );
    Ok((set, seeds, PolicySource::BuiltinDefault))
}

fn parse(path: &Path, text: &str) -> Result<(PolicySet, Vec<PolicySeed>), PolicyFileError> {
    let set = PolicySet::from_yaml(text).map_err(|source| PolicyFileError::Invalid {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_default_only_when_unset_and_absent() {
        let absent = Path::new("/nonexistent/warden/policies/default.yaml");
        let (set, seeds, source) = load_configured(absent, false).expect("built-in default");
        assert_eq!(source, PolicySource::BuiltinDefault);
        // The same policies as the shipped file.
        let shipped = Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../policies/default.yaml"
        ));
        let (from_file, file_seeds, file_source) = load_configured(shipped, false).unwrap();
        assert_eq!(file_source, PolicySource::File(shipped.to_path_buf()));
        assert_eq!(set.policies().len(), from_file.policies().len());
        assert_eq!(
            seeds.iter().map(|s| &s.id).collect::<Vec<_>>(),
            file_seeds.iter().map(|s| &s.id).collect::<Vec<_>>()
        );
        // Set explicitly and missing: still an error (the binaries exit 2).
        assert!(matches!(
            load_configured(absent, true),
            Err(PolicyFileError::Read { .. })
        ));
    }
}
