#!/usr/bin/env bash
# Run platform-sim, webhook, dispatcher and scheduler against the local services, print
# how an agent host spawns mcp-gateway, and stop everything on Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BIN=${WARDEN_BIN_DIR:-$ROOT/target/debug}
LOGS=$ROOT/.dev/logs
mkdir -p "$LOGS"

export PLATFORM_APP_SECRET=${PLATFORM_APP_SECRET:-dev-app-secret}
export PLATFORM_ACCESS_TOKEN=${PLATFORM_ACCESS_TOKEN:-dev-access-token}
export PLATFORM_WEBHOOK_VERIFY_TOKEN=${PLATFORM_WEBHOOK_VERIFY_TOKEN:-dev-verify-token}
export PLATFORM_API_URL=${PLATFORM_API_URL:-http://127.0.0.1:8089}
export SERVER_HTTP_PORT=${SERVER_HTTP_PORT:-8080}
export SIM_WEBHOOK_URL=${SIM_WEBHOOK_URL:-http://127.0.0.1:$SERVER_HTTP_PORT/webhook}
export SIM_TEMPLATES=${SIM_TEMPLATES:-$ROOT/templates/sim-templates.json}
export POLICIES_PATH=${POLICIES_PATH:-$ROOT/policies/default.yaml}
export TIER=${TIER:-pro}
export SCHEDULER_POLL_INTERVAL=${SCHEDULER_POLL_INTERVAL:-1s}

pids=()
stop() {
  trap - INT TERM EXIT
  echo
  echo "[dev] stopping ${#pids[@]} processes"
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap stop INT TERM EXIT

start() { # name [env...]
  local name=$1; shift
  env "$@" "$BIN/$name" >"$LOGS/$name.log" 2>&1 &
  pids+=($!)
}

wait_health() { # name url
  for _ in $(seq 1 150); do
    curl -fs "$2" >/dev/null 2>&1 && { echo "[dev] $1 up ($2)"; return 0; }
    sleep 0.2
  done
  echo "[dev] $1 did not come up; last log lines:"; tail -n 20 "$LOGS/$1.log"; exit 1
}

start platform-sim
wait_health platform-sim http://127.0.0.1:8089/health
start webhook
start dispatcher ADMIN_HTTP_PORT=9090
start scheduler ADMIN_HTTP_PORT=9091
wait_health webhook "http://127.0.0.1:$SERVER_HTTP_PORT/health"
wait_health dispatcher http://127.0.0.1:9090/health
wait_health scheduler http://127.0.0.1:9091/health

cat <<JSON

Warden is running (logs in $LOGS). Point your agent host at mcp-gateway, e.g. in its
MCP servers config (Claude Desktop, Cursor, the MCP inspector):

{
  "mcpServers": {
    "warden": {
      "command": "$BIN/mcp-gateway",
      "env": {
        "TIER": "$TIER",
        "POLICIES_PATH": "$POLICIES_PATH",
        "PLATFORM_API_URL": "$PLATFORM_API_URL",
        "PLATFORM_ACCESS_TOKEN": "$PLATFORM_ACCESS_TOKEN"
      }
    }
  }
}

Try the platform stand-in: curl -X POST localhost:8089/sim/inbound -d '{"from":"6281234567890","text":"hi"}'
Ctrl-C stops everything.
JSON
wait -n "${pids[@]}" || true
echo "[dev] a process exited; see $LOGS"
