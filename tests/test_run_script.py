"""`make run`'s start scripts (scripts/setup-userdir.sh, scripts/run.sh): secrets at rest and the printed URL.

A fresh user dir gets its own random credential secret (never the old public fallback) and owner-only files;
credentials an earlier version encrypted with that public fallback are re-encrypted; `make run` with ``PORT``
prints the editor URL Node-RED really listens on and points the service at it; flows_cred.json and the memory
database are readable by their owner only.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from service.memory.store import MemoryStore
from tests.support.nodered import NODE_BINARY, NODERED_HOME, REPO, free_port

# The scripts start the Node-RED under test (NODERED_HOME) and set up its user dir.
pytestmark = pytest.mark.nodered

LEGACY_SECRET = "change-me-node-red-ai-sidebar"
VENV = Path(sys.executable).parent.parent
# What the caller's environment might set and the scripts must not inherit here.
_OUTSIDE = ("AI_SIDEBAR_TOKEN", "NODE_RED_CREDENTIAL_SECRET", "NODE_RED_URL", "AI_SIDEBAR_PORT", "AI_SIDEBAR_HOST",
            "AI_SIDEBAR_SERVICE_URL", "MEMORY_DB_PATH", "PORT", "OPENAI_API_KEY", "AI_SIDEBAR_CONFIG")

# Node-RED's credential format (@node-red/runtime lib/nodes/credentials.js), done by node's own crypto.
_CRYPT = """
const crypto = require("crypto"), fs = require("fs");
const key = crypto.createHash("sha256").update(process.env.SECRET).digest();
if (process.argv[1] === "encrypt") {
  const iv = crypto.randomBytes(16), c = crypto.createCipheriv("aes-256-ctr", key, iv);
  process.stdout.write(JSON.stringify({$: iv.toString("hex") + c.update(process.env.PLAIN, "utf8", "base64")
                                           + c.final("base64")}));
} else {
  const $ = JSON.parse(fs.readFileSync(process.argv[2], "utf8")).$;
  const d = crypto.createDecipheriv("aes-256-ctr", key, Buffer.from($.substring(0, 32), "hex"));
  try { process.stdout.write(JSON.stringify(JSON.parse(d.update($.substring(32), "base64", "utf8")
                                                      + d.final("utf8")))); }
  catch (err) { process.exit(1); }
}
"""


def clean_env(**extra: str) -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if k not in _OUTSIDE}, **extra}


def encrypt(credentials: dict, secret: str) -> str:
    return subprocess.run(["node", "-e", _CRYPT, "encrypt"], check=True, capture_output=True, text=True,
                          env=clean_env(SECRET=secret, PLAIN=json.dumps(credentials))).stdout


def decrypt(path: Path, secret: str) -> dict | None:
    """The credentials in a flows_cred.json, or None when ``secret`` does not decrypt them."""
    done = subprocess.run(["node", "-e", _CRYPT, "decrypt", str(path)], env=clean_env(SECRET=secret),
                          capture_output=True, text=True)
    return json.loads(done.stdout) if done.returncode == 0 else None


def setup_userdir(userdir: Path) -> subprocess.CompletedProcess:
    # A permissive umask, as a user's shell may have: the script must not rely on the caller's.
    return subprocess.run(["bash", str(REPO / "scripts" / "setup-userdir.sh")], umask=0o022, check=True, text=True,
                          env=clean_env(USERDIR=str(userdir), VENV=str(VENV)), capture_output=True, timeout=60)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_fresh_user_dir_gets_its_own_random_credential_secret_and_owner_only_files(tmp_path):
    secrets = []
    for name in ("first", "second"):
        userdir = tmp_path / name / "userdir"
        setup_userdir(userdir)
        secret = (userdir / "ai-sidebar" / "credential-secret").read_text().strip()
        secrets.append(secret)
        assert len(secret) >= 40 and secret != LEGACY_SECRET
        assert (mode(userdir), mode(userdir / "ai-sidebar")) == (0o700, 0o700)
        for file in ("ai-sidebar/credential-secret", "ai-sidebar/service-token", "settings.js", "flows.json"):
            assert mode(userdir / file) == 0o600, file
        # The settings Node-RED loads use that secret.
        loaded = subprocess.run(["node", "-e", "process.stdout.write(require(process.argv[1]).credentialSecret)",
                                 str(userdir / "settings.js")], env=clean_env(), capture_output=True, text=True)
        assert loaded.stdout == secret
    assert secrets[0] != secrets[1]
    # Idempotent: a second run keeps the secret.
    setup_userdir(tmp_path / "first" / "userdir")
    assert (tmp_path / "first" / "userdir" / "ai-sidebar" / "credential-secret").read_text().strip() == secrets[0]


def test_credentials_encrypted_with_the_old_public_secret_are_re_encrypted_with_a_new_one(tmp_path):
    userdir = tmp_path / "userdir"
    userdir.mkdir(mode=0o755)
    credentials = {"cfg-1": {"apiKey": "sk-old-install-key-0001"}}
    (userdir / "flows_cred.json").write_text(encrypt(credentials, LEGACY_SECRET))
    (userdir / "flows_cred.json").chmod(0o644)
    setup_userdir(userdir)
    secret = (userdir / "ai-sidebar" / "credential-secret").read_text().strip()
    assert decrypt(userdir / "flows_cred.json", secret) == credentials
    assert decrypt(userdir / "flows_cred.json", LEGACY_SECRET) is None
    assert mode(userdir / "flows_cred.json") == 0o600 and mode(userdir) == 0o700

    # Credentials under a key of the user's own are left alone, and no secret is made that would not open them.
    own = tmp_path / "own" / "userdir"
    own.mkdir(parents=True)
    (own / "flows_cred.json").write_text(encrypt(credentials, "the-users-own-secret"))
    done = setup_userdir(own)
    assert decrypt(own / "flows_cred.json", "the-users-own-secret") == credentials
    assert not (own / "ai-sidebar" / "credential-secret").exists()
    assert "keeping its credential secret" in done.stderr


async def test_the_memory_database_and_its_journal_files_are_owner_only(tmp_path):
    previous = os.umask(0o022)
    try:
        store = await MemoryStore.open(tmp_path / "data" / "memory.db")
        await store.put_knowledge("note:1", "a private note", "note")
        files = sorted(tmp_path.glob("data/memory.db*"))
        assert [f.name for f in files][:1] == ["memory.db"] and len(files) >= 2  # the -wal exists while open
        assert {f.name: mode(f) for f in files} == {f.name: 0o600 for f in files}
        await store.close()
    finally:
        os.umask(previous)
    assert mode(tmp_path / "data") == 0o700


def _wait_for(check, timeout: float, what: str, log: Path):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = check()
        if result:
            return result
        time.sleep(0.2)
    raise AssertionError(f"{what} within {timeout} s:\n{log.read_text(errors='replace')[-4000:]}")


def _get(url: str, headers: dict[str, str] | None = None) -> bytes | None:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=5) as response:
            return response.read()
    except (urllib.error.URLError, OSError):
        return None


def test_make_run_on_a_moved_port_prints_that_url_reaches_it_and_keeps_secrets_owner_only(tmp_path):
    userdir = tmp_path / "userdir"
    port, service_port = free_port(), free_port()
    log = tmp_path / "run.log"
    env = clean_env(USERDIR=str(userdir), VENV=str(VENV), NODERED=str(NODERED_HOME / "red.js"), PORT=str(port),
                    AI_SIDEBAR_PORT=str(service_port), MCP_TOOLS_ENABLED="false",
                    # the service started by the script runs this checkout's code
                    PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
                    # run.sh starts `node`: the one that runs the Node-RED under test (Node 22 for Node-RED 5)
                    PATH=os.pathsep.join(filter(None, [os.path.dirname(NODE_BINARY), os.environ["PATH"]])))
    with log.open("wb") as output:
        process = subprocess.Popen(["bash", str(REPO / "scripts" / "run.sh")], cwd=REPO, env=env, stdout=output,
                                   stderr=subprocess.STDOUT, umask=0o022, start_new_session=True)
    try:
        _wait_for(lambda: b"Started flows" in log.read_bytes(), 90, "Node-RED did not start flows", log)
        banner = next(line for line in log.read_text().splitlines() if line.startswith("Node-RED editor:"))
        assert banner.startswith(f"Node-RED editor: http://127.0.0.1:{port}/  ")
        editor = f"http://127.0.0.1:{port}"
        assert _get(f"{editor}/settings") is not None

        # Deploy a credential as the editor does; Node-RED encrypts it with the generated secret.
        flows = json.loads(_get(f"{editor}/flows"))
        tab = next(node for node in flows if node["type"] == "tab")
        flows.append({"id": "at-rest-http", "type": "http request", "z": tab["id"], "x": 100, "y": 600,
                      "method": "GET", "url": "https://example.com/", "authType": "basic", "wires": [[]],
                      "credentials": {"user": "bob", "password": "at-rest-password-0042"}})
        request = urllib.request.Request(f"{editor}/flows", data=json.dumps(flows).encode(), method="POST",
                                         headers={"Content-Type": "application/json",
                                                  "Node-RED-Deployment-Type": "full"})
        assert urllib.request.urlopen(request, timeout=10).status == 204
        credentials_file = userdir / "flows_cred.json"
        _wait_for(credentials_file.exists, 20, "flows_cred.json was not written", log)
        secret = (userdir / "ai-sidebar" / "credential-secret").read_text().strip()
        stored = _wait_for(lambda: decrypt(credentials_file, secret), 20, "credentials not readable", log)
        assert stored["at-rest-http"]["password"] == "at-rest-password-0042"
        assert decrypt(credentials_file, LEGACY_SECRET) is None
        assert b"at-rest-password-0042" not in credentials_file.read_bytes()

        # The service found Node-RED on the moved port by itself (NODE_RED_URL follows settings.js).
        token = (userdir / "ai-sidebar" / "service-token").read_text().strip()
        request = urllib.request.Request(
            f"http://127.0.0.1:{service_port}/ai-sidebar/execute-tool", method="POST",
            data=json.dumps({"tool": "get_flow", "params": {"flow_id": tab["id"]}}).encode(),
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(request, timeout=30) as response:
            assert tab["id"] in response.read().decode()

        files = [credentials_file, userdir / "flows.json", userdir / "ai-sidebar" / "credential-secret",
                 userdir / "ai-sidebar" / "service-token", *sorted((userdir / "ai-sidebar").glob("memory.db*"))]
        assert (userdir / "ai-sidebar" / "memory.db") in files
        assert {f.name: mode(f) & 0o077 for f in files} == {f.name: 0 for f in files}
        assert (mode(userdir), mode(userdir / "ai-sidebar")) == (0o700, 0o700)
    finally:
        _stop(process)


def _stop(process: subprocess.Popen) -> None:
    """Stop run.sh's process group (Node-RED and the service): SIGTERM, then SIGKILL after 20 s."""
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(5)


