#!/bin/sh
# As the official image's entrypoint: a redis-server started without a config file gets
# --protected-mode no (else it refuses every client that is not on loopback).
set -eu
if [ "${1:-}" = redis-server ]; then
  shift
  set -- redis-server "$@" --protected-mode no
fi
exec "$@"
