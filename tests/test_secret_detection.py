"""Secret detection: a tab with secrets planted where real flows keep them, deployed to a real Node-RED, leaks
nothing to the model, the stream, the MCP server's output, the log or the memory database; ordinary values (ids,
topics, URLs without credentials, normal code) are kept. False positives are counted on every example flow
Node-RED ships and on Node-RED's own source code."""

from __future__ import annotations

import base64
import json
import logging
import random
import string
import time
import urllib.request

import aiohttp
import pytest

from service.nodered.flows import REDACTED, redact_text, strip_secrets
from service.settings import NodeRedSettings, Settings
from service.web.app import create_app
from service.web.keys import KNOWLEDGE
from tests.conftest import SERVICE_SECRET, TEST_API_KEY
from tests.support.model_server import Reply
from tests.support.nodered import EXAMPLES_DIR, NODERED_HOME, REPO, NodeRed, free_port
from tests.support.sse import read_events
from tests.test_mcp_server import stdio_session, text_of

_random = random.Random(1402)


def _token(length: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    return "".join(_random.choice(alphabet) for _ in range(length))


def _b64url(data: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


# Each planted secret is distinctive, so finding it anywhere is a leak.
BASIC_HEADER = base64.b64encode(b"svc-user:Pl4nted-B4sic-Pw").decode()
BASIC_IN_CODE = base64.b64encode(b"ops:planted-b64-code-pw").decode()
JWT = (f"{_b64url({'alg': 'HS256', 'typ': 'JWT'})}.{_b64url({'sub': 'planted-jwt', 'iat': 1700000000})}."
       f"{_token(43, string.ascii_letters + string.digits + '-_')}")
SECRETS = {
    "http header X-API-Key": "xak-7Hq2LmP9vR4sT8wZ",
    "http header Authorization Basic": BASIC_HEADER,
    "http header custom": "tenant-secret-value-88",
    "http request url access_token": "planted-url-token-4471",
    "http request credentials password": "planted-cred-pw-19",
    "mqtt-broker credentials password": "planted-mqtt-pw-20",
    "function pw variable": "planted-pw-Zx81",
    "function Basic credentials built": "planted-buffer-pw",
    "function Basic credentials literal": BASIC_IN_CODE,
    "function X-API-Key header": "planted-xapikey-code-55",
    "function passphrase": "planted passphrase words",
    "function AWS access key id": "AKIA" + _token(16, string.ascii_uppercase + string.digits),
    "function AWS secret access key": _token(40, string.ascii_letters + string.digits + "/+"),
    "function Stripe key": "sk_live_" + _token(24),
    "function GitHub token": "ghp_" + _token(36),
    "function SendGrid key": f"SG.{_token(22)}.{_token(43)}",
    "function Slack token": f"xoxb-{_token(11, string.digits)}-{_token(12, string.digits)}-{_token(24).lower()}",
    "function OpenAI key": "sk-proj-" + _token(48),
    "function Google key": "AIza" + _token(35),
    "function JWT": JWT,
    "function URL password": "planted-url-pw-31",
    "function URL apikey": "planted-apikey-q1",
    "function Telegram bot token": f"{_token(9, string.digits)}:AA{_token(33)}",
    "function random quoted key": _token(32, string.hexdigits.lower()),
    "change rule pwd": "planted-change-pwd",
    "change rule JSON Bearer": "planted-bearer-token-9f8e7d6c",
    "switch on msg.password": "planted-switch-pw",
    "inject JSON token": "planted-json-token-31",
    "inject property password": "planted-inject-pw",
    "template Bearer": "planted-template-bearer-7a6b5c4d",
    "template api_key": "planted-template-apikey-2",
    "exec curl -u password": "planted-curl-pw",
    "tab env cred": "planted-env-cred",
    "tab env API_TOKEN": "planted-env-token-str",
    "http response Set-Cookie": "session=planted-cookie-77",
    "tab info token": "ghp_plantedInfoToken0123456789abcdefAB",
    # Keys in query parameters whose names say nothing (found by their shape).
    "http request url appid (32 hex)": _token(32, "0123456789abcdef"),
    "websocket-client url sub (base64url)": _token(40, string.ascii_letters + string.digits + "-_"),
    "function URL in a string, k (base64)": _token(44, string.ascii_letters + string.digits + "+/"),
}
# Ordinary values that must reach the model unchanged.
ORDINARY = ["sensors/kitchen", "https://api.example.com/v1/items", "page=2", "device=1a2b3c4d5e6f7a8b",
            "station=550e8400-e29b-41d4-a716-446655440000", "wss://stream.example.com/feed?sub=",
            "msg.payload.temperature * 1.8 + 32",
            "mqtt.example.com", "application/json", "payload.pw", "eu-west-1", "home/kitchen", "thermo-1",
            "Plant-Tab-HTTP", "return msg;"]


def planted_flows(tab_id: str = "plant-tab") -> list[dict]:
    """One tab with a secret in every place real flows keep them, plus one config node and its ordinary values."""
    s = SECRETS
    z = {"z": tab_id}
    code = "\n".join([
        f'const pw = "{s["function pw variable"]}";',
        f'const auth = "Basic " + Buffer.from("admin:{s["function Basic credentials built"]}").toString("base64");',
        f'msg.headers = {{"Authorization": "Basic {s["function Basic credentials literal"]}", '
        f'"X-API-Key": "{s["function X-API-Key header"]}", "Content-Type": "application/json"}};',
        f'const cfg = {{passphrase: "{s["function passphrase"]}", region: "eu-west-1"}};',
        f'const awsAccessKeyId = "{s["function AWS access key id"]}";',
        f'const aws_secret_access_key = "{s["function AWS secret access key"]}";',
        f'const stripe = "{s["function Stripe key"]}"; const gh = "{s["function GitHub token"]}";',
        f'const sendgrid = "{s["function SendGrid key"]}";',
        f'const slack = "{s["function Slack token"]}";',
        f'const openai = "{s["function OpenAI key"]}", google = "{s["function Google key"]}";',
        f'const jwt = "{s["function JWT"]}";',
        f'const db = "postgres://app:{s["function URL password"]}@db.example.com:5432/app";',
        f'const q = "https://api.example.com/data?apikey={s["function URL apikey"]}&city=Paris";',
        f'const weather = "https://maps.example.com/tile?k={s["function URL in a string, k (base64)"]}&z=3";',
        f'const bot = "https://api.telegram.org/bot{s["function Telegram bot token"]}/sendMessage";',
        f'const signingMaterial = "{s["function random quoted key"]}";',
        "msg.payload = msg.payload.temperature * 1.8 + 32;",
        "if (msg.topic === 'sensors/kitchen') { node.status({text: 'ok'}); }",
        "return msg;",
    ])
    return [
        {"id": tab_id, "type": "tab", "label": "Plant-Tab-HTTP", "disabled": False,
         "info": f"Call the API with token {s['tab info token']}",
         "env": [{"name": "SERVICE_PW", "type": "cred", "value": s["tab env cred"]},
                 {"name": "API_TOKEN", "type": "str", "value": s["tab env API_TOKEN"]},
                 {"name": "REGION", "type": "str", "value": "eu-west-1"}]},
        {"id": "plant-inject", "type": "inject", **z, "name": "tick", "x": 100, "y": 80,
         "props": [{"p": "payload", "v": json.dumps({"token": s["inject JSON token"], "device": "thermo-1"}),
                    "vt": "json"},
                   {"p": "password", "v": s["inject property password"], "vt": "str"},
                   {"p": "topic", "v": "home/kitchen", "vt": "str"}],
         "repeat": "", "crontab": "", "once": False, "onceDelay": 0.1, "topic": "home/kitchen",
         "payload": json.dumps({"token": s["inject JSON token"], "device": "thermo-1"}), "payloadType": "json",
         "wires": [["plant-change"]]},
        {"id": "plant-change", "type": "change", **z, "name": "set auth", "x": 300, "y": 80,
         "rules": [{"t": "set", "p": "pwd", "pt": "msg", "to": s["change rule pwd"], "tot": "str"},
                   {"t": "set", "p": "headers", "pt": "msg", "tot": "json",
                    "to": json.dumps({"Authorization": f"Bearer {s['change rule JSON Bearer']}"})},
                   {"t": "set", "p": "password", "pt": "msg", "to": "payload.pw", "tot": "msg"},
                   {"t": "set", "p": "topic", "pt": "msg", "to": "sensors/kitchen", "tot": "str"}],
         "wires": [["plant-function"]]},
        {"id": "plant-function", "type": "function", **z, "name": "call api", "x": 500, "y": 80, "func": code,
         "outputs": 1, "timeout": 0, "noerr": 0, "initialize": "", "finalize": "", "libs": [],
         "wires": [["plant-switch"]]},
        {"id": "plant-switch", "type": "switch", **z, "name": "check", "x": 700, "y": 80, "property": "password",
         "propertyType": "msg", "rules": [{"t": "eq", "v": s["switch on msg.password"], "vt": "str"}],
         "checkall": "true", "repair": False, "outputs": 1, "wires": [["plant-http"]]},
        {"id": "plant-http", "type": "http request", **z, "name": "fetch items", "x": 900, "y": 80, "method": "GET",
         "ret": "obj", "paytoqs": "ignore", "authType": "basic", "tls": "", "persist": False, "proxy": "",
         "insecureHTTPParser": False, "senderr": False,
         "url": f"https://api.example.com/v1/items?access_token={s['http request url access_token']}&page=2"
                f"&appid={s['http request url appid (32 hex)']}&device=1a2b3c4d5e6f7a8b"
                "&station=550e8400-e29b-41d4-a716-446655440000",
         "headers": [
             {"keyType": "other", "keyValue": "X-API-Key", "valueType": "other",
              "valueValue": s["http header X-API-Key"]},
             {"keyType": "other", "keyValue": "Authorization", "valueType": "other",
              "valueValue": f"Basic {s['http header Authorization Basic']}"},
             {"keyType": "other", "keyValue": "X-Custom", "valueType": "other", "valueValue": s["http header custom"]},
             {"keyType": "Content-Type", "keyValue": "", "valueType": "application/json", "valueValue": ""},
             {"keyType": "other", "keyValue": "X-Tenant-Id", "valueType": "msg", "valueValue": "tenant"}],
         "credentials": {"user": "bob", "password": s["http request credentials password"]},
         "wires": [["plant-template"]]},
        {"id": "plant-template", "type": "template", **z, "name": "body", "x": 1100, "y": 80, "field": "payload",
         "fieldType": "msg", "format": "text", "syntax": "mustache", "output": "str",
         "template": "POST /v1/send HTTP/1.1\nAuthorization: Bearer " + s["template Bearer"] + "\n\n" +
                     json.dumps({"api_key": s["template api_key"], "message": "{{payload}}"}),
         "wires": [["plant-exec"]]},
        {"id": "plant-exec", "type": "exec", **z, "name": "notify", "x": 1300, "y": 80,
         "command": f"curl -u deploy:{s['exec curl -u password']} https://api.example.com/v1/items",
         "addpay": "", "append": "", "useSpawn": "false", "timer": "", "winHide": False, "oldrc": False,
         "wires": [[], [], []]},
        {"id": "plant-mqtt-out", "type": "mqtt out", **z, "name": "publish", "x": 900, "y": 160,
         "topic": "sensors/kitchen", "qos": "", "retain": "", "broker": "plant-broker", "wires": []},
        {"id": "plant-http-in", "type": "http in", **z, "name": "", "x": 100, "y": 240, "url": "/plant",
         "method": "get", "upload": False, "wires": [["plant-http-response"]]},
        {"id": "plant-http-response", "type": "http response", **z, "name": "", "x": 300, "y": 240,
         "statusCode": "", "headers": {"Set-Cookie": s["http response Set-Cookie"], "Content-Type": "text/plain"},
         "wires": []},
        {"id": "plant-ws-out", "type": "websocket out", **z, "name": "stream", "x": 900, "y": 320, "server": "",
         "client": "plant-websocket", "wires": []},
        {"id": "plant-websocket", "type": "websocket-client", "tls": "", "wholemsg": "false", "hb": "0",
         "subprotocol": "", "headers": [],
         "path": f"wss://stream.example.com/feed?sub={s['websocket-client url sub (base64url)']}"},
        {"id": "plant-broker", "type": "mqtt-broker", "name": "home broker", "broker": "mqtt.example.com",
         "port": "1883", "clientid": "", "usetls": False, "protocolVersion": "4", "keepalive": "60",
         "cleansession": True, "credentials": {"user": "home", "password": s["mqtt-broker credentials password"]}},
    ]


def planted(node_id: str) -> dict:
    return next(node for node in planted_flows() if node["id"] == node_id)


def leaks(text: str) -> list[str]:
    """The planted secrets found in ``text`` (by name)."""
    return [name for name, secret in SECRETS.items() if secret in text]


# ---------------------------------------------------------------------------------------------------------------
# Pure functions


def test_strip_secrets_removes_every_planted_secret_and_keeps_ordinary_values():
    flows = planted_flows()
    ids = {node["id"] for node in flows}
    cleaned = json.dumps([strip_secrets(node, ids) for node in flows])
    assert leaks(cleaned) == []
    for value in ORDINARY:
        assert value in cleaned, value
    assert "credentials" not in cleaned


def test_header_values_are_sent_only_for_known_safe_header_names():
    headers = strip_secrets(planted("plant-http"))["headers"]
    assert [h.get("valueValue") for h in headers] == [REDACTED, REDACTED, REDACTED, "", "tenant"]
    assert [h["keyValue"] for h in headers] == ["X-API-Key", "Authorization", "X-Custom", "", "X-Tenant-Id"]
    assert headers[3]["valueType"] == "application/json"  # a preset of a safe header is its value
    response = strip_secrets({"id": "r", "type": "http response",
                              "headers": {"Set-Cookie": "sid=1", "content-type": "text/plain", "X-Powered": "x"}})
    assert response["headers"] == {"Set-Cookie": REDACTED, "content-type": "text/plain", "X-Powered": REDACTED}


def test_rules_that_set_a_secret_property_lose_literals_but_keep_msg_paths():
    rules = strip_secrets(planted("plant-change"))["rules"]
    assert rules[0] == {"t": "set", "p": "pwd", "pt": "msg", "to": REDACTED, "tot": "str"}
    assert SECRETS["change rule JSON Bearer"] not in rules[1]["to"] and rules[1]["to"].startswith('{"Authorization"')
    assert rules[2]["to"] == "payload.pw"
    assert rules[3]["to"] == "sensors/kitchen"
    env = strip_secrets(planted("plant-tab"))["env"]
    assert [e["value"] for e in env] == [REDACTED, REDACTED, "eu-west-1"]
    env_reference = strip_secrets({"id": "t", "env": [{"name": "DB_PASSWORD", "type": "env", "value": "PGPASS"}]})
    assert env_reference["env"][0]["value"] == "PGPASS"  # names the variable that holds it
    github = SECRETS["function GitHub token"]
    cleaned = strip_secrets({"id": "o", "extra": {"name": "ci", "key": github}})
    assert cleaned["extra"] == {"name": "ci", "key": REDACTED}


def test_a_value_equal_to_a_node_id_is_a_reference_kept_whatever_its_name():
    node = {"id": "n1", "type": "custom", "auth": "cfg-1", "password": "cfg-1", "token": "not-an-id-value",
            "apiKey": "cfg-2"}
    assert strip_secrets(node, references=frozenset({"cfg-1", "cfg-2"})) == {
        "id": "n1", "type": "custom", "auth": "cfg-1", "password": "cfg-1", "token": REDACTED, "apiKey": "cfg-2"}
    # Without the ids of the flows, the same values are treated as secrets.
    assert strip_secrets(node)["auth"] == REDACTED
    # References are kept at any depth (a rule or list holding a config node id).
    nested = strip_secrets({"id": "n2", "rules": [{"p": "password", "to": "cfg-1", "tot": "str"}]}, {"cfg-1"})
    assert nested["rules"][0]["to"] == "cfg-1"


@pytest.mark.parametrize(("text", "expected"), [
    ('const pw = "hunter2x";', f'const pw = "{REDACTED}";'),
    ('headers["X-API-Key"] = "k-123456";', f'headers["X-API-Key"] = "{REDACTED}";'),
    ('req.setHeader("Authorization", "Token abc123def");', f'req.setHeader("Authorization", "{REDACTED}");'),
    ('flow.set("dbPassword", "s3cr3t!");', f'flow.set("dbPassword", "{REDACTED}");'),
    ('if ("letmein1" === password) {}', f'if ("{REDACTED}" === password) {{}}'),
    ("Authorization: Basic dXNlcjpwYXNzd29yZA==", f"Authorization: {REDACTED}"),
    ("https://bob:hunter2@example.com/x", f"https://bob:{REDACTED}@example.com/x"),
    ("wss://example.com/socket?token=abc.def.ghi&room=1", f"wss://example.com/socket?token={REDACTED}&room=1"),
    # URL passwords with RFC 3986 sub-delimiters, without a user name, and a key-shaped token as the user name
    ("https://user:P4ssw0rd!x@db.example/x", f"https://user:{REDACTED}@db.example/x"),
    ("mqtt://u:abc&def9xyz@broker.example", f"mqtt://u:{REDACTED}@broker.example"),
    ("https://u:pa$$(word)*+,;=1@h.example/", f"https://u:{REDACTED}@h.example/"),
    ("https://:onlypassword99@h.example/", f"https://:{REDACTED}@h.example/"),
    ("https://ghx9Kq2Lm9Pr4Tv7Wy1Bn3Cd6FgHjR5s@github.example/org/repo.git",
     f"https://{REDACTED}@github.example/org/repo.git"),
    ("https://user:${DB_PASSWORD}@db.example/", None),
    ("mailto:ops@example.com and http://localhost:1880/admin", None),
    # key-shaped values of parameters with names that say nothing: 32+ hex, mixed base64/base64url, percent-encoded
    ("https://api.example.org/data/2.5/weather?q=Paris&appid=9f3c0a7e5b2d4c1e8a6f0b3d7c9e2a41",
     f"https://api.example.org/data/2.5/weather?q=Paris&appid={REDACTED}"),
    ("https://x.example/v1?k=Qm9yZWQgYXQgdGhlIGJlYWNoIHdpdGggYSBrZXkgaW4gYSBVUkw%3D&n=1",
     f"https://x.example/v1?k={REDACTED}&n=1"),
    ("https://x.example/cb#access=Zk3_pQ9-xR2vT8wL1mN4bY6cH0jD5sF7gK2a", f"https://x.example/cb#access={REDACTED}"),
    # ordinary parameters stay: node ids (16 hex), UUIDs, slugs, sequences
    ("https://x.example/n?node=a1b2c3d4e5f60718&id=123e4567-e89b-12d3-a456-426614174000", None),
    ("https://x.example/p?slug=my-long-descriptive-page-name-for-2024&hex=0123456789abcdef0123456789abcdef", None),
    ("Server=db;User Id=sa;Password=Pa55word;", f"Server=db;User Id=sa;Password={REDACTED};"),
    ("mysqldump --password s3cret db", f"mysqldump --password {REDACTED} db"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----\nnext", f"{REDACTED}\nnext"),
    # ordinary text is kept
    ("const password = msg.payload.password;", None),
    ("if (typeof token !== 'string') { return null; }", None),
    ('opts.headers.Authorization = "Basic " + Buffer.from(`${user}:${pass}`).toString("base64");', None),
    ("const id = 'a1b2c3d4e5f60718'; const uuid = '123e4567-e89b-12d3-a456-426614174000';", None),
    ("Authorization: Bearer {{token}}", None),
    ("The password field is required.", None),
])
def test_redact_text_finds_secrets_in_code_and_text_and_keeps_the_rest(text, expected):
    assert redact_text(text) == (text if expected is None else expected)


def test_redaction_of_function_code_is_fast_enough_for_large_tabs():
    # 100 KB of ordinary function code (Node-RED's own sources) with secrets sprinkled in.
    source = (NODERED_HOME.parent / "@node-red" / "nodes" / "core" / "function" / "10-function.js").read_text()
    lines = (source * 10)[:100_000].splitlines()
    for index in range(0, len(lines), 200):
        lines.insert(index, f'const apiKey{index} = "{_token(24)}";')
    code = "\n".join(lines)
    planted = sum(1 for line in lines if line.startswith("const apiKey"))
    started = time.perf_counter()
    redacted = redact_text(code, code=True)
    elapsed = time.perf_counter() - started
    assert redacted.count(REDACTED) == planted
    # About 0.03 s on one idle core: the bound (16×) is what a quadratic scan breaks (seconds), not a benchmark
    # (those are in `make bench`); five busy processes on 2 cores stay well under it.
    assert elapsed < 0.5, f"{elapsed:.3f} s for {len(code)} characters"


def _changed_values(before, after, path=()):
    if isinstance(before, dict):
        for key in before:
            yield from _changed_values(before[key], after.get(key), (*path, key)) if key in after else ()
    elif isinstance(before, list):
        for index, (a, b) in enumerate(zip(before, after)):
            yield from _changed_values(a, b, (*path, index))
    elif isinstance(before, str) and before != after:
        yield path, before[:120], str(after)[:120]


def test_false_positives_on_every_shipped_example_flow_and_on_node_red_code():
    files = sorted(EXAMPLES_DIR.rglob("*.json")) + [REPO / "examples" / "flows.json"]
    changed, nodes = [], 0
    for path in files:
        flows = json.loads(path.read_text(encoding="utf-8"))
        ids = {node["id"] for node in flows if isinstance(node, dict) and "id" in node}
        for node in flows:
            nodes += 1
            changed += [(path.name, *change) for change in _changed_values(node, strip_secrets(node, ids))]
    print(f"\nfalse positives: {len(changed)} values changed in {nodes} nodes of {len(files)} example files")
    assert len(files) > 100 and nodes > 900
    assert changed == []
    # Node-RED's own node code (about 550 KB of JavaScript) read as function code, and its help texts (10
    # languages, about 900 KB) read as templates: no line is touched.
    sources = sorted((NODERED_HOME.parent / "@node-red" / "nodes" / "core").rglob("*.js"))
    helps = sorted((NODERED_HOME.parent / "@node-red" / "nodes" / "locales").rglob("*.html"))
    touched = [(path.name, line) for path, code in [(p, True) for p in sources] + [(p, False) for p in helps]
               for text in [path.read_text(encoding="utf-8")]
               for line, kept in zip(text.splitlines(), redact_text(text, code=code).splitlines()) if line != kept]
    print(f"false positives: {len(touched)} lines changed in {len(sources) + len(helps)} source and help files")
    assert len(sources) > 30 and len(helps) > 100
    assert touched == []


# ---------------------------------------------------------------------------------------------------------------
# A real Node-RED with the planted tab deployed


@pytest.fixture(scope="module")
def planted_nodered(tmp_path_factory):
    """A Node-RED of its own with the planted tab deployed through the Admin API (credentials encrypted)."""
    instance = NodeRed(userdir=tmp_path_factory.mktemp("nodered-planted"), port=free_port(), with_palette=False)
    instance.start()
    request = urllib.request.Request(f"{instance.url}/flows", data=json.dumps(planted_flows()).encode(),
                                     method="POST", headers={"Content-Type": "application/json",
                                                             "Node-RED-Deployment-Type": "full"})
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 204
    yield instance
    instance.stop()


async def test_planted_secrets_reach_neither_model_nor_stream_nor_mcp_nor_database(
        planted_nodered, model, tmp_path, aiohttp_client, caplog):
    caplog.set_level(logging.DEBUG)
    async with aiohttp.ClientSession() as http, http.get(f"{planted_nodered.url}/flows") as response:
        deployed = await response.json()
    assert leaks(json.dumps(deployed)), "Node-RED itself keeps the planted values (except credentials)"
    node_ids = [node["id"] for node in planted_flows()[1:]]
    settings = Settings(token=SERVICE_SECRET, nodered=NodeRedSettings(url=planted_nodered.url),
                        openai_base_url=model.base_url,
                        openai_api_key=TEST_API_KEY, memory_db_path=tmp_path / "memory.db", mcp_tools_enabled=False,
                        knowledge_refresh=0)
    client = await aiohttp_client(create_app(settings))
    await client.server.app[KNOWLEDGE].refresher.refresh()  # the workspace index is in the database checked below
    model.script(Reply(text="It calls an API."),
                 Reply(tool_calls=[{"name": "get_node_info", "arguments": {"node_ids": node_ids}}]),
                 Reply(text="These nodes fetch items."),
                 Reply(text="The editor's copy does the same."))
    outputs = []
    for body in ({"message": "explain the current flow", "selectedFlow": {"id": "plant-tab"}},   # keyword-forced
                 {"message": "what do these nodes do?", "selectedFlow": {"id": "plant-tab"}},   # agent tool call
                 # the editor's own copy, credentials and all, as a careless client might send it
                 {"message": "explain the current flow", "selectedFlow": {"id": "plant-tab"},
                  "flowData": planted_flows()}):
        response = await client.post("/ai-sidebar/stream-chat",
                                     json={**body, "sessionId": "plant", "language": "en-US"})
        events = await read_events(response)
        assert [e["type"] for e in events if e["type"] == "error"] == [], events
        outputs.append(json.dumps(events))
    assert "tool_result" in outputs[0] and "tool_result" in outputs[1]
    for tool, params in (("get_flow", {"flow_id": "plant-tab"}), ("get_node_info", {"node_ids": node_ids})):
        response = await client.post("/ai-sidebar/execute-tool", json={"tool": tool, "params": params})
        assert response.status == 200
        outputs.append(await response.text())
    outputs.append(await (await client.get("/ai-sidebar/history/plant")).text())
    await client.close()  # flush and close the database

    async with stdio_session(NODE_RED_URL=planted_nodered.url) as session:
        for tool, params in (("get_flow", {"flow_id": "plant-tab"}), ("get_node_info", {"node_ids": node_ids})):
            result = await session.call_tool(tool, params)
            assert not result.isError, text_of(result)
            outputs.append(text_of(result) + json.dumps(result.structuredContent))

    prompts = json.dumps(model.requests)
    database = b"".join(path.read_bytes() for path in tmp_path.glob("memory.db*"))
    assert leaks(prompts) == []
    assert [leaks(output) for output in outputs] == [[]] * len(outputs)
    assert leaks(database.decode("utf-8", "replace")) == []
    assert leaks(caplog.text) == []
    # What the model and the MCP client see is still the flow: ids, wires and ordinary values.
    for value in ORDINARY + node_ids:
        assert value in prompts, value
        assert value in outputs[-2], value
