"""The settings model the service and the MCP server share: Node-RED part from the environment and the YAML file,
precedence, validation errors naming the variable, secrets hidden; both processes refusing bad NODE_RED_* values."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from mcp_server.server import NodeRedConfig
from mcp_server.settings import McpHttpSettings
from service.nodered.settings import NodeRedSettings, SettingsError
from service.settings import ENV_FIELDS, Settings
from service.tools.mcp_client import server_env
from tests.support.nodered import REPO, free_port

SECRET = "s3cr3t-value-never-shown-4711"


def test_node_red_variables_fill_the_core_model_and_the_service_settings():
    env = {"NODE_RED_URL": "https://nr.example:1880/admin", "NODE_RED_USERNAME": "reader",
           "NODE_RED_PASSWORD": SECRET, "NODE_RED_TOKEN": "tok-" + SECRET, "NODE_RED_TIMEOUT": "2.5"}
    core = NodeRedSettings.load(env)
    assert (core.url, core.username, core.timeout) == ("https://nr.example:1880/admin", "reader", 2.5)
    assert core.password.get_secret_value() == SECRET and core.token.get_secret_value() == "tok-" + SECRET
    credentials = core.credentials
    assert credentials.can_login and credentials.token == core.token
    assert Settings.from_env(env).nodered == core
    assert NodeRedConfig is NodeRedSettings, "the MCP server builds its server from the core model"


def test_empty_or_absent_variables_keep_the_documented_defaults():
    core = NodeRedSettings.load({"NODE_RED_URL": "", "NODE_RED_TIMEOUT": ""})
    assert (core.url, core.token, core.username, core.password, core.timeout) == (
        "http://127.0.0.1:1880", None, None, None, 10.0)
    http = McpHttpSettings.load({})
    assert (http.host, http.port, http.token) == ("127.0.0.1", 8766, None)


def test_only_the_documented_variables_are_read(monkeypatch):
    # A field without a variable is not read from one named like it, and a model built by hand ignores os.environ.
    settings = Settings.from_env({"max_message_chars": "5", "templates_path": "/x", "nodered": "{}", "host": "h"})
    assert (settings.max_message_chars, settings.host) == (10_000, "127.0.0.1")
    monkeypatch.setenv("NODE_RED_URL", "http://from-environ:1880")
    assert NodeRedSettings().url == "http://127.0.0.1:1880"
    assert NodeRedSettings.load().url == "http://from-environ:1880"
    assert set(ENV_FIELDS) >= {"NODE_RED_URL", "NODE_RED_TOKEN", "NODE_RED_USERNAME", "NODE_RED_PASSWORD",
                               "NODE_RED_TIMEOUT", "AI_SIDEBAR_TOKEN", "AI_SIDEBAR_PORT", "MCP_TOOLS_ENABLED"}


def test_the_yaml_file_holds_node_red_names_too_and_the_environment_wins(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text("node_red_url: http://from-file:1880\nNODE_RED_TIMEOUT: 3\nNODE_RED_USERNAME: u\n"
                      "NODE_RED_PASSWORD: p\nAI_SIDEBAR_PORT: 9001\n")
    settings = Settings.from_env({"AI_SIDEBAR_CONFIG": str(config), "NODE_RED_TIMEOUT": "4"})
    assert (settings.nodered.url, settings.nodered.timeout, settings.nodered.username) == (
        "http://from-file:1880", 4.0, "u")
    assert settings.port == 9001


@pytest.mark.parametrize("env,names", [
    ({"NODE_RED_URL": f"ftp://admin:{SECRET}@host:1880"}, ["NODE_RED_URL"]),
    ({"NODE_RED_URL": "127.0.0.1:1880"}, ["NODE_RED_URL"]),
    ({"NODE_RED_URL": "http://"}, ["NODE_RED_URL"]),
    ({"NODE_RED_TIMEOUT": "0"}, ["NODE_RED_TIMEOUT"]),
    ({"NODE_RED_TIMEOUT": "ten", "NODE_RED_TOKEN": SECRET}, ["NODE_RED_TIMEOUT"]),
    ({"NODE_RED_USERNAME": "reader"}, ["NODE_RED_USERNAME", "NODE_RED_PASSWORD"]),
])
def test_bad_node_red_values_name_the_variable_and_never_a_secret(env, names):
    for build in (NodeRedSettings.load, Settings.from_env):
        with pytest.raises(SettingsError) as raised:
            build(env)
        message = str(raised.value)
        assert all(name in message for name in names), message
        assert SECRET not in message


def test_a_password_alone_is_accepted_as_before():
    # The service never required a username with a password (the password grant then simply is not used).
    assert not NodeRedSettings.load({"NODE_RED_PASSWORD": SECRET}).credentials.can_login


@pytest.mark.parametrize("content,expected", [
    (None, "cannot be read"),
    ("a: [unclosed\n", "cannot be read"),
    ("- a list\n", "must hold a mapping"),
    ("NODE_RED_URLS: http://x\n", "unknown setting 'NODE_RED_URLS'"),
])
def test_a_bad_yaml_file_is_named(tmp_path, content, expected):
    config = tmp_path / "config.yaml"
    if content is not None:
        config.write_text(content)
    with pytest.raises(SettingsError, match=expected) as raised:
        Settings.from_env({"AI_SIDEBAR_CONFIG": str(config)})
    assert "AI_SIDEBAR_CONFIG" in str(raised.value)


def test_secrets_stay_hidden_in_repr_of_every_model():
    env = {"NODE_RED_TOKEN": SECRET, "NODE_RED_USERNAME": "u", "NODE_RED_PASSWORD": SECRET,
           "MCP_HTTP_TOKEN": SECRET}
    for model in (NodeRedSettings.load(env), Settings.from_env(env), McpHttpSettings.load(env)):
        assert SECRET not in repr(model) and SECRET not in str(model)
    assert McpHttpSettings.load(env).token.get_secret_value() == SECRET


def test_mcp_http_flags_win_over_the_environment_and_a_public_bind_needs_a_token():
    http = McpHttpSettings.load({"MCP_HTTP_TOKEN": "from-env"}, token="from-flag", host="0.0.0.0", port=9)
    assert (http.token.get_secret_value(), http.host, http.port) == ("from-flag", "0.0.0.0", 9)
    http.check_bind()
    with pytest.raises(SettingsError, match="MCP_HTTP_TOKEN"):
        McpHttpSettings.load({}, host="0.0.0.0").check_bind()
    McpHttpSettings.load({}, host="::1").check_bind()
    with pytest.raises(SettingsError, match="port"):
        McpHttpSettings.load({}, port=70_000)


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without any setting the children read, plus ``extra``."""
    drop = set(ENV_FIELDS) | {"AI_SIDEBAR_CONFIG", "MCP_HTTP_TOKEN"}
    return {**{k: v for k, v in os.environ.items() if k not in drop}, **extra}


