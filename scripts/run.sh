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

# Project-local Node-RED user dir: the palette package linked in, example flows on first run.
mkdir -p "$USERDIR/node_modules" "$USERDIR/ai-sidebar"
ln -sfn "$PWD/node-red-contrib-ai-sidebar" "$USERDIR/node_modules/node-red-contrib-ai-sidebar"
[ -f "$USERDIR/settings.js" ] || cp scripts/nodered-settings.js "$USERDIR/settings.js"
[ -f "$USERDIR/flows.json" ] || cp examples/flows.json "$USERDIR/flows.json"

# The plugin and the service share a secret. A bare start gets one generated once and kept (readable by this
# user only) in the user dir, so the service can be restarted on its own and still match the running plugin.
if [ -z "${AI_SIDEBAR_TOKEN:-}" ]; then
  token_file="$USERDIR/ai-sidebar/service-token"
  if [ ! -s "$token_file" ]; then
    (umask 077 && "$VENV/bin/python" -c 'import secrets; print(secrets.token_urlsafe(32))' > "$token_file")
  fi
  AI_SIDEBAR_TOKEN=$(cat "$token_file")
fi
export AI_SIDEBAR_TOKEN

# Keep the service running: if it stops (crash, or killed), it is started again after a short pause.
supervise_service() {
  while true; do
    "$VENV/bin/ai-sidebar-service" || true
    echo "the assistant service stopped; starting it again in 1 s (Ctrl-C stops everything)" >&2
    sleep 1
  done
}
supervise_service &
supervisor_pid=$!
stop() {
  kill "${nodered_pid:-}" 2>/dev/null || true
  pkill -P "$supervisor_pid" 2>/dev/null || true
  kill "$supervisor_pid" 2>/dev/null || true
  wait 2>/dev/null || true
}
trap stop EXIT INT TERM

for _ in $(seq 1 100); do
  if curl -fsS "$AI_SIDEBAR_SERVICE_URL/healthz" >/dev/null 2>&1; then break; fi
  sleep 0.1
done

admin_root=$(node -e 'try { const s = require(process.argv[1]); process.stdout.write((s.httpAdminRoot || "/").replace(/\/?$/, "/")) } catch (e) { process.stdout.write("/") }' "$PWD/$USERDIR/settings.js")
echo "Node-RED editor: http://127.0.0.1:1880${admin_root}  (AI tab in the sidebar; Ctrl-C stops both)"
node "$NODERED" --userDir "$USERDIR" --settings "$USERDIR/settings.js" &
nodered_pid=$!
wait "$nodered_pid"
