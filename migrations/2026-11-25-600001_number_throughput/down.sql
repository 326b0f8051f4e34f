DROP TABLE IF EXISTS number_throughput;