@pytest.mark.parametrize("module", ["mcp_server", "service"])
@pytest.mark.parametrize("env,names", [
    ({"NODE_RED_URL": f"ftp://admin:{SECRET}@127.0.0.1:1880"}, ["NODE_RED_URL"]),
    ({"NODE_RED_USERNAME": "reader", "NODE_RED_TOKEN": SECRET}, ["NODE_RED_USERNAME", "NODE_RED_PASSWORD"]),
])
def test_both_processes_refuse_bad_node_red_settings_at_start(module, env, names):
    args = [sys.executable, "-m", module]
    if module == "mcp_server":
        args += ["--transport", "http", "--port", str(free_port())]
    done = subprocess.run(args, env=clean_env(AI_SIDEBAR_PORT=str(free_port()), **env), cwd=REPO,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert all(name in done.stderr for name in names), done.stderr
    assert SECRET not in done.stderr + done.stdout
    assert done.stdout == ""


def test_the_mcp_server_refuses_a_port_out_of_range():
    done = subprocess.run([sys.executable, "-m", "mcp_server", "--transport", "http", "--port", "70000"],
                          env=clean_env(), cwd=REPO, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2 and "port" in done.stderr, done.stderr


def test_the_mcp_child_gets_the_node_red_timeout_of_the_settings_file(tmp_path):
    config = tmp_path / "ai-sidebar.yaml"
    config.write_text("NODE_RED_TIMEOUT: 3\n")
    settings = Settings.from_env({"AI_SIDEBAR_CONFIG": str(config)})
    assert server_env(settings, base={})["NODE_RED_TIMEOUT"] == "3.0"
