#!/usr/bin/env bash
# Runs a command next to a private, throw-away PostgreSQL: own data directory under target/, a free port,
# stopped and removed afterwards even when the command fails. The command sees RERUN_GATE_TEST_PG_URL.
set -euo pipefail
cd "$(dirname "$0")/.."

bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -x "$bindir/initdb" ] || { echo "PostgreSQL server binaries not found (run: make deps)" >&2; exit 1; }

root="$PWD/target/pg-$$"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
as_pg=()
if [ "$(id -u)" = 0 ]; then as_pg=(runuser -u postgres --); fi

stop() {
    "${as_pg[@]}" "$bindir/pg_ctl" -D "$root/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$root"
}
trap stop EXIT INT TERM

mkdir -p "$root/sock"
[ "$(id -u)" = 0 ] && chown -R postgres:postgres "$root"
"${as_pg[@]}" "$bindir/initdb" -D "$root/data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >"$root/initdb.log" 2>&1 \
    || { cat "$root/initdb.log" >&2; exit 1; }
"${as_pg[@]}" "$bindir/pg_ctl" -D "$root/data" -l "$root/server.log" -w \
    -o "-p $port -k $root/sock -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=300" start >/dev/null
echo "private PostgreSQL on 127.0.0.1:$port (data in $root)"

export RERUN_GATE_TEST_PG_URL="postgres://postgres@127.0.0.1:$port/postgres"
# When the command fails, what the server said and the disk's room are the first things to know.
"$@" || {
    rc=$?
    echo "--- the command failed ($rc); the end of the PostgreSQL log, then the disk:" >&2
    tail -n 40 "$root/server.log" >&2 || true
    df -h "$root" >&2 || true
    exit $rc
}
