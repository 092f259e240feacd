#!/bin/sh
set -eu
if [ -n "${NGINX_ENTRYPOINT_LOCAL_RESOLVERS:-}" ]; then
  NGINX_LOCAL_RESOLVERS="$(awk '/^nameserver/ { a = $2; if (a ~ /:/) a = "[" a "]"; printf "%s ", a }' /etc/resolv.conf)"
  export NGINX_LOCAL_RESOLVERS
fi
# As the official image: substitute only the variables that are set in the environment.
defined="$(env | cut -d= -f1 | sed 's/^/$/' | tr '\n' ' ')"
for template in /etc/nginx/templates/*.template; do
  [ -e "$template" ] || continue
  name="$(basename "$template" .template)"
  envsubst "$defined" <"$template" >"/etc/nginx/conf.d/$name"
done
exec "$@"
