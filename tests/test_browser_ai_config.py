"""The ai-config node's external MCP servers in its edit dialog (issue 22), in a real headless Chromium against a
real Node-RED (adminAuth, under /admin) and the service as a process: secret values are never shown, a changed
secret asks for every value again, and what the dialog saves is deployed as node properties plus an encrypted
credential that the Node-RED runtime sends on to the service."""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request

from tests.support.azure_server import ScriptedAzureServer
from tests.support.model_server import Reply
from tests.support.nodered import free_port
from tests.test_browser_sidebar import (  # noqa: F401  (auth_stack and browser_installed are fixtures)
    PASSWORD,
    USERNAME,
    admin_request,
    admin_token,
    ai_config,
    auth_stack,
    browser_installed,
    deploy,
    pytestmark,
    run_browser,
    tab_named,
)

SAVED_HEADER = "Bearer saved-header-value-5d21"
TYPED_HEADER = "Bearer typed-header-value-7a90"
ENV_VALUE = "tracker-token-typed-3c44"


def test_the_dialog_edits_mcp_servers_without_showing_a_secret_and_deploys_them_as_credentials(
        auth_stack, model_server):  # noqa: F811 (the fixture)
    nodered, _ = auth_stack
    token = admin_token(nodered)
    original = admin_request(nodered, token, "GET", "/flows")
    config = ai_config("alpha", model_server.base_url)
    config["mcpServers"] = [{"id": "srv1", "name": "docs", "transport": "http", "url": "https://docs.example.com/mcp",
                             "secrets": ["Authorization"], "unset": []}]
    config["credentials"]["mcpSecrets"] = json.dumps({"srv1": {"Authorization": SAVED_HEADER}})
    deploy(nodered, token, original + [config])
    try:
        seen = run_browser("ai_config_mcp.js", {"EDITOR_URL": nodered.url, "CONFIG_ID": config["id"],
                                                "USERNAME": USERNAME, "PASSWORD": PASSWORD,
                                                "HEADER_VALUE": TYPED_HEADER, "ENV_VALUE": ENV_VALUE})
        assert "failure" not in seen, seen["failure"]
        assert seen["pageErrors"] == [], seen["pageErrors"]
        for screenshot in seen.get("screenshots", []):
            assert os.path.getsize(screenshot) > 10_000, screenshot

        # The saved server: its URL and the header's name, the value's field empty (a password field) and saying
        # the value is saved.
        (docs,) = seen["opened"]["rows"]
        assert (docs["name"], docs["transport"], docs["url"]) == ("docs", "http", "https://docs.example.com/mcp")
        assert docs["urlShown"] and not docs["commandShown"] and docs["secretsLabel"].startswith("Headers")
        assert docs["secrets"] == [{"name": "Authorization", "value": "", "type": "password",
                                    "placeholder": "saved; leave empty to keep", "marked": False}]
        assert seen["opened"]["retypeShown"] is False
        assert seen["addedAsHttp"] == {"urlShown": True, "commandShown": False}

        # A new value typed: the saved one cannot be read back, so the dialog asks for it again until it is typed.
        assert seen["afterTyping"]["retypeShown"] is True
        assert seen["afterTyping"]["rows"][0]["secrets"][0]["marked"] is True
        tracker = seen["afterTyping"]["rows"][1]
        assert tracker["commandShown"] and not tracker["urlShown"]
        assert tracker["secretsLabel"].startswith("Environment variables")
        assert seen["afterRetyping"]["retypeShown"] is False
        assert not [s for row in seen["afterRetyping"]["rows"] for s in row["secrets"] if s["marked"]]

        # Deployed: names in the flows, values only in the encrypted credential; reopened, nothing is shown.
        reopened = seen["reopened"]["rows"]
        assert [(row["name"], row["transport"]) for row in reopened] == [("docs", "http"), ("tracker", "stdio")]
        assert reopened[1]["command"] == "npx" and reopened[1]["args"] == '-y tracker-mcp --board "Line 3"'
        assert [s["value"] for row in reopened for s in row["secrets"]] == ["", ""]
        flows = admin_request(nodered, token, "GET", "/flows")
        saved = next(node for node in flows if node["id"] == config["id"])
        assert [(s["name"], s["secrets"], s["unset"]) for s in saved["mcpServers"]] == \
            [("docs", ["Authorization"], []), ("tracker", ["TRACKER_TOKEN"], [])]
        shown = admin_request(nodered, token, "GET", f"/credentials/ai-config/{config['id']}")
        assert shown == {"has_apiKey": True, "has_mcpSecrets": True}
        for secret in (SAVED_HEADER, TYPED_HEADER, ENV_VALUE):
            assert secret.split()[-1] not in json.dumps(flows)
            for path in nodered.userdir.rglob("*"):
                if path.is_file() and path.stat().st_size < 5_000_000:
                    assert secret.split()[-1] not in path.read_text(errors="replace"), path

        # The runtime sends them on: the service refuses the stdio server of a node (AI_SIDEBAR_MCP_REQUEST_STDIO is
        # off), naming it, before any model call.
        answer = admin_request_status(nodered, token, "/ai-sidebar/stream-chat",
                                      {"message": "hello", "configId": config["id"]})
        assert answer[0] == 403 and answer[1]["error"]["code"] == "mcp_stdio_not_allowed"
        assert "tracker" in answer[1]["error"]["message"]
    finally:
        deploy(nodered, token, original)


