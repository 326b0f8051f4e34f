# Warden's two commands: `make dev` and `make test`. Both start what is missing first.
SHELL := /bin/bash
.DEFAULT_GOAL := help
CARGO ?= cargo
export CARGO_TERM_COLOR ?= never

.PHONY: help services dev build test test-rust test-python lint bench faults fmt clean

help:
	@echo "make dev    start Postgres/Redis/NATS if needed, build, run webhook + dispatcher + scheduler + platform-sim"
	@echo "make test   start services if needed, then run every test (unit, integration, end-to-end)"
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
