"""Secrets in flows, keys and tokens never reach a response, a log line, the database or a prompt."""

from __future__ import annotations

import json
import logging

from service.web.app import create_app
from tests.conftest import TEST_API_KEY
from tests.support.model_server import Reply
from tests.support.sse import read_events

FLOW_SECRETS = ["sk-live-THISISASECRETKEY12345", "hunter2-password", "ghp_abcdefghijklmnopqrstuvwxyz123456",
                "cred-env-value-9", "node-credential-xyz"]
USER_TOKEN = "editor-user-token-0123456789abcdef"


def secret_flow():
    tab = {"id": "sec-tab", "type": "tab", "label": "Secrets",
           "env": [{"name": "API_TOKEN", "value": "cred-env-value-9", "type": "cred"}]}
    return [tab,
            {"id": "sec-f", "type": "function", "z": "sec-tab", "x": 1, "y": 1, "name": "call api",
             "func": 'const key = "sk-live-THISISASECRETKEY12345";\nmsg.headers = {"x-gh": "ghp_abcdefghijklmnopqrstu'
                     'vwxyz123456"};\nreturn msg;', "wires": [["sec-h"]]},
            {"id": "sec-h", "type": "http request", "z": "sec-tab", "x": 2, "y": 1, "password": "hunter2-password",
             "credentials": {"user": "bob", "password": "node-credential-xyz"}, "wires": [[]]}]


async def test_flow_secrets_keys_and_tokens_stay_out_of_everything(aiohttp_client, settings, model, caplog):
    caplog.set_level(logging.DEBUG)
    client = await aiohttp_client(create_app(settings))
    headers = {"X-Node-RED-Token": USER_TOKEN, "X-Node-RED-User": "gina"}
    model.script(Reply(tool_calls=[{"name": "get_flow", "arguments": {"flow_id": "sec-tab"}}]),
                 Reply(text="It calls an API."), Reply(text="Done."))
    answers = []
    for message in ("what does this tab do?", "explain the current flow"):
        response = await client.post("/ai-sidebar/stream-chat", headers=headers, json={
            "message": message, "sessionId": "sec", "selectedFlow": {"id": "sec-tab"}, "flowData": secret_flow()})
        answers.append(json.dumps(await read_events(response)))
    answers.append(await (await client.get("/ai-sidebar/history/sec", headers=headers)).text())
    answers.append(await (await client.post("/ai-sidebar/execute-tool", headers=headers,
                                            json={"tool": "get_flow", "params": {"flow_id": "sec-tab"}})).text())
    await client.close()  # flush and close the database

    prompts = json.dumps(model.requests) + json.dumps([{k: v for k, v in h.items() if k != "Authorization"}
                                                       for h in model.headers])
    database = settings.memory_db_path.read_bytes()
    wal = settings.memory_db_path.with_name(settings.memory_db_path.name + "-wal")
    database += wal.read_bytes() if wal.exists() else b""
    assert "sec-f" in answers[0] and "call api" in prompts  # the flow itself did get through
    for secret in FLOW_SECRETS + [TEST_API_KEY, USER_TOKEN]:
        assert secret not in caplog.text, secret
        assert all(secret not in answer for answer in answers), secret
        assert secret.encode() not in database, secret
        if secret != TEST_API_KEY:  # the key goes to the provider in its Authorization header only
            assert secret not in prompts, secret
