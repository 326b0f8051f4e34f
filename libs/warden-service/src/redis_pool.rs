//! The Redis pool (defined by the core, which keeps its copies there).

pub use warden_core::deps::{RedisConnectError, RedisPool, connect_redis as connect};
