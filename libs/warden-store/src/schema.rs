//! Diesel table definitions, written by hand to match `migrations/` (no diesel_cli needed).

diesel::table! {
    customers (phone) {
        phone -> Text,
        country -> Text,
        opt_in_marketing -> Bool,
        opt_in_utility -> Bool,
        opt_changed_at -> Nullable<Timestamptz>,
        opt_change_reason -> Nullable<Text>,
        tags -> Array<Text>,
        engagement_score -> Float8,
        last_interaction_at -> Nullable<Timestamptz>,
        undeliverable_at -> Nullable<Timestamptz>,
        marketing_limited_at -> Nullable<Timestamptz>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
        bsuid -> Nullable<Text>,
        parent_bsuid -> Nullable<Text>,
        username -> Nullable<Text>,
    }
}

diesel::table! {
    conversations (id) {
        id -> Uuid,
        customer_phone -> Text,
        channel -> Text,
        conversation_type -> Text,
        last_inbound_at -> Nullable<Timestamptz>,
        last_outbound_at -> Nullable<Timestamptz>,
        window_expires_at -> Nullable<Timestamptz>,
        archived_at -> Nullable<Timestamptz>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
        sender_id -> Text,
        holder -> Nullable<Text>,
        holder_since -> Nullable<Timestamptz>,
        holder_by -> Nullable<Text>,
        holder_until -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    templates (id) {
        id -> Uuid,
        name -> Text,
        locale -> Text,
        category -> Text,
        status -> Text,
        body_text -> Text,
        platform_id -> Nullable<Text>,
        rejection_reason -> Nullable<Text>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
        status_event_at -> Nullable<Timestamptz>,
        components -> Nullable<Jsonb>,
        parameter_format -> Nullable<Text>,
        pending_category -> Nullable<Text>,
        pending_category_at -> Nullable<Timestamptz>,
        quality_score -> Nullable<Text>,
        quality_updated_at -> Nullable<Timestamptz>,
        business -> Text,
    }
}

diesel::table! {
    campaigns (id) {
        id -> Uuid,
        name -> Text,
        campaign_type -> Text,
        status -> Text,
        deliver_at -> Timestamptz,
        template_name -> Text,
        locale -> Text,
        variables -> Jsonb,
        audience_filter -> Jsonb,
        sent_count -> Int4,
        delivered_count -> Int4,
        failed_count -> Int4,
        total_recipients -> Int4,
        enqueued_count -> Int4,
        audience_cursor -> Nullable<Text>,
        audience_done -> Bool,
        status_reason -> Nullable<Text>,
        paused_at -> Nullable<Timestamptz>,
        lease_until -> Nullable<Timestamptz>,
        lease_owner -> Nullable<Text>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
        cancelled_count -> Int4,
        components -> Nullable<Jsonb>,
        paused_by_rule -> Nullable<Text>,
        sender_id -> Text,
        senders -> Nullable<Array<Text>>,
    }
}

diesel::table! {
    messages (id) {
        id -> Uuid,
        customer_phone -> Text,
        channel -> Text,
        direction -> Text,
        message_type -> Text,
        category -> Text,
        status -> Text,
        content -> Jsonb,
        template_name -> Nullable<Text>,
        template_locale -> Nullable<Text>,
        campaign_id -> Nullable<Uuid>,
        deliver_at -> Nullable<Timestamptz>,
        wamid -> Nullable<Text>,
        retry_count -> Int4,
        attempt -> Int4,
        published_at -> Nullable<Timestamptz>,
        lease_until -> Nullable<Timestamptz>,
        lease_owner -> Nullable<Text>,
        next_attempt_at -> Nullable<Timestamptz>,
        error_code -> Nullable<Int4>,
        error_category -> Nullable<Text>,
        error_can_retry -> Nullable<Bool>,
        error_explanation -> Nullable<Text>,
        error_suggested_action -> Nullable<Text>,
        trace_context -> Nullable<Jsonb>,
        sent_at -> Nullable<Timestamptz>,
        delivered_at -> Nullable<Timestamptz>,
        read_at -> Nullable<Timestamptz>,
        failed_at -> Nullable<Timestamptz>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
        redacted_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    message_frequencies (id) {
        id -> Int8,
        customer_phone -> Text,
        category -> Text,
        message_id -> Uuid,
        counted_at -> Timestamptz,
        business -> Text,
    }
}

diesel::table! {
    policies (id) {
        id -> Text,
        policy_type -> Text,
        message_types -> Array<Text>,
        enabled -> Bool,
        definition -> Jsonb,
        position -> Int4,
        in_file -> Bool,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    error_knowledge_base (code) {
        code -> Int4,
        title -> Text,
        category -> Text,
        can_retry -> Bool,
        handling -> Text,
        human_explanation -> Text,
        suggested_action -> Text,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    audit_logs (id) {
        id -> Int8,
        occurred_at -> Timestamptz,
        actor -> Text,
        action -> Text,
        entity_type -> Text,
        entity_id -> Text,
        details -> Jsonb,
    }
}

diesel::table! {
    conversation_pricing (id) {
        id -> Int4,
        country -> Text,
        conversation_type -> Text,
        cost_e4 -> Int8,
        currency -> Text,
        pricing_category -> Text,
        pricing_model_version -> Text,
        effective_date -> Date,
    }
}

diesel::table! {
    webhook_events (event_key) {
        event_key -> Text,
        kind -> Text,
        received_at -> Timestamptz,
    }
}

diesel::table! {
    account_quality_events (id) {
        id -> Int8,
        event -> Text,
        current_limit -> Nullable<Text>,
        display_phone_number -> Nullable<Text>,
        payload -> Jsonb,
        received_at -> Timestamptz,
    }
}

diesel::table! {
    webhook_progress (id) {
        id -> Int2,
        status_through -> Timestamptz,
    }
}

diesel::joinable!(conversations -> customers (customer_phone));
diesel::joinable!(messages -> campaigns (campaign_id));

diesel::allow_tables_to_appear_in_same_query!(
    customers,
    conversations,
    templates,
    campaigns,
    messages,
    message_frequencies,
    policies,
    error_knowledge_base,
    audit_logs,
    conversation_pricing,
    webhook_events,
    account_quality_events,
    webhook_progress,
    suppressions,
);

diesel::table! {
    suppressions (phone) {
        phone -> Text,
        reason -> Text,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    customer_number_changes (old_phone, new_phone) {
        old_phone -> Text,
        new_phone -> Text,
        changed_at -> Timestamptz,
        recorded_at -> Timestamptz,
    }
}

diesel::table! {
    number_throughput (channel, sender) {
        channel -> Text,
        high_throughput -> Bool,
        coexistence -> Bool,
        source -> Text,
        display_phone_number -> Nullable<Text>,
        updated_at -> Timestamptz,
        sender -> Text,
    }
}

diesel::table! {
    sender_numbers (sender_id) {
        sender_id -> Text,
        display_phone_number -> Nullable<Text>,
        display_digits -> Nullable<Text>,
        quality_rating -> Nullable<Text>,
        throughput_level -> Nullable<Text>,
        name_status -> Nullable<Text>,
        messaging_limit_tier -> Nullable<Text>,
        read_at -> Nullable<Timestamptz>,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    quality_updates_unmatched (id) {
        id -> Int8,
        account -> Text,
        display_phone_number -> Text,
        event -> Text,
        received_at -> Timestamptz,
    }
}

diesel::table! {
    message_pricing (message_id) {
        message_id -> Uuid,
        billable -> Nullable<Bool>,
        pricing_model -> Nullable<Text>,
        category -> Nullable<Text>,
        pricing_type -> Nullable<Text>,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    idempotency_keys (actor, key) {
        actor -> Text,
        key -> Text,
        tool -> Text,
        args_hash -> Text,
        result -> Jsonb,
        created_at -> Timestamptz,
    }
}

// Platform limits: the portfolio's messaging limit, who it reached, held messages.
diesel::table! {
    portfolio_limit (portfolio) {
        portfolio -> Text,
        tier -> Nullable<Text>,
        unique_users -> Nullable<Int4>,
        source -> Text,
        updated_at -> Timestamptz,
        checked_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    portfolio_reach (portfolio, customer_phone) {
        portfolio -> Text,
        customer_phone -> Text,
        reached_at -> Timestamptz,
        message_id -> Uuid,
    }
}

diesel::table! {
    message_holds (message_id) {
        message_id -> Uuid,
        reason -> Text,
        held_until -> Timestamptz,
        holds -> Int4,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    agents (name) {
        name -> Text,
        key_id -> Text,
        key_salt -> Bytea,
        key_hash -> Bytea,
        scopes -> Array<Text>,
        status -> Text,
        max_sends_per_minute -> Nullable<Int4>,
        max_marketing_per_day -> Nullable<Int4>,
        allowed_message_types -> Nullable<Array<Text>>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
        senders -> Nullable<Array<Text>>,
    }
}

diesel::table! {
    agent_usage (agent, kind, window_start) {
        agent -> Text,
        kind -> Text,
        window_start -> Timestamptz,
        used -> Int4,
    }
}

diesel::table! {
    message_actors (message_id) {
        message_id -> Uuid,
        actor -> Text,
    }
}

// Several numbers: the sender of a message that is not the default sender's, and the
// consent a customer gave another business than the default sender's.
diesel::table! {
    message_senders (message_id) {
        message_id -> Uuid,
        sender_id -> Text,
        business -> Text,
    }
}

diesel::table! {
    business_consent (business, customer_phone) {
        business -> Text,
        customer_phone -> Text,
        opt_in_marketing -> Bool,
        opt_in_utility -> Bool,
        opt_changed_at -> Nullable<Timestamptz>,
        opt_change_reason -> Nullable<Text>,
    }
}

diesel::joinable!(message_senders -> messages (message_id));
diesel::allow_tables_to_appear_in_same_query!(messages, message_senders);

diesel::table! {
    sender_protection (sender_id) {
        sender_id -> Text,
        reason -> Text,
        source -> Text,
        since -> Timestamptz,
    }
}

diesel::table! {
    conversation_holder_changes (id) {
        id -> Int8,
        customer_phone -> Text,
        channel -> Text,
        sender_id -> Text,
        from_kind -> Text,
        to_kind -> Text,
        changed_by -> Text,
        reason -> Text,
        until -> Nullable<Timestamptz>,
        changed_at -> Timestamptz,
    }
}

diesel::table! {
    routed_numbers (sender_id) {
        sender_id -> Text,
        since -> Timestamptz,
        source -> Text,
    }
}

// Flows: the token of each flow message sent, and each customer's submission (the answers
// stay in the message's content).
diesel::table! {
    flow_sends (message_id) {
        message_id -> Uuid,
        flow_token -> Text,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    flow_responses (message_id) {
        message_id -> Uuid,
        sender_id -> Text,
        flow_token -> Nullable<Text>,
        context_wamid -> Nullable<Text>,
        flow_message_id -> Nullable<Uuid>,
        received_at -> Timestamptz,
    }
}
