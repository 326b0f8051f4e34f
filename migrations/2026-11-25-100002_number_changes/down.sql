DROP TABLE IF EXISTS customer_number_changes;
