#!/usr/bin/env bash
# Starts a throwaway PostgreSQL cluster on 127.0.0.1:${PGPORT:-55432} owned by the postgres
# user, with password auth for user rltracker. Prints the admin URL the tests use.
set -euo pipefail
PGPORT=${PGPORT:-55432}
PGDATA=${PGDATA:-/tmp/rltracker-pg}
BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -x "$BIN/initdb" ] || { echo "PostgreSQL binaries not found" >&2; exit 1; }
if ! "$BIN/pg_isready" -h 127.0.0.1 -p "$PGPORT" -q; then
  rm -rf "$PGDATA"
  mkdir -p "$PGDATA"
  chown postgres:postgres "$PGDATA"
  pwfile=$(mktemp); echo rltracker > "$pwfile"; chmod 644 "$pwfile"
  su postgres -c "$BIN/initdb -D $PGDATA -U rltracker --pwfile=$pwfile -A scram-sha-256 >/dev/null"
  rm -f "$pwfile"
  su postgres -c "$BIN/pg_ctl -D $PGDATA -l $PGDATA/server.log -w -o '-p $PGPORT -k /tmp -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300' start >/dev/null"
fi
echo "postgresql+asyncpg://rltracker:rltracker@127.0.0.1:$PGPORT/postgres"
