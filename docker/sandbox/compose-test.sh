#!/usr/bin/env bash
# The container stack as production runs it, on a machine with no container registry
# (issue 34, docs/adr/0024-container-stack.md): builds docker/Dockerfile on stand-in base
# images made here, runs docker/docker-compose.yml with podman-compose, every container
# nested in this job's own cgroup, and checks the stack through nginx. Removes everything
# it started (containers, volumes, network, cgroup directories), also on failure; keeps
# the base images and the rootfs tarball as a cache for the next run.
#   make compose-test            (root, podman + runc + mmdebstrap, podman-compose)
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT="$PWD"
SB="$ROOT/docker/sandbox"
CACHE="${SANDBOX_CACHE:-/var/cache/statuspage-sandbox}"
PROJECT=spsandbox
export CONTAINERS_CONF="$SB/containers.conf"
PODMAN_COMPOSE="${PODMAN_COMPOSE:-$(command -v podman-compose || echo "$ROOT/.venv/bin/podman-compose")}"
BASE=localhost/statuspage-sandbox/debian:bookworm
APP=localhost/statuspage:latest
T0=$(date +%s.%N)

step() { printf '\n=== [%5.1fs] %s\n' "$(echo "$(date +%s.%N) - $T0" | bc)" "$*"; }
fail() { echo "FAIL: $*" >&2; exit 1; }
since() { echo "$(date +%s.%N) - $1" | bc; }
cname() { echo "${PROJECT}_$1_1"; }

# --- The job's cgroup: every container (and every build step) goes below it -------------
job_cg="$(awk -F: '$2 == "memory" { print $3 }' /proc/self/cgroup)"
[ -n "$job_cg" ] || job_cg="$(awk -F: '$1 == "0" { print $3 }' /proc/self/cgroup)"
[ -n "$job_cg" ] || fail "cannot read this job's cgroup from /proc/self/cgroup"
CG_PARENT="${job_cg%/}/statuspage-sandbox-$$"
compose() {
  "$PODMAN_COMPOSE" --in-pod false -p "$PROJECT" --podman-run-args="--cgroup-parent=$CG_PARENT" \
    -f docker/docker-compose.yml -f docker/sandbox/compose.sandbox.yml "$@"
}

