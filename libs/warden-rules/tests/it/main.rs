//! warden-rules' integration tests, one binary (pure functions, no services): the rule table
//! property tests against `warden_test_support::rule_table`.

mod rule_table;
