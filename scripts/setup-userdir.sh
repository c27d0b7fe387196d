#!/usr/bin/env bash
# Prepare the project-local Node-RED user dir for `make run` (scripts/run.sh calls it; tests call it on a temporary
# dir). Idempotent. Everything in the user dir is for this OS user only: flows_cred.json holds node credentials
# (the ai-config node's API key), ai-sidebar/ holds the shared service token, the credential secret and memory.db
# (conversations in clear text).
# Env: USERDIR (default .nodered/userdir), VENV (default .venv), AI_SIDEBAR_TOKEN, NODE_RED_CREDENTIAL_SECRET.
set -euo pipefail
cd "$(dirname "$0")/.."

USERDIR=${USERDIR:-.nodered/userdir}
VENV=${VENV:-.venv}
# The fixed secret the settings template fell back to before 2026-12; credentials it encrypted are re-encrypted.
LEGACY_CREDENTIAL_SECRET="change-me-node-red-ai-sidebar"

umask 077
mkdir -p "$USERDIR/node_modules" "$USERDIR/ai-sidebar"
# A user dir made by an earlier version may be world-readable.
chmod 700 "$USERDIR" "$USERDIR/ai-sidebar"
for file in flows_cred.json .config.runtime.json ai-sidebar/service-token ai-sidebar/credential-secret \
    ai-sidebar/memory.db ai-sidebar/memory.db-wal ai-sidebar/memory.db-shm; do
  if [ -e "$USERDIR/$file" ]; then chmod 600 "$USERDIR/$file"; fi
done

# The palette package linked in, the settings template and the example flows on first run.
ln -sfn "$PWD/node-red-contrib-ai-sidebar" "$USERDIR/node_modules/node-red-contrib-ai-sidebar"
[ -f "$USERDIR/settings.js" ] || cp scripts/nodered-settings.js "$USERDIR/settings.js"
[ -f "$USERDIR/flows.json" ] || cp examples/flows.json "$USERDIR/flows.json"

new_secret() {
  "$VENV/bin/python" -c 'import secrets; print(secrets.token_urlsafe(32))'
}

# The plugin and the service share a secret. A bare start gets one generated once and kept, so the service can be
# restarted on its own and still match the running plugin.
if [ -z "${AI_SIDEBAR_TOKEN:-}" ] && [ ! -s "$USERDIR/ai-sidebar/service-token" ]; then
  new_secret > "$USERDIR/ai-sidebar/service-token"
fi

# The key Node-RED encrypts node credentials with (settings.js reads this file unless NODE_RED_CREDENTIAL_SECRET
# is set). Generated once; credentials an earlier version encrypted with the public fallback are re-encrypted.
secret_file="$USERDIR/ai-sidebar/credential-secret"
if [ -z "${NODE_RED_CREDENTIAL_SECRET:-}" ] && [ ! -s "$secret_file" ]; then
  new_secret > "$secret_file.new"
  if [ -s "$USERDIR/flows_cred.json" ] \
      && ! OLD_SECRET="$LEGACY_CREDENTIAL_SECRET" NEW_SECRET="$(cat "$secret_file.new")" \
        node scripts/reencrypt-credentials.js "$USERDIR/flows_cred.json"; then
    # Encrypted with a key of the user's own: leave the credentials and the settings as they are.
    echo "flows_cred.json is not encrypted with the old default secret; keeping its credential secret" >&2
    rm -f "$secret_file.new"
  else
    mv "$secret_file.new" "$secret_file"
  fi
fi
