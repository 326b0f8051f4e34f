#!/usr/bin/env bash
# `make faults`: fault drills against the whole stack (platform-sim, webhook, two
# dispatchers, scheduler) on private Postgres, Redis and NATS instances started for the
# run, then forged webhooks and fuzzed tool calls. Prints one table; JSON and process logs
# go to target/faults/. Exit status 1 when a drill fails.
#   FAULTS_PROFILE=release|debug  (release; debug reuses `make test`'s build, as CI does)
#   FAULTS_SCALE=F                (1 = 20,000 sends in the kill drill; 0.25 is a short run)
#   FAULTS_ONLY=name,name         (one drill or a subset, e.g. kill-at-end; `fault-drills --help` lists the names)
set -euo pipefail
cd "$(dirname "$0")/.."
profile=${FAULTS_PROFILE:-release}
case "$profile" in
  release) cargo build --release --bins; bin=target/release ;;
  debug) cargo build --bins; bin=target/debug ;;
  *) echo "FAULTS_PROFILE must be release or debug, not '$profile'" >&2; exit 2 ;;
esac
args=(--bins "$bin" --scale "${FAULTS_SCALE:-1}")
[ -n "${FAULTS_ONLY:-}" ] && args+=(--only "$FAULTS_ONLY")
exec "$bin/fault-drills" "${args[@]}"
