#!/usr/bin/env bash
# Start the assistant service and Node-RED together; Ctrl-C stops both.
# Called by `make run` with USERDIR, NODERED, NODE_BIN (the Node.js that runs Node-RED: Node-RED 5 needs 22.9 or
# later, `NODE_RED=5 make run` gives the one installed beside it) and VENV set.
set -euo pipefail
cd "$(dirname "$0")/.."

USERDIR=${USERDIR:-.nodered/userdir}
NODERED=${NODERED:-.nodered/node_modules/node-red/red.js}
NODE_BIN=${NODE_BIN:-node}
VENV=${VENV:-.venv}
export USERDIR VENV
# Everything the script, Node-RED and the service create (flows_cred.json, memory.db) is for this user only.
umask 077
bash scripts/setup-userdir.sh

# Where Node-RED listens and its admin root, as the user dir's settings.js says (PORT moves the template's uiPort).
editor_url=$(node -e '
  const s = require(process.argv[1]);
  const host = !s.uiHost || s.uiHost === "0.0.0.0" || s.uiHost === "::" ? "127.0.0.1" : s.uiHost;
  const root = typeof s.httpAdminRoot === "string" ? s.httpAdminRoot.replace(/\/?$/, "/") : "/";
  const hostname = host.includes(":") ? `[${host}]` : host;
  process.stdout.write(`${s.https ? "https" : "http"}://${hostname}:${s.uiPort || 1880}${root}`);
' "$(cd "$USERDIR" && pwd)/settings.js")

export AI_SIDEBAR_HOST=${AI_SIDEBAR_HOST:-127.0.0.1}
export AI_SIDEBAR_PORT=${AI_SIDEBAR_PORT:-8765}
# One service process for one developer (several: AI_SIDEBAR_WORKERS, README "Workers").
export AI_SIDEBAR_WORKERS=${AI_SIDEBAR_WORKERS:-1}
export AI_SIDEBAR_SERVICE_URL=${AI_SIDEBAR_SERVICE_URL:-http://$AI_SIDEBAR_HOST:$AI_SIDEBAR_PORT}
export NODE_RED_URL=${NODE_RED_URL:-${editor_url%/}}
export MEMORY_DB_PATH=${MEMORY_DB_PATH:-$USERDIR/ai-sidebar/memory.db}
export AI_SIDEBAR_TOKEN=${AI_SIDEBAR_TOKEN:-$(cat "$USERDIR/ai-sidebar/service-token")}
# The loop below restarts the service: the sidebar's banner says so instead of offering pip and docker commands.
export AI_SIDEBAR_SERVICE_SUPERVISED=${AI_SIDEBAR_SERVICE_SUPERVISED:-make run}

# A settings.js copied by an earlier version falls back to a public credential secret: give it the generated one
# (only Node-RED gets it; the service never needs it).
credential_env=()
if [ -z "${NODE_RED_CREDENTIAL_SECRET:-}" ] && [ -s "$USERDIR/ai-sidebar/credential-secret" ] \
    && grep -q "change-me-node-red-ai-sidebar" "$USERDIR/settings.js"; then
  credential_env=("NODE_RED_CREDENTIAL_SECRET=$(cat "$USERDIR/ai-sidebar/credential-secret")")
fi

# Another service already on the port would answer this Node-RED with another one's flows and memory.
if curl -fsS "$AI_SIDEBAR_SERVICE_URL/healthz" >/dev/null 2>&1; then
  echo "make run: an assistant service already answers on $AI_SIDEBAR_SERVICE_URL (another make run?); stop it," \
       "or give this one another port: AI_SIDEBAR_PORT=8766 make run" >&2
  exit 2
fi

# Keep the service running: if it stops (crash, or killed), it is started again after a short pause. Exit code 2
# is a settings error (printed above by the service): starting again would only repeat it.
supervise_service() {
  while true; do
    status=0
    "$VENV/bin/ai-sidebar-service" || status=$?
    if [ "$status" = 2 ]; then
      echo "make run: the assistant service refused its settings (see above); fix them and run make run again" >&2
      return 2
    fi
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

# Node-RED starts once the service answers (its first start on a Raspberry Pi imports LangChain for 10-20 s), or
# after 90 s without an answer all the same (the sidebar then says the service is not reachable yet).
started=$SECONDS
said=""
until curl -fsS "$AI_SIDEBAR_SERVICE_URL/healthz" >/dev/null 2>&1; do
  # The supervisor gave up (a settings error): do not start Node-RED with an assistant that cannot answer.
  if ! kill -0 "$supervisor_pid" 2>/dev/null; then exit 2; fi
  if [ $((SECONDS - started)) -ge 90 ]; then break; fi
  if [ -z "$said" ] && [ $((SECONDS - started)) -ge 5 ]; then
    echo "make run: waiting for the assistant service to start..." >&2
    said=1
  fi
  sleep 0.1
done

echo "Node-RED editor: ${editor_url}  (AI tab in the sidebar; Ctrl-C stops both)"
nodered_version=$("$NODE_BIN" -p 'require(require("path").resolve(process.argv[1], "../package.json")).version' "$NODERED")
echo "Node-RED $nodered_version on Node.js $("$NODE_BIN" --version)"
env "${credential_env[@]}" "$NODE_BIN" "$NODERED" --userDir "$USERDIR" --settings "$USERDIR/settings.js" &
nodered_pid=$!
# Until Node-RED ends, or the supervisor gives up: a service slow to start on a busy machine may refuse its settings
# only after Node-RED started, and Node-RED must not go on with an assistant that cannot answer (bash >= 5.1:
# wait -n with ids).
status=0
wait -n "$nodered_pid" "$supervisor_pid" || status=$?
if ! kill -0 "$supervisor_pid" 2>/dev/null; then
  echo "make run: stopping Node-RED" >&2
  exit 2
fi
exit "$status"
