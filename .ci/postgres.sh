#!/usr/bin/env bash
# A throwaway PostgreSQL server for the store tests.
#   bash .ci/postgres.sh start   # prints `export AFP_TEST_POSTGRES_URL=...` (also in .afp/pg.url)
#   bash .ci/postgres.sh stop    # shuts it down and removes its directory
#   bash .ci/postgres.sh url     # prints the URL of the running server (exit 1 if none)
# Idempotent: `start` reuses a running server. Installs Debian's `postgresql` if initdb is missing.
# Runs the server as the `postgres` user when we are root. Messages go to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
STATE=.afp
URL_FILE="$STATE/pg.url"
DIR_FILE="$STATE/pg.dir"
DB=afp_test

say() { echo "postgres.sh: $*" >&2; }

find_bin() {  # the directory holding initdb and pg_ctl (Debian keeps them out of PATH)
  local d
  for d in /usr/lib/postgresql/*/bin; do
    [[ -x "$d/initdb" && -x "$d/pg_ctl" ]] && { echo "$d"; return 0; }
  done
  if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
    dirname "$(readlink -f "$(command -v initdb)")"; return 0
  fi
  return 1
}

install_pg() {
  say "installing Debian's postgresql package"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq postgresql >&2
}

as_pg() {  # run a command as the server's owner
  if [[ "$(id -u)" == 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

running() {  # true when the recorded server answers
  [[ -f "$URL_FILE" && -f "$DIR_FILE" ]] || return 1
  local bin port; bin="$(find_bin)" || return 1
  port="$(sed -E 's|.*:([0-9]+)/.*|\1|' "$URL_FILE")"
  "$bin/pg_isready" -q -h 127.0.0.1 -p "$port" -t 5
}

start() {
  if running; then
    say "already running"
    echo "export AFP_TEST_POSTGRES_URL=$(cat "$URL_FILE")"
    return 0
  fi
  [[ -f "$DIR_FILE" ]] && stop  # a server recorded but gone (a reboot): clean up first
  local bin dir port url
  bin="$(find_bin)" || { install_pg; bin="$(find_bin)"; } || { say "no initdb after install"; exit 1; }
  if [[ "$(id -u)" == 0 ]] && ! id postgres >/dev/null 2>&1; then
    say "no \`postgres\` user; install the postgresql package"; exit 1
  fi
  mkdir -p "$STATE"
  dir="$(mktemp -d "${AFP_PG_TMP:-/tmp}/afp-pg.XXXXXX")"  # not $TMPDIR: `postgres` must reach it
  chmod 755 "$dir"
  [[ "$(id -u)" == 0 ]] && chown postgres: "$dir"
  echo "$dir" > "$DIR_FILE"
  as_pg "$bin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --no-sync >"$dir/initdb.log" 2>&1 \
    || { cat "$dir/initdb.log" >&2; exit 1; }
  port="$(free_port)"
  as_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=100" \
    start >/dev/null || { cat "$dir/server.log" >&2; exit 1; }
  as_pg "$bin/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -qAt \
    -c "CREATE DATABASE $DB" >/dev/null
  url="postgresql://postgres@127.0.0.1:$port/$DB"
  echo "$url" > "$URL_FILE"
  say "started on port $port (data in $dir)"
  echo "export AFP_TEST_POSTGRES_URL=$url"
}

stop() {
  if [[ -f "$DIR_FILE" ]]; then
    local dir bin; dir="$(cat "$DIR_FILE")"
    if bin="$(find_bin)" && [[ -d "$dir/data" ]]; then
      as_pg "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
    fi
    case "$dir" in */afp-pg.*) rm -rf "$dir" ;; esac
    say "stopped"
  fi
  rm -f "$URL_FILE" "$DIR_FILE"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  url) running && cat "$URL_FILE" ;;
  *) echo "usage: $0 start|stop|url" >&2; exit 2 ;;
esac
