#!/bin/sh
set -eu
# Docker's resolv.conf names only its embedded DNS (127.0.0.11); podman's names the
# network's own DNS first, then the host's servers, which know no service names (nginx
# asks its resolvers in turn): the first one only.
if [ -n "${NGINX_ENTRYPOINT_LOCAL_RESOLVERS:-}" ]; then
  NGINX_LOCAL_RESOLVERS="$(awk '/^nameserver/ { a = $2; if (a ~ /:/) a = "[" a "]"; print a; exit }' /etc/resolv.conf)"
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
