#!/usr/bin/env bash
# The console's browser tests (libs/warden-console/tests/browser) drive headless Chromium
# through chromedriver. Install Debian's `chromium` and `chromium-driver` when either is
# missing (apt-get; as root, or with sudo when it is there). Prints the two versions.
set -euo pipefail

have() { command -v "$1" >/dev/null 2>&1; }

if ! have chromium || ! have chromedriver; then
  echo "[browser-deps] installing chromium and chromium-driver (apt-get)"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    have sudo || { echo "[browser-deps] not root and no sudo: install chromium and chromium-driver yourself"; exit 1; }
    SUDO=sudo
  fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null
fi
chromium --version
chromedriver --version