def _run_script_env(tmp_path, **extra):
    return clean_env(USERDIR=str(tmp_path / "userdir"), VENV=str(VENV), NODERED=str(NODERED_HOME / "red.js"),
                     PORT=str(free_port()), MCP_TOOLS_ENABLED="false",
                     PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
                     PATH=os.pathsep.join(filter(None, [os.path.dirname(NODE_BINARY), os.environ["PATH"]])), **extra)


def test_make_run_with_a_settings_error_stops_with_exit_code_2_instead_of_restarting_the_service(tmp_path):
    env = _run_script_env(tmp_path, AI_SIDEBAR_PORT=str(free_port()), AI_PROVIDER="no-such-provider")
    run = subprocess.run(["bash", str(REPO / "scripts" / "run.sh")], cwd=REPO, env=env, capture_output=True,
                         text=True, timeout=120, start_new_session=True)
    assert run.returncode == 2, run.stderr
    assert "AI_PROVIDER" in run.stderr and "refused its settings" in run.stderr
    assert "starting it again" not in run.stderr and "Node-RED editor:" not in run.stdout


def test_make_run_refuses_a_port_where_another_assistant_service_answers(tmp_path, service_process):
    env = _run_script_env(tmp_path, AI_SIDEBAR_PORT=str(service_process.service_port))
    run = subprocess.run(["bash", str(REPO / "scripts" / "run.sh")], cwd=REPO, env=env, capture_output=True,
                         text=True, timeout=60, start_new_session=True)
    assert run.returncode == 2
    assert f"already answers on http://127.0.0.1:{service_process.service_port}" in run.stderr
    assert "AI_SIDEBAR_PORT=8766 make run" in run.stderr


