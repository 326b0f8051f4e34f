//! Loading the policy file (POLICIES_PATH); the loader itself is the core's
//! (`warden_core::policy_file`), shared with the benches that run without this crate.

pub use warden_core::policy_file::{PolicyFileError, PolicySource, load, load_configured};
