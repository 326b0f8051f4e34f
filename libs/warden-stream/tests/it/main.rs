//! warden-stream's integration tests, one binary: a module per topic, against a real NATS with
//! JetStream (`make test` starts it; `scripts/services.sh` alone does too).

mod stream;