NODERED_5 = REPO / ".nodered5" / "node_modules" / "node-red" / "red.js"


@pytest.mark.skipif(not NODERED_5.exists(), reason="Node-RED 5 is not installed in .nodered5 (make test installs it)")
def test_node_red_5_under_make_run_starts_with_its_own_node_js(tmp_path):
    # What `NODE_RED=5 make run` hands to run.sh (the Makefile's own words, not run).
    dry = subprocess.run(["make", "-n", "run", "NODE_RED=5"], cwd=REPO, capture_output=True, text=True, check=True)
    command = dry.stdout.replace("\\\n", " ")
    assert 'NODERED=".nodered5/node_modules/node-red/red.js"' in command
    node_22 = str(REPO / ".nodered5" / "node_modules" / ".bin" / "node")
    assert f'NODE_BIN="{node_22}"' in command
    log = tmp_path / "run.log"
    # The PATH's node is the system's (20 here), which Node-RED 5 refuses: run.sh must start the one it is given.
    env = {**_run_script_env(tmp_path, NODE_BIN=node_22, AI_SIDEBAR_PORT=str(free_port())),
           "NODERED": str(NODERED_5), "PATH": os.environ["PATH"]}
    with log.open("wb") as output:
        process = subprocess.Popen(["bash", str(REPO / "scripts" / "run.sh")], cwd=REPO, env=env, stdout=output,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    try:
        _wait_for(lambda: b"Started flows" in log.read_bytes(), 90, "Node-RED 5 did not start flows", log)
        started = next(line for line in log.read_text().splitlines() if line.startswith("Node-RED 5."))
        assert " on Node.js v22." in started
    finally:
        _stop(process)
