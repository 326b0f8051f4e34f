DELETE FROM number_throughput WHERE sender <> 'default';
ALTER TABLE number_throughput DROP CONSTRAINT IF EXISTS number_throughput_pkey;
ALTER TABLE number_throughput DROP COLUMN IF EXISTS sender;
ALTER TABLE number_throughput ADD PRIMARY KEY (channel);
