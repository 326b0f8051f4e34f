#!/usr/bin/env bash
# `make bench`: release builds, real services, load from separate processes. Each bench
# prints its figures and writes JSON under target/bench/; a summary ends the run.
# Bounded: about 5 minutes on a 2-core machine once built.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=target/bench
REL=target/release
mkdir -p "$OUT"
say() { printf '\n[bench] %s\n' "$*"; }
free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }

say "building release binaries and benches"
cargo build --release --bins
cargo build --release -p warden-dispatcher --example dispatch_bench

machine="$(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), load $(cut -d' ' -f1 /proc/loadavg) at start"
say "machine: $machine"

say "1/6 platform-sim throughput (sim-bench)"
"$REL/sim-bench" --sends 50000 | tee "$OUT/sim.txt"

say "2/6 compliance core: one check, one accepted send (check-bench)"
POLICIES_PATH=policies/default.yaml "$REL/check-bench" 5000 > "$OUT/check.json"

say "3/6 tool latency over stdio through mcp-gateway (stdio-bench)"
"$REL/stdio-bench" "$REL/mcp-gateway" 2000 1000 > "$OUT/stdio.json"

say "4/6 webhook ingest: single events and 100-event batches (webhook-bench)"
db="bench_wh_$$"
PGPASSWORD=${DB_PASSWORD:-warden} psql -h "${DB_HOST:-127.0.0.1}" -U "${DB_USER:-warden}" -d postgres -qc "CREATE DATABASE $db"
port=$(free_port)
DB_NAME=$db SERVER_HTTP_PORT=$port PLATFORM_APP_SECRET=bench-secret POLICIES_PATH=policies/default.yaml RUST_LOG=warn \
  "$REL/webhook" 2>"$OUT/webhook-server.log" &
wh=$!
for _ in $(seq 1 100); do curl -fs "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break; sleep 0.2; done
"$REL/webhook-bench" --url "http://127.0.0.1:$port" --secret bench-secret --json "$OUT/webhook.json" | tee "$OUT/webhook.txt" || true
kill -TERM $wh; wait $wh || true
PGPASSWORD=${DB_PASSWORD:-warden} psql -h "${DB_HOST:-127.0.0.1}" -U "${DB_USER:-warden}" -d postgres -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)"

say "5/6 dispatcher: stream -> platform-sim throughput, rate-limit accuracy (dispatch_bench)"
"$REL/examples/dispatch_bench" | tee "$OUT/dispatcher.txt"

say "6/6 campaign fan-out: 100,000 recipients checked and enqueued (campaign-bench)"
"$REL/campaign-bench" --recipients 100000 | tee "$OUT/campaign.txt"

say "summary (machine: $machine)"
python3 - "$OUT" <<'PY'
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
def load(name):
    p = out / name
    try:
        text = p.read_text().strip().splitlines()
        return json.loads(text[-1]) if text else None
    except Exception:
        return None
for name in ("check.json", "stdio.json"):
    data = load(name)
    for r in (data or {}).get("results", []):
        if "p50_ms" in r:
            print(f"  {r['name']:<36} p50 {r['p50_ms']:.3f} ms   p99 {r['p99_ms']:.3f} ms")
        else:
            print(f"  {r['name']:<36} p50 {r['p50_us']/1000:.3f} ms   p99 {r['p99_us']/1000:.3f} ms")
for name in ("webhook.json", "dispatcher.json", "campaign.json"):
    p = out / name
    if p.exists():
        print(f"  {name}: {p.read_text().strip()[:600]}")
print(f"  sim, webhook, dispatcher, campaign details: {out}/*.txt")
PY
