#!/usr/bin/env bash
# The Python test dependency (the official MCP SDK the end-to-end tests drive mcp-gateway
# with), installed into a venv at target/pyenv. `make test` runs this before the tests;
# `cargo test` never installs anything and fails naming this script when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${CARGO_TARGET_DIR:-target}/pyenv
MCP_SDK=mcp==2.3.0
if python3 -c 'import mcp' 2>/dev/null; then
  exit 0
fi
if ! "$VENV/bin/python" -c 'import mcp' 2>/dev/null; then
  echo "[pydeps] installing $MCP_SDK into $VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "$MCP_SDK"
fi
