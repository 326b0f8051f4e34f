DROP TABLE IF EXISTS account_quality_events, webhook_events, conversation_pricing, audit_logs,
    error_knowledge_base, policies, message_frequencies, messages, campaigns, templates,
    conversations, customers;
