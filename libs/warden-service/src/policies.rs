//! Loading the policy file (POLICIES_PATH) into the rule engine and the seed rows.

use std::path::Path;

use warden_rules::policy::PolicySet;
use warden_store::PolicySeed;

/// Parse and validate the file. The error is one line naming the file, the policy and why.
pub fn load(path: &Path) -> Result<(PolicySet, Vec<PolicySeed>), String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let set = PolicySet::from_yaml(&text).map_err(|e| format!("{}: {e}", path.display()))?;
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
