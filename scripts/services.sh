#!/usr/bin/env bash
# Make sure Postgres, Redis and NATS (with JetStream) are reachable on this machine:
# start each one that is down, install its Debian package when it is missing, and create
# the `warden` role and database the defaults point at. Safe to run again and again.
set -euo pipefail

PG_HOST=${DB_HOST:-127.0.0.1}
PG_PORT=${DB_PORT:-5432}
DB_USER=${DB_USER:-warden}
DB_PASSWORD=${DB_PASSWORD:-warden}
DB_NAME=${DB_NAME:-warden}
REDIS_ADDR=${REDIS_ADDR:-127.0.0.1:6379}
NATS_PORT=4222
STATE_DIR=${WARDEN_STATE_DIR:-$(pwd)/.dev}

say() { printf '[services] %s\n' "$*" >&2; }
die() { printf '[services] error: %s\n' "$*" >&2; exit 1; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else die "need root to run: $*"; fi
}

apt_install() {
  say "installing Debian package(s): $*"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >/dev/null 2>&1 \
    || { as_root apt-get update -q >/dev/null 2>&1; as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >/dev/null; } \
    || die "could not install $*"
}

port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

wait_port() { # host port name
  for _ in $(seq 1 100); do port_open "$1" "$2" && return 0; sleep 0.2; done
  die "$3 did not start listening on $1:$2"
}

# ---------------------------------------------------------------- Postgres
ensure_postgres() {
  if ! port_open "$PG_HOST" "$PG_PORT"; then
    [ "$PG_HOST" = 127.0.0.1 ] || [ "$PG_HOST" = localhost ] || die "Postgres at $PG_HOST:$PG_PORT is unreachable (not local: start it yourself)"
    command -v pg_ctlcluster >/dev/null || apt_install postgresql postgresql-client
    local version
    version=$(ls /etc/postgresql 2>/dev/null | sort -V | tail -n1)
    [ -n "$version" ] || die "no Postgres cluster found under /etc/postgresql"
    say "starting Postgres $version"
    as_root pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
    wait_port "$PG_HOST" "$PG_PORT" Postgres
  fi
  command -v psql >/dev/null || apt_install postgresql-client
  # Create the role and database as the superuser (peer auth over the socket on a stock
  # install; TCP for machines with trust auth).
  local sql="DO \$\$ BEGIN
      IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '${DB_USER}') THEN
        CREATE ROLE \"${DB_USER}\" LOGIN PASSWORD '${DB_PASSWORD}' CREATEDB;
      ELSE
        ALTER ROLE \"${DB_USER}\" LOGIN PASSWORD '${DB_PASSWORD}' CREATEDB;
      END IF;
    END \$\$;"
  if PGPASSWORD=$DB_PASSWORD psql -h "$PG_HOST" -p "$PG_PORT" -U "$DB_USER" -d postgres -Atqc 'select 1' >/dev/null 2>&1 \
     && PGPASSWORD=$DB_PASSWORD psql -h "$PG_HOST" -p "$PG_PORT" -U "$DB_USER" -d postgres -Atqc "select rolcreatedb from pg_roles where rolname = current_user" 2>/dev/null | grep -q t; then
    :
  else
    superuser_psql -c "$sql" >/dev/null || die "could not create the ${DB_USER} role"
  fi
  if ! PGPASSWORD=$DB_PASSWORD psql -h "$PG_HOST" -p "$PG_PORT" -U "$DB_USER" -d postgres -Atqc \
      "select 1 from pg_database where datname = '${DB_NAME}'" | grep -q 1; then
    PGPASSWORD=$DB_PASSWORD psql -h "$PG_HOST" -p "$PG_PORT" -U "$DB_USER" -d postgres -qc "CREATE DATABASE \"${DB_NAME}\"" >/dev/null \
      || die "could not create database ${DB_NAME}"
  fi
  PGPASSWORD=$DB_PASSWORD psql -h "$PG_HOST" -p "$PG_PORT" -U "$DB_USER" -d "$DB_NAME" -Atqc 'select 1' >/dev/null \
    || die "cannot log in to Postgres as ${DB_USER} with its password (check pg_hba.conf allows md5/scram on $PG_HOST)"
  say "Postgres ok ($PG_HOST:$PG_PORT, role ${DB_USER}, database ${DB_NAME})"
}

superuser_psql() {
  if [ "$(id -u)" = 0 ] && id postgres >/dev/null 2>&1; then
    runuser -u postgres -- psql -p "$PG_PORT" -v ON_ERROR_STOP=1 -d postgres "$@" 2>/dev/null && return 0
  elif command -v sudo >/dev/null && id postgres >/dev/null 2>&1; then
    sudo -n -u postgres psql -p "$PG_PORT" -v ON_ERROR_STOP=1 -d postgres "$@" 2>/dev/null && return 0
  fi
  psql -h "$PG_HOST" -p "$PG_PORT" -U postgres -v ON_ERROR_STOP=1 -d postgres "$@"
}

# ---------------------------------------------------------------- Redis
ensure_redis() {
  local host=${REDIS_ADDR%:*} port=${REDIS_ADDR##*:}
  if ! port_open "$host" "$port"; then
    [ "$host" = 127.0.0.1 ] || [ "$host" = localhost ] || die "Redis at $REDIS_ADDR is unreachable (not local: start it yourself)"
    command -v redis-server >/dev/null || apt_install redis-server
    say "starting Redis on $port"
    redis-server --daemonize yes --bind 127.0.0.1 --port "$port" --save "" --appendonly no >/dev/null
    wait_port "$host" "$port" Redis
  fi
  say "Redis ok ($REDIS_ADDR)"
}

# ---------------------------------------------------------------- NATS
nats_info() { # prints the server's INFO line
  exec 3<>"/dev/tcp/127.0.0.1/$NATS_PORT" || return 1
  local line; IFS= read -r -t 2 line <&3 || true; exec 3>&-
  printf '%s' "$line"
}

ensure_nats() {
  if ! port_open 127.0.0.1 "$NATS_PORT"; then
    command -v nats-server >/dev/null || apt_install nats-server
    mkdir -p "$STATE_DIR/nats"
    say "starting nats-server with JetStream on $NATS_PORT (store $STATE_DIR/nats)"
    setsid nohup nats-server -a 127.0.0.1 -p "$NATS_PORT" -js -sd "$STATE_DIR/nats" >"$STATE_DIR/nats-server.log" 2>&1 < /dev/null &
    wait_port 127.0.0.1 "$NATS_PORT" nats-server
  fi
  nats_info | grep -q '"jetstream":true' || die "NATS on $NATS_PORT runs without JetStream (restart it with -js)"
  say "NATS ok (nats://127.0.0.1:$NATS_PORT, JetStream on)"
}

ensure_postgres
ensure_redis
ensure_nats
