#!/usr/bin/env bash
# Start the assistant service and Node-RED together; Ctrl-C stops both.
# Called by `make run` with USERDIR, NODERED and VENV set.
set -euo pipefail
cd "$(dirname "$0")/.."

USERDIR=${USERDIR:-.nodered/userdir}
NODERED=${NODERED:-.nodered/node_modules/node-red/red.js}
VENV=${VENV:-.venv}
export AI_SIDEBAR_HOST=${AI_SIDEBAR_HOST:-127.0.0.1}
export AI_SIDEBAR_PORT=${AI_SIDEBAR_PORT:-8765}
export AI_SIDEBAR_SERVICE_URL=${AI_SIDEBAR_SERVICE_URL:-http://$AI_SIDEBAR_HOST:$AI_SIDEBAR_PORT}
export NODE_RED_URL=${NODE_RED_URL:-http://127.0.0.1:1880}
export MEMORY_DB_PATH=${MEMORY_DB_PATH:-$USERDIR/ai-sidebar/memory.db}
# The plugin and the service share a secret; a bare start gets a fresh one so the service is never open.
if [ -z "${AI_SIDEBAR_TOKEN:-}" ]; then
  AI_SIDEBAR_TOKEN=$("$VENV/bin/python" -c 'import secrets; print(secrets.token_urlsafe(32))')
fi
export AI_SIDEBAR_TOKEN

# Project-local Node-RED user dir: the palette package linked in, example flows on first run.
mkdir -p "$USERDIR/node_modules" "$(dirname "$MEMORY_DB_PATH")"
ln -sfn "$PWD/node-red-contrib-ai-sidebar" "$USERDIR/node_modules/node-red-contrib-ai-sidebar"
[ -f "$USERDIR/settings.js" ] || cp scripts/nodered-settings.js "$USERDIR/settings.js"
[ -f "$USERDIR/flows.json" ] || cp examples/flows.json "$USERDIR/flows.json"

"$VENV/bin/ai-sidebar-service" &
service_pid=$!
stop() { kill "$service_pid" 2>/dev/null || true; wait "$service_pid" 2>/dev/null || true; }
trap stop EXIT INT TERM

for _ in $(seq 1 100); do
  if curl -fsS "$AI_SIDEBAR_SERVICE_URL/healthz" >/dev/null 2>&1; then break; fi
  if ! kill -0 "$service_pid" 2>/dev/null; then echo "the assistant service failed to start" >&2; exit 1; fi
  sleep 0.1
done

echo "Node-RED editor: http://127.0.0.1:1880  (AI tab in the sidebar; Ctrl-C stops both)"
node "$NODERED" --userDir "$USERDIR" --settings "$USERDIR/settings.js" &
nodered_pid=$!
trap 'kill "$nodered_pid" 2>/dev/null || true; stop' EXIT INT TERM
wait "$nodered_pid"
