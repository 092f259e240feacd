#!/usr/bin/env bash
# Lint the live OpenAPI schema with Redocly (recommended) and Spectral (spectral:oas):
# zero errors from each. Warnings are printed, not fatal. The linters are pinned and
# installed into var/node (git-ignored) on first use; needs node and npm.
set -euo pipefail
cd "$(dirname "$0")/.."
REDOCLY=@redocly/cli@2.77.0
SPECTRAL=@stoplight/spectral-cli@6.16.3
NODE_DIR=var/node
if ! command -v npm >/dev/null 2>&1; then
  echo "lint_schema: npm is not installed" >&2
  exit 1
fi
if [ ! -x "$NODE_DIR/node_modules/.bin/redocly" ] || [ ! -x "$NODE_DIR/node_modules/.bin/spectral" ]; then
  mkdir -p "$NODE_DIR"
  (cd "$NODE_DIR" && npm install --no-save --no-audit --no-fund --loglevel=error "$REDOCLY" "$SPECTRAL")
fi
schema="$(mktemp --suffix=.json)"
trap 'rm -f "$schema"' EXIT
PYTHON="${PYTHON:-.venv/bin/python}"
"$PYTHON" manage.py spectacular --format openapi-json --validate --fail-on-warn --file "$schema"
echo "--- redocly (recommended)"
"$NODE_DIR/node_modules/.bin/redocly" lint "$schema" --config tools/redocly.yaml --format=summary
echo "--- spectral (spectral:oas)"
"$NODE_DIR/node_modules/.bin/spectral" lint --ruleset tools/spectral.yaml --fail-severity=error \
  --display-only-failures "$schema"
echo "lint_schema: zero errors"
