#!/usr/bin/env bash
# Run platform-sim, webhook, dispatcher, scheduler and the operator console against the
# local services, print how an agent host spawns mcp-gateway and how to log in to the
# console, and stop everything on Ctrl-C.
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
export CONSOLE_HTTP_ADDR=${CONSOLE_HTTP_ADDR:-127.0.0.1:8090}

# Several numbers: `SENDERS_PATH=examples/senders.yaml make dev` serves the example's three
# numbers of two businesses, with the stand-in's matching file and dev credentials.
GATEWAY_SENDERS_ENV=""
if [ -n "${SENDERS_PATH:-}" ]; then
  export SENDERS_PATH=$(cd "$(dirname "$SENDERS_PATH")" && pwd)/$(basename "$SENDERS_PATH")
  if [ "$SENDERS_PATH" = "$ROOT/examples/senders.yaml" ]; then
    export SIM_SENDERS=${SIM_SENDERS:-$ROOT/examples/sim-senders.json}
    export SENDER_A1_TOKEN=${SENDER_A1_TOKEN:-dev-token-a1}
    export SENDER_A2_TOKEN=${SENDER_A2_TOKEN:-dev-token-a2}
    export SENDER_B1_TOKEN=${SENDER_B1_TOKEN:-dev-token-b1}
    export SENDER_A_APP_SECRET=${SENDER_A_APP_SECRET:-dev-app-secret-a}
    export SENDER_B_APP_SECRET=${SENDER_B_APP_SECRET:-dev-app-secret-b}
    GATEWAY_SENDERS_ENV=$(printf ',\n        "SENDERS_PATH": "%s",\n        "SENDER_A1_TOKEN": "%s",\n        "SENDER_A2_TOKEN": "%s",\n        "SENDER_B1_TOKEN": "%s",\n        "SENDER_A_APP_SECRET": "%s",\n        "SENDER_B_APP_SECRET": "%s"' \
      "$SENDERS_PATH" "$SENDER_A1_TOKEN" "$SENDER_A2_TOKEN" "$SENDER_B1_TOKEN" "$SENDER_A_APP_SECRET" "$SENDER_B_APP_SECRET")
  elif [ -z "${SIM_SENDERS:-}" ]; then
    echo "[dev] SENDERS_PATH=$SENDERS_PATH: set SIM_SENDERS to the stand-in's file of the same numbers (docs/platform-sim.md) and export the variables it names"
    exit 1
  fi
  "$BIN/warden-admin" senders check "$SENDERS_PATH"
fi

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
start console
wait_health webhook "http://127.0.0.1:$SERVER_HTTP_PORT/health"
wait_health dispatcher http://127.0.0.1:9090/health
wait_health scheduler http://127.0.0.1:9091/health
wait_health console "http://$CONSOLE_HTTP_ADDR/health"

SEVERAL_HINT=""
if [ -n "${SENDERS_PATH:-}" ]; then
  SEVERAL_HINT=$'\nWith several numbers, name the number written to, e.g. "phone_number_id": "104000000000002"\n(a2), and reply from it with the tool parameter "from": "a2".'
fi
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
        "PLATFORM_ACCESS_TOKEN": "$PLATFORM_ACCESS_TOKEN"$(printf "$GATEWAY_SENDERS_ENV")
      }
    }
  }
}

The operator console is at http://$CONSOLE_HTTP_ADDR/. Create the first operator (it prints a
one-time password), then log in with it:
  $BIN/warden-admin operators create admin --role admin

Try the platform stand-in: curl -X POST localhost:8089/sim/inbound -d '{"from":"6281234567890","text":"hi"}'$SEVERAL_HINT
Ctrl-C stops everything.
JSON
wait -n "${pids[@]}" || true
echo "[dev] a process exited; see $LOGS"
