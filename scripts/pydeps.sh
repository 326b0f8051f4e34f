#!/usr/bin/env bash
# The Python test dependencies (the official MCP SDK the end-to-end tests drive mcp-gateway
# with), installed into venvs under target/: target/pyenv holds SDK 2.x (protocol
# 2026-07-28), target/pyenv-legacy SDK 1.x (2025-11-25, sessions). `make test` runs this
# before the tests; `cargo test` never installs anything and fails naming this script when
# one is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET=${CARGO_TARGET_DIR:-target}
install() { # venv, requirement, the version prefix `mcp` must report
  local venv=$1 req=$2 want=$3
  if "$venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(not m.version('mcp').startswith('$want'))" 2>/dev/null; then
    return 0
  fi
  echo "[pydeps] installing $req into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "$req"
}
install "$TARGET/pyenv" "mcp==2.3.0" "2."
install "$TARGET/pyenv-legacy" "mcp>=1.20,<2" "1."
