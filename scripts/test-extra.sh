#!/usr/bin/env bash
# Packaging checks, offline (scripts/test.sh runs this after the Rust tests):
#   docker-compose.yml  `docker-compose config -q` (Debian's docker-compose 1.29, no engine needed)
#   k8s/                kubernetes-validate --strict against Kubernetes 1.30 and 1.37 schemas
#   helm/warden         structure, values.yaml against values.schema.json, template blocks
#   all of them         yamllint, and deploy/check_deploy.py (what every Deployment must carry,
#                       the policy file copies, metric names vs the Grafana dashboard, Dockerfile)
# Not checked here (no engine, no helm binary): `docker build`, `helm lint`/`helm template`.
# Tools: docker-compose is installed with apt-get when missing; the Python tools go into a
# venv at target/pyenv-deploy. Fails on any problem.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

say() { printf '[test-extra] %s\n' "$*"; }
fail() { printf '[test-extra] FAILED: %s\n' "$*" >&2; exit 1; }

# ------------------------------------------------------------------------------ tools
if ! command -v docker-compose >/dev/null 2>&1; then
  say "docker-compose missing: installing Debian's package"
  if [ "$(id -u)" = 0 ]; then SUDO=; elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO=sudo; else SUDO=none; fi
  if [ "$SUDO" != none ] && command -v apt-get >/dev/null 2>&1; then
    $SUDO apt-get update -qq >/dev/null 2>&1 || true
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends docker-compose >/dev/null 2>&1 || true
  fi
fi
HAVE_COMPOSE=0
if command -v docker-compose >/dev/null 2>&1; then
  HAVE_COMPOSE=1
else
  say "SKIPPED docker-compose validation: docker-compose is not installed and cannot be (needs apt-get as root or sudo)"
fi

VENV=$ROOT/target/pyenv-deploy
PY=$VENV/bin/python
PYDEPS=(kubernetes-validate==1.37.0 jsonschema==4.26.0 yamllint==1.38.0 PyYAML==6.0.3)
if ! "$PY" -c 'import kubernetes_validate, jsonschema, yamllint, yaml' >/dev/null 2>&1; then
  say "installing ${PYDEPS[*]} into target/pyenv-deploy"
  rm -rf "$VENV"
  python3 -m venv "$VENV" || fail "python3 -m venv"
  "$VENV/bin/pip" install -q --disable-pip-version-check "${PYDEPS[@]}" || fail "pip install ${PYDEPS[*]}"
fi

# --------------------------------------------------------------------- docker-compose
if [ "$HAVE_COMPOSE" = 1 ]; then
  # Defaults only: an operator's .env must not make the check pass or fail.
  out=$(env -i PATH="$PATH" HOME="${HOME:-/tmp}" docker-compose --project-directory "$ROOT" -f "$ROOT/docker-compose.yml" config -q 2>&1) \
    || { printf '%s\n' "$out" >&2; fail "docker-compose config -q"; }
  [ -z "$out" ] || { printf '%s\n' "$out" >&2; fail "docker-compose config printed warnings"; }
  services=$(docker-compose -f docker-compose.yml config --services | sort | tr '\n' ' ')
  say "docker-compose.yml valid ($(docker-compose version --short)): $services"
fi

# ----------------------------------------------------------------------------- k8s/
manifests=(k8s/*.yaml k8s/examples/*.yaml k8s/optional/*.yaml)
manifests=("${manifests[@]/k8s\/kustomization.yaml/}")
for kv in 1.30.0 1.37.0; do
  out=$("$VENV/bin/kubernetes-validate" --strict -k "$kv" ${manifests[*]} 2>&1) || { printf '%s\n' "$out" >&2; fail "kubernetes-validate --strict -k $kv"; }
  # An unknown kind is only a warning to kubernetes-validate: here it is an error.
  if grep -q '^WARN' <<<"$out"; then printf '%s\n' "$out" >&2; fail "kubernetes-validate warned (-k $kv)"; fi
  n=$(grep -c ' passed for resource ' <<<"$out")
  say "k8s: $n resources valid against Kubernetes $kv (strict)"
done

# --------------------------------------------------------------------- yamllint, checks
yamls=(docker-compose.yml k8s helm/warden/Chart.yaml helm/warden/values.yaml deploy)
"$VENV/bin/yamllint" --strict -c deploy/yamllint.yaml -f parsable "${yamls[@]}" || fail "yamllint"
say "yamllint: docker-compose.yml, k8s/, deploy/, helm/warden/{Chart,values}.yaml clean (templates are Go templates: not linted)"

"$PY" deploy/grafana/dashboard.py --check || fail "Grafana dashboard copies are stale"
say "Grafana dashboard: k8s/grafana-dashboard.json and the chart's copy match deploy/grafana/dashboard.py"

sh -n deploy/entrypoint.sh || fail "deploy/entrypoint.sh syntax"
"$PY" deploy/check_deploy.py || fail "deploy/check_deploy.py"

say "not checked here: docker build (no engine), helm lint / helm template (no helm binary)"
say "all packaging checks passed"
