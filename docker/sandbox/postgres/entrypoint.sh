#!/bin/sh
set -eu
mkdir -p "$PGDATA" /run/postgresql
chown -R postgres:postgres "$PGDATA" /run/postgresql
chmod 700 "$PGDATA"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  pw="$(mktemp)"
  printf '%s\n' "$POSTGRES_PASSWORD" >"$pw"
  chown postgres "$pw"
  runuser -u postgres -- initdb -D "$PGDATA" -U "$POSTGRES_USER" --pwfile="$pw" \
    --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm -f "$pw"
  echo "host all all 0.0.0.0/0 scram-sha-256" >>"$PGDATA/pg_hba.conf"
  runuser -u postgres -- pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
  if [ "$POSTGRES_DB" != postgres ]; then
    runuser -u postgres -- createdb -U "$POSTGRES_USER" -O "$POSTGRES_USER" "$POSTGRES_DB"
  fi
  runuser -u postgres -- pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
fi
exec runuser -u postgres -- postgres -D "$PGDATA" -c listen_addresses='*'
