//! The operator console's tables (migration `2026-11-30-300001_operators`), declared apart
//! from `schema.rs` so the console's tables are read in one place.

diesel::table! {
    operators (name) {
        name -> Text,
        role -> Text,
        password_hash -> Text,
        status -> Text,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    operator_sessions (token_hash) {
        token_hash -> Bytea,
        operator_name -> Text,
        csrf_token -> Text,
        created_at -> Timestamptz,
        expires_at -> Timestamptz,
    }
}

diesel::table! {
    operator_login_failures (id) {
        id -> Int8,
        name -> Text,
        failed_at -> Timestamptz,
    }
}

diesel::joinable!(operator_sessions -> operators (operator_name));
diesel::allow_tables_to_appear_in_same_query!(
    operators,
    operator_sessions,
    operator_login_failures
);
