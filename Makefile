# Warden's commands: `make dev` and `make test` start what is missing first; `make check` is
# the everyday fast one (no services, installs nothing).
SHELL := /bin/bash
.DEFAULT_GOAL := help
CARGO ?= cargo
export CARGO_TERM_COLOR ?= never

.PHONY: help services dev build test check test-rust test-python lint bench faults fmt clean

help:
	@echo "make dev    start Postgres/Redis/NATS if needed, build, run webhook + dispatcher + scheduler + console + platform-sim"
	@echo "make test   start services if needed, then run every test (unit, integration, end-to-end)"
	@echo "make check  everyday fast check: fmt, clippy, layering, migration versions, unit tests (no services, installs nothing)"
	@echo "make lint   cargo fmt --check and clippy -D warnings"
	@echo "make bench  benchmarks (release build), figures printed and written to target/bench/"
	@echo "make faults fault drills: crashes, outages, forged webhooks, fuzzed tool calls (target/faults/)"

services:
	@scripts/services.sh

build:
	$(CARGO) build --bins

dev: services build
	@scripts/dev.sh

test: services
	@scripts/test.sh

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

# The unit tests (`--lib --bins`: #[cfg(test)] modules in src/) need no Postgres, Redis or
# NATS; integration tests (tests/it/ of each crate) do, and run in `make test`.
check: lint
	python3 scripts/check-layers.py
	python3 scripts/check-migrations.py --self-test
	python3 scripts/check-migrations.py
	@command -v cargo-nextest >/dev/null || { echo "make check: cargo-nextest is missing: cargo install --locked cargo-nextest (make test installs it)"; exit 1; }
	$(CARGO) nextest run --workspace --lib --bins

bench: services
	@scripts/bench.sh

# The drills start private Postgres/Redis/NATS; `services` installs the packages if missing.
faults: services
	@scripts/faults.sh

fmt:
	$(CARGO) fmt --all

clean:
	$(CARGO) clean
	rm -rf .dev
