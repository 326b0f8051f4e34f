#!/bin/sh
# Container entrypoint: the first argument names the Warden binary to run, the rest are
# its arguments. Anything else (sh, bash, ...) is run as given, for debugging.
set -eu
case "${1:-webhook}" in
  mcp-gateway|webhook|dispatcher|scheduler|platform-sim|warden-admin|console)
    bin="${1:-webhook}"
    [ "$#" -gt 0 ] && shift
    exec "/usr/local/bin/$bin" "$@"
    ;;
  *)
    exec "$@"
    ;;
esac