def admin_request_status(nodered, token: str, path: str, body: dict) -> tuple[int, dict]:
    """POST ``body`` to the editor's admin ``path``: ``(status, JSON answer)``, also for a 4xx."""
    request = urllib.request.Request(f"{nodered.url}{path}", method="POST", data=json.dumps(body).encode(),
                                     headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_the_sidebar_names_the_chosen_configs_mcp_server_that_cannot_be_reached(auth_stack, model_server,  # noqa: F811
                                                                              model):
    nodered, _ = auth_stack
    token = admin_token(nodered)
    original = admin_request(nodered, token, "GET", "/flows")
    config = ai_config("alpha", model_server.base_url)
    config["mcpServers"] = [{"id": "srv1", "name": "wiki", "transport": "http",
                             "url": f"http://127.0.0.1:{free_port()}/mcp", "secrets": [], "unset": []}]
    tab = tab_named(nodered, "01 - Catch error")
    model.script(Reply(text="Answered without the wiki."))
    deploy(nodered, token, original + [config])
    try:
        seen = run_browser("sidebar_mcp_notice.js", {"EDITOR_URL": nodered.url, "TAB_ID": tab["id"],
                                                     "CONFIG_ID": config["id"], "QUESTION": "what does the wiki say?",
                                                     "USERNAME": USERNAME, "PASSWORD": PASSWORD})
    finally:
        deploy(nodered, token, original)
    assert "failure" not in seen, seen["failure"]
    assert seen["pageErrors"] == [], seen["pageErrors"]
    assert "Answered without the wiki." in seen["answer"]
    # (A knowledge_index_building notice may come first: this stack's service has no Node-RED account of its own.)
    (notice,) = [n for n in seen["notices"] if n["code"] == "mcp_server_unavailable"]
    assert (notice["code"], notice["server"], notice["shownFirst"]) == ("mcp_server_unavailable", "wiki", "wiki")
    assert notice["text"].startswith("wiki — The MCP server wiki is unavailable (")
    assert "fa-plug" in notice["icon"]


def test_the_dialog_configures_an_azure_deployment_that_then_answers_without_tools(auth_stack, model_server):  # noqa: F811
    nodered, _ = auth_stack
    token = admin_token(nodered)
    original = admin_request(nodered, token, "GET", "/flows")
    config = ai_config("alpha", model_server.base_url)
    deploy(nodered, token, original + [config])
    azure_key = "5e1f0c2b9a8d7e6f5a4b3c2d1e0f9a8b"
    with ScriptedAzureServer(deployments={"gpt4o-mini-prod"}, accepted_keys={azure_key}) as azure:
        try:
            seen = run_browser("ai_config_azure.js", {"EDITOR_URL": nodered.url, "CONFIG_ID": config["id"],
                                                      "USERNAME": USERNAME, "PASSWORD": PASSWORD,
                                                      "ENDPOINT": azure.base_url, "API_KEY": azure_key})
            assert "failure" not in seen, seen["failure"]
            assert seen["pageErrors"] == [], seen["pageErrors"]
            for screenshot in seen.get("screenshots", []):
                assert os.path.getsize(screenshot) > 10_000, screenshot
            # The Azure fields only for Azure OpenAI, with its hints; refused names marked until corrected.
            assert seen["opened"]["azureShown"] is False
            invalid, valid = seen["invalid"], seen["valid"]
            assert invalid["azureShown"] and invalid["providerLabel"] == "Azure OpenAI"
            assert invalid["hint"].startswith("Your Azure OpenAI resource") and "deployment" in invalid["azureHint"]
            assert invalid["deploymentMarked"] and invalid["versionMarked"]
            assert not valid["deploymentMarked"] and not valid["versionMarked"]
            assert valid["toolCallingLabel"] == "The model can call tools (function calling)"

            # Deployed as node properties, the key as a credential.
            deadline = time.monotonic() + 20
            saved: dict = {}
            while time.monotonic() < deadline and saved.get("provider") != "azure-openai":
                flows = admin_request(nodered, token, "GET", "/flows")
                saved = next(node for node in flows if node["id"] == config["id"])
                time.sleep(0.2)
            assert (saved["provider"], saved["baseUrl"], saved["deployment"], saved["apiVersion"],
                    saved["toolCalling"]) == ("azure-openai", azure.base_url, "gpt4o-mini-prod",
                                              "2025-01-01-preview", False)
            assert azure_key not in json.dumps(flows)

            # The runtime sends them on: the deployment answers, asked with its key and version, offered no tools.
            azure.script(Reply(text="Answered by the Azure deployment."))
            request = urllib.request.Request(
                f"{nodered.url}/ai-sidebar/stream-chat", method="POST",
                data=json.dumps({"message": "What could go wrong here?", "configId": config["id"]}).encode(),
                headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=60) as response:
                stream = response.read().decode()
            events = [json.loads(line[5:]) for line in stream.splitlines() if line.startswith("data:")]
            assert "".join(e["content"] for e in events if e["type"] == "token") == \
                "Answered by the Azure deployment.", events
            assert [e["code"] for e in events if e["type"] == "notice"] == ["model_without_tools"]
            assert azure.calls == [("gpt4o-mini-prod", "2025-01-01-preview")]
            assert azure.headers[0]["api-key"] == azure_key and "tools" not in azure.requests[0]
        finally:
            deploy(nodered, token, original)
