//! Warden's Postgres store: schema, models, the connection pool, and start-up
//! (migrations plus seeds, under an advisory lock so several processes can start at once).

pub mod audit;
pub mod error;
pub mod models;
pub mod pool;
pub mod schema;
pub mod schema_operators;
pub mod seeds;
pub mod startup;
pub mod testing;
pub mod tx;

pub use error::DbError;
pub use pool::{PgConn, PgPool, StoreError, connect};
pub use seeds::PolicySeed;
pub use startup::{SeedReport, prepare, prepare_with_card};
