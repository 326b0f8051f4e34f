#!/usr/bin/env bash
# Everything `make test` runs, after scripts/services.sh made sure the services are up.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '\n[test] %s\n' "$*"; }

command -v cargo-nextest >/dev/null || { say "installing cargo-nextest"; cargo install --locked cargo-nextest; }

say "layering: crate dependencies follow the layer table, only store and core write, no module import cycle (scripts/check-layers.py)"
python3 scripts/check-layers.py

say "migrations: every version a real time, not in the future, a new one after every applied one (scripts/check-migrations.py)"
python3 scripts/check-migrations.py --self-test
python3 scripts/check-migrations.py

say "Python test dependencies (the official MCP SDK 2.x and 1.x, scripts/pydeps.sh)"
scripts/pydeps.sh

say "MCP conformance suite and Node 22 (scripts/conformance-deps.sh)"
scripts/conformance-deps.sh

say "headless Chromium and chromedriver for the console's browser tests (scripts/browser-deps.sh)"
scripts/browser-deps.sh

say "building binaries (the end-to-end tests spawn them)"
cargo build --bins

say "unit, integration and end-to-end tests (cargo nextest)"
cargo nextest run --workspace --no-fail-fast

if [ -x scripts/test-extra.sh ]; then
  say "packaging and outside-in checks"
  scripts/test-extra.sh
fi
say "all tests passed"