# --- Cleanup, also on failure -------------------------------------------------------------
ENV_FILE="$ROOT/docker/.env"
ENV_BACKUP=""
cleanup() {
  local status=$?
  set +e
  if [ "$status" -ne 0 ]; then
    echo "--- logs of the failed run (last lines of each container)"
    for c in $(podman ps -a --filter "label=io.podman.compose.project=$PROJECT" --format '{{.Names}}'); do
      echo "----- $c"; podman logs --tail 25 "$c" 2>&1
    done
  fi
  compose down -v -t 2 >/dev/null 2>&1
  podman rm -f -t 0 sb-ipgrab >/dev/null 2>&1
  podman ps -aq --filter "label=io.podman.compose.project=$PROJECT" | xargs -r podman rm -f -t 0 >/dev/null 2>&1
  podman volume ls -q --filter "label=io.podman.compose.project=$PROJECT" | xargs -r podman volume rm -f >/dev/null 2>&1
  podman network ls -q --filter "label=io.podman.compose.project=$PROJECT" | xargs -r podman network rm -f >/dev/null 2>&1
  # podman made the parent under every controller; leave none behind.
  for dir in /sys/fs/cgroup/*/"${CG_PARENT#/}" "/sys/fs/cgroup/${CG_PARENT#/}"; do
    [ -d "$dir" ] && find "$dir" -depth -type d -exec rmdir {} + 2>/dev/null
  done
  rm -f "$ENV_FILE"
  [ -n "$ENV_BACKUP" ] && mv "$ENV_BACKUP" "$ENV_FILE"
  left="$(find /sys/fs/cgroup -maxdepth 6 -type d -name "statuspage-sandbox-$$" 2>/dev/null)"
  [ -z "$left" ] || { echo "cgroup directories left: $left"; status=1; }
  step "cleaned up (exit $status)"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A run killed before its cleanup: its containers go now.
podman ps -aq --filter "label=io.podman.compose.project=$PROJECT" | xargs -r podman rm -f -t 0 >/dev/null 2>&1 || true
podman volume ls -q --filter "label=io.podman.compose.project=$PROJECT" | xargs -r podman volume rm -f >/dev/null 2>&1 || true

# --- Images ---------------------------------------------------------------------------------
step "base image (mmdebstrap minbase, cached in $CACHE)"
mkdir -p "$CACHE"
if ! podman image exists "$BASE"; then
  if [ ! -s "$CACHE/bookworm-minbase.tar" ]; then
    mmdebstrap --quiet --format=tar --variant=minbase --include=ca-certificates bookworm "$CACHE/bookworm-minbase.tar.part"
    mv "$CACHE/bookworm-minbase.tar.part" "$CACHE/bookworm-minbase.tar"
  fi
  podman import -q "$CACHE/bookworm-minbase.tar" "$BASE" >/dev/null
fi

build() { podman build -q --cgroup-parent="$CG_PARENT" "$@" >/dev/null; }
step "stand-in images: python:3.11-slim, postgres, redis, nginx, smtp sink"
ctx="$(mktemp -d)"
cp "$SB/python/Containerfile" "$ctx/"
# pip inside the builds verifies TLS with the host's CA bundle when it has one.
if [ -s /etc/ssl/certs/ca-certificates.crt ]; then
  cp /etc/ssl/certs/ca-certificates.crt "$ctx/"
else
  podman run --rm --cgroup-parent="$CG_PARENT" "$BASE" cat /etc/ssl/certs/ca-certificates.crt >"$ctx/ca-certificates.crt"
fi
build -t docker.io/library/python:3.11-slim "$ctx"
rm -rf "$ctx"
# The rest side by side: on a fresh machine they mostly wait on the archive.
pids=()
build -t docker.io/library/postgres:16-alpine "$SB/postgres" & pids+=($!)
build -t docker.io/library/redis:7-alpine "$SB/redis" & pids+=($!)
build -t docker.io/library/nginx:1.27-alpine "$SB/nginx" & pids+=($!)
build -t localhost/statuspage-sandbox/smtp:latest "$SB/smtp" & pids+=($!)
for pid in "${pids[@]}"; do wait "$pid" || fail "a stand-in image did not build"; done

# --- Settings: docker/.env as an operator writes it, from .env.example ---------------------
if [ -e "$ENV_FILE" ]; then
  ENV_BACKUP="$ENV_FILE.sandbox-backup-$$"
  mv "$ENV_FILE" "$ENV_BACKUP"
fi
HTTP_PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
export HTTP_PORT
SECRET="sandbox-$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
overrides="SECRET_KEY=$SECRET
ALLOWED_HOSTS=localhost,127.0.0.1
SITE_URL=http://localhost:$HTTP_PORT
CSRF_TRUSTED_ORIGINS=http://localhost:$HTTP_PORT
EMAIL_HOST=smtp
EMAIL_PORT=1025
EMAIL_USE_TLS=0
GUNICORN_WORKERS=2
OUTBOX_LEASE_SECONDS=20
OUTBOX_SWEEP_INTERVAL=5
OUTBOX_SWEEP_GRACE_SECONDS=1
OUTBOX_KICK_LOST_SECONDS=5"
{
  grep -v -E "^($(echo "$overrides" | cut -d= -f1 | paste -sd'|'))=" docker/.env.example
  echo "$overrides"
} >"$ENV_FILE"
# The shipped example serves plain HTTP: nothing may redirect to an https nobody serves.
for name in SECURE_SSL_REDIRECT BEHIND_PROXY; do
  grep -q "^$name=0$" docker/.env.example || fail "docker/.env.example must ship $name=0 (plain HTTP)"
done

step "app image (docker/Dockerfile, unchanged)"
b0=$(date +%s.%N)
previous="$(podman image inspect -f '{{.Id}}' "$APP" 2>/dev/null || true)"
podman build -q --cgroup-parent="$CG_PARENT" -f docker/Dockerfile -t "$APP" . >/dev/null
# The image this replaces would pile up untagged, one per run.
[ -z "$previous" ] || [ "$previous" = "$(podman image inspect -f '{{.Id}}' "$APP")" ] ||
  podman rmi "$previous" >/dev/null 2>&1 || true
BUILD_SECONDS="$(since "$b0")"
IMAGE_MB="$(podman image inspect -f '{{.Size}}' "$APP" | awk '{ printf "%d", $1 / 1000000 }')"
echo "built in ${BUILD_SECONDS}s, ${IMAGE_MB} MB"

run_app() { podman run --rm --cgroup-parent="$CG_PARENT" "$@"; }
step "check: docker/.env (and its SECRET_KEY) is not in the image"
run_app "$APP" sh -c "test ! -e /app/docker/.env && test ! -e /app/.env && ! grep -rqs '$SECRET' /app" ||
  fail "the deployment's .env is in the image"
git check-ignore -q docker/.env || fail "docker/.env is not in .gitignore"

step "check: one Python version (image, CI, mypy)"
image_py="$(run_app "$APP" python -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
ci_py="$(.venv/bin/python -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
mypy_py="$(sed -n 's/^python_version = "\(.*\)"/\1/p' pyproject.toml)"
echo "image $image_py, CI $ci_py, mypy $mypy_py"
[ "$image_py" = "$ci_py" ] && [ "$ci_py" = "$mypy_py" ] || fail "Python versions differ"

step "check: gunicorn workers follow the container's CPU limit, not the host's CPUs"
workers="$(run_app --cpus=1 "$APP" python -c \
  'import runpy; print(runpy.run_path("docker/gunicorn.conf.py")["workers"])' 2>/dev/null)"
echo "--cpus=1 on a host with $(nproc) CPUs: $workers workers"
[ "$workers" = 2 ] || fail "expected 2 workers under a one-CPU limit, got $workers"

# --- The stack, in stages -------------------------------------------------------------------
# podman-compose ignores service_healthy and will not start services linked to the
# one-shot migrate: each stage waits for the one before itself.
step "stage 1: data services (postgres, redis, redis-pages) and the SMTP sink"
u0=$(date +%s.%N)
compose up -d --no-deps postgres redis redis-pages smtp >/dev/null
grep -q -- "-h 127.0.0.1" <<<"$(podman inspect -f '{{join .Config.Healthcheck.Test " "}}' "$(cname postgres)")" ||
  fail "the PostgreSQL healthcheck does not go over TCP"
for _ in $(seq 1 60); do podman healthcheck run "$(cname postgres)" >/dev/null 2>&1 && break; sleep 1; done
podman healthcheck run "$(cname postgres)" >/dev/null || fail "PostgreSQL never became healthy"
echo "postgres healthy over TCP after $(since "$u0")s"

step "stage 2: migrate, then prerender"
compose up -d --no-deps migrate >/dev/null
[ "$(podman wait "$(cname migrate)")" = 0 ] || fail "migrate failed"
compose up -d --no-deps prerender >/dev/null
[ "$(podman wait "$(cname prerender)")" = 0 ] || fail "prerender failed"

step "stage 3: web, the three workers, beat, nginx"
w0=$(date +%s.%N)
compose up -d --no-deps web worker-email worker-webhooks worker-periodic beat nginx >/dev/null
URL="http://127.0.0.1:$HTTP_PORT"
for _ in $(seq 1 120); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' "$URL/")" = 200 ] && break
  sleep 0.5
done
[ "$(curl -s -o /dev/null -w '%{http_code}' "$URL/")" = 200 ] || fail "/ through nginx is not 200"
FIRST_200="$(since "$w0")"
# As the compose file's start_period allows: the first probe loads the migration graph.
for _ in $(seq 1 15); do podman healthcheck run "$(cname web)" >/dev/null 2>&1 && break; sleep 2; done
podman healthcheck run "$(cname web)" >/dev/null || {
  podman exec "$(cname web)" python -c "import urllib.request
try:
    urllib.request.urlopen('http://127.0.0.1:8000/readyz', timeout=10)
except Exception as exc:
    print(exc, getattr(exc, 'read', lambda: b'')())"
  fail "web's healthcheck (/readyz) fails"
}
[ "$(curl -s -o /dev/null -w '%{http_code}' "$URL/healthz")" = 200 ] || fail "/healthz is not 200"
echo "first 200 through nginx ${FIRST_200}s after web started, $(since "$u0")s after the first up"

step "check: every container nested in this job's cgroup ($job_cg)"
for c in $(podman ps --filter "label=io.podman.compose.project=$PROJECT" --format '{{.Names}}'); do
  pid="$(podman inspect -f '{{.State.Pid}}' "$c")"
  cg="$(awk -F: '$2 == "memory" || $1 == "0" { print $3; exit }' "/proc/$pid/cgroup")"
  case "$cg" in
    "$CG_PARENT"/*) ;;
    *) fail "$c runs in $cg, outside $CG_PARENT" ;;
  esac
done
echo "all in $CG_PARENT"

api_key="$(podman exec "$(cname web)" python manage.py shell -c "
from django.contrib.auth import get_user_model
from api.services import api_key_create
user, _ = get_user_model().objects.get_or_create(
    username='sandbox', defaults={'is_staff': True, 'is_superuser': True, 'email': 'sandbox@example.com'})
print(api_key_create(user=user, name='compose test', scope='write').raw)" | tail -n1)"
[ -n "$api_key" ] || fail "no API key"
api() { curl -s -H "Authorization: Bearer $api_key" -H 'Content-Type: application/json' "$@"; }
mails() { podman exec "$(cname smtp)" cat /mail/log.jsonl; }
# (`cmd | grep -q` would fail under pipefail when grep stops early: grep <<<"$(cmd)".)

step "check: an API write is 201 and a worker delivers its email"
m0=$(date +%s.%N)
code="$(api -o /dev/null -w '%{http_code}' -X POST "$URL/api/v1/subscribers/" -d '{"email": "first@example.com"}')"
[ "$code" = 201 ] || fail "POST /api/v1/subscribers/ answered $code"
for _ in $(seq 1 60); do grep -q '"first@example.com"' <<<"$(mails)" && break; sleep 0.5; done
grep -q '"first@example.com"' <<<"$(mails)" || fail "the confirmation email never reached the SMTP sink"
echo "201, and the email was in the sink $(since "$m0")s later"

step "check: beat's schedule ticks and the periodic worker runs it"
for _ in $(seq 1 40); do
  grep -q "Sending due task" <<<"$(podman logs "$(cname beat)" 2>&1)" &&
    grep -q "succeeded in" <<<"$(podman logs "$(cname worker-periodic)" 2>&1)" && break
  sleep 0.5
done
grep -q "Sending due task" <<<"$(podman logs "$(cname beat)" 2>&1)" || fail "beat sent no task"
grep -q "succeeded in" <<<"$(podman logs "$(cname worker-periodic)" 2>&1)" || fail "no periodic task ran"
echo "$(podman logs "$(cname beat)" 2>&1 | grep -c 'Sending due task') tasks sent by beat so far"

step "check: web down -> nginx serves the snapshot with its visible notice"
curl -s -o /dev/null "$URL/"   # the snapshot is written by a render
podman exec "$(cname nginx)" test -s /app/var/snapshots/index.html || fail "no snapshot on the volume"
old_ip="$(podman inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$(cname web)")"
nginx_pid="$(podman inspect -f '{{.State.Pid}}' "$(cname nginx)")"
podman rm -f -t 0 "$(cname web)" >/dev/null
headers="$(mktemp)"
# Not the URL just fetched: nginx's one-second micro-cache answers that one from its own
# stale entry (proxy_cache_use_stale error) while it has it; a URL it holds nothing for
# (a visitor's query string) goes to the snapshot, as every URL does once that entry ages out.
[ "$(curl -s -o /dev/null -w '%{http_code}' "$URL/")" = 200 ] || fail "/ is not 200 while web is down"
body="$(curl -s -D "$headers" "$URL/?utm_source=compose-test")"
grep -qi '^X-Status-Snapshot: stale' "$headers" || fail "no stale snapshot while web is down: $(head -1 "$headers")"
grep -q "This page may be out of date." <<<"$body" || fail "the snapshot has no visible notice"
grep -q "<!--snapshot-notice-->" <<<"$body" && fail "the snapshot still holds the notice placeholder"
echo "$(head -1 "$headers" | tr -d '\r'), X-Status-Snapshot: stale, notice shown"

step "check: web recreated with a new address -> nginx follows without a reload"
network="$(podman network ls -q --filter "label=io.podman.compose.project=$PROJECT" | head -n1)"
# Something takes the old address, so the new web container cannot get it back.
podman run -d --rm --name sb-ipgrab --cgroup-parent="$CG_PARENT" --network "$network" --ip "$old_ip" \
  "$BASE" sleep 300 >/dev/null
compose up -d --no-deps web >/dev/null
new_ip="$(podman inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$(cname web)")"
[ "$new_ip" != "$old_ip" ] || fail "web came back on its old address $old_ip"
r0=$(date +%s.%N)
for _ in $(seq 1 120); do
  curl -s -D "$headers" -o /dev/null "$URL/api/v1/status/"
  grep -q " 200" <<<"$(head -1 "$headers")" && break
  sleep 0.5
done
grep -q " 200" <<<"$(head -1 "$headers")" || fail "nginx does not reach web at its new address"
curl -s -D "$headers" -o /dev/null "$URL/"
grep -qi '^X-Status-Snapshot' "$headers" && fail "nginx still serves the snapshot"
[ "$(podman inspect -f '{{.State.Pid}}' "$(cname nginx)")" = "$nginx_pid" ] || fail "nginx was restarted"
echo "web $old_ip -> $new_ip; nginx (same process) answered 200 from it $(since "$r0")s later"
rm -f "$headers"
podman rm -f -t 0 sb-ipgrab >/dev/null

step "check: a worker killed in the middle of a delivery batch (400 subscribers)"
podman exec "$(cname web)" python manage.py shell -c "
from subscriptions.services import subscriber_staff_create
for n in range(400):
    subscriber_staff_create(actor=None, email=f'batch{n:03d}@example.com', confirmed=True)
print('400 confirmed subscribers')"
before="$(mails | wc -l)"
code="$(api -o /dev/null -w '%{http_code}' -X POST "$URL/api/v1/incidents/" \
  -d '{"title": "Compose test: delivery batch", "body": "Checking the delivery of a batch."}')"
[ "$code" = 201 ] || fail "POST /api/v1/incidents/ answered $code"
killed_at=""
for _ in $(seq 1 600); do
  got=$(($(mails | wc -l) - before))
  if [ "$got" -ge 60 ]; then
    podman kill -s KILL "$(cname worker-email)" >/dev/null
    killed_at="$got"
    break
  fi
  sleep 0.05
done
[ -n "$killed_at" ] || fail "the batch never started"
sleep 0.5
in_flight_at_kill=$(($(mails | wc -l) - before))
echo "worker-email killed (SIGKILL) after $killed_at of 400 emails had reached the sink"
[ "$in_flight_at_kill" -lt 400 ] || fail "the batch was over before the kill: nothing checked"
podman start "$(cname worker-email)" >/dev/null 2>&1 || true
k0=$(date +%s.%N)
count_batch() {
  mails | python3 -c '
import json, sys
rows = [json.loads(line) for line in sys.stdin if "batch" in line and "@example.com" in line]
rows = [r for r in rows if any(t.startswith("batch") for t in r["to"])]
ids = [r["message_id"] for r in rows]
print(len({tuple(r["to"]) for r in rows}), len(ids), len(set(ids)))'
}
for _ in $(seq 1 240); do
  read -r recipients total distinct <<<"$(count_batch)"
  [ "$recipients" -ge 400 ] && break
  sleep 0.5
done
read -r recipients total distinct <<<"$(count_batch)"
echo "after the restart: $recipients of 400 recipients reached ($(since "$k0")s), $total emails, $distinct Message-IDs"
[ "$recipients" = 400 ] && [ "$distinct" = 400 ] || fail "emails lost: $recipients of 400 recipients reached"
# The outbox marks each message sent in its own statement right after the server accepts
# it (outbox/services/deliver.py): a hard kill can only catch the one message each pool
# process is on, between the SMTP answer and that mark. That message goes out once more,
# with the same Message-ID, when its lease runs out. So: at most one duplicate per email
# worker process (its --concurrency), never a second copy of anything already marked.
# The sink, like a real server writing its queue, takes its time between the final dot of
# DATA and its 250: a kill nearly always lands there, so expect about one per process.
processes="$(sed -n 's/.*--concurrency=\([0-9]*\).*/\1/p' <<<"$(podman inspect -f '{{join .Config.Cmd " "}}' "$(cname worker-email)")")"
duplicates=$((total - distinct))
echo "$duplicates duplicate(s) after the hard kill (same Message-ID; bound: $processes, one per worker process)"
[ "$duplicates" -le "${processes:?}" ] || fail "$duplicates duplicates: more than one per killed worker process"
podman exec "$(cname web)" python manage.py shell -c "
from outbox.models import OutboundMessage
left = OutboundMessage.objects.filter(channel='email').exclude(state='sent').count()
assert left == 0, f'{left} emails not marked sent'
print('every email marked sent in the outbox')"

step "down"
d0=$(date +%s.%N)
compose down -v -t 2 >/dev/null
echo "down -v in $(since "$d0")s"
step "compose test passed: build ${BUILD_SECONDS}s, image ${IMAGE_MB} MB, first 200 ${FIRST_200}s after web started"
