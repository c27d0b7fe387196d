"""Where the MCP servers of a request may be (issue 29): an ``ai-config`` node's streamable HTTP server whose host
is, or resolves to, a loopback, private, link-local or other non-public address is refused with 400
``mcp_url_not_allowed`` before anything is sent to it, unless the operator allows the host or range in
``AI_SIDEBAR_MCP_ALLOWED_HOSTS``; every request the server's client sends, redirects included, goes only to an
address that was checked; the log names the URL's origin, never its path, query or headers.

The servers are real: small aiohttp listeners that count what reaches them (on 127.0.0.1 and 127.0.0.2, both
loopback on Linux, so one can be allowed and the other not) and the SDK's FastMCP over streamable HTTP
(``tests.support.many_tools_server``, the ``http_mcp`` fixture of test_ai_config_mcp).
"""

from __future__ import annotations

import ipaddress
import logging

import pytest
from aiohttp import web

from service.mcp_addresses import AddressPolicy, is_public
from service.settings import McpServerConfig, Settings, SettingsError
from service.tools.external_mcp import ExternalServers
from service.tools.mcp_http import RefusedAddress, pinned_client_factory
from service.web.app import create_app
from tests.support.model_server import Reply
from tests.support.sse import read_events
from tests.test_ai_config_mcp import chat, http_mcp, provider, whoami_result  # noqa: F401 (http_mcp: a fixture)

SECRET_QUERY = "key=query-secret-6b1f0e"
HEADER_VALUE = "Bearer header-secret-2c8d4a"


class Listener:
    """An HTTP server on ``host`` that records each request (``Host`` header, path) and answers ``answer``."""

    def __init__(self, answer=None):
        self.seen: list[tuple[str, str]] = []
        self.answer = answer or (lambda request: web.json_response({"error": "not an MCP server"}, status=404))

    async def start(self, aiohttp_server, host: str = "127.0.0.1") -> Listener:
        async def handle(request: web.Request) -> web.StreamResponse:
            self.seen.append((request.host, request.path_qs))
            return self.answer(request)
        app = web.Application()
        app.router.add_route("*", "/{path:.*}", handle)
        self.server = await aiohttp_server(app, host=host)
        self.port = self.server.port
        return self


def names(table: dict[str, str]):
    """A resolver answering from ``table`` (host name → address), as a DNS server would; others do not resolve."""
    async def resolver(host: str, port: int) -> list:
        if host not in table:
            raise OSError(f"{host} does not resolve")
        return [ipaddress.ip_address(table[host])]
    return resolver


async def test_an_ai_config_server_on_127_0_0_1_is_refused_and_its_listener_gets_no_request(
        aiohttp_client, aiohttp_server, settings, model, caplog):
    listener = await Listener().start(aiohttp_server)
    origin = f"http://127.0.0.1:{listener.port}"
    docs = {"name": "docs", "url": f"{origin}/tenant-path/mcp?{SECRET_QUERY}",
            "headers": {"Authorization": HEADER_VALUE}}
    client = await aiohttp_client(create_app(settings))
    caplog.set_level(logging.DEBUG)
    status, body = await chat(client, "hello", provider=provider(model, docs))
    assert status == 400 and body["error"]["code"] == "mcp_url_not_allowed", body
    message = body["error"]["message"]
    assert "docs" in message and origin in message and "AI_SIDEBAR_MCP_ALLOWED_HOSTS" in message
    assert "tenant-path" not in message and "query-secret" not in message
    assert listener.seen == [] and model.requests == []
    # The operator's log names the origin, never the path, query or headers.
    assert origin in caplog.text
    assert "tenant-path" not in caplog.text and "query-secret" not in caplog.text and "header-secret" not in caplog.text

    status, body = await chat(client, "hallo", provider=provider(model, docs), language="de")
    assert status == 400 and body["error"]["message"].startswith(f"Der MCP-Server docs des ai-config-Nodes liegt "
                                                                 f"unter {origin}")
    assert listener.seen == []


@pytest.mark.parametrize("host", ["localhost", "[::1]", "10.1.2.3", "169.254.169.254", "[::ffff:127.0.0.1]",
                                  "0.0.0.0", "[fd00::1]", "100.64.0.1"])
async def test_an_ai_config_server_on_a_name_or_address_that_is_not_public_is_refused(
        aiohttp_client, aiohttp_server, settings, model, host):
    listener = await Listener().start(aiohttp_server)  # 127.0.0.1: where localhost, ::ffff:127.0.0.1, 0.0.0.0 lead
    origin = f"http://{host}:{listener.port}"
    client = await aiohttp_client(create_app(settings))
    docs = {"name": "docs", "url": f"{origin}/mcp", "startTimeout": 3}
    status, body = await chat(client, "hello", provider=provider(model, docs))
    assert status == 400 and body["error"]["code"] == "mcp_url_not_allowed", body
    assert origin in body["error"]["message"]
    assert listener.seen == [] and model.requests == []


@pytest.mark.parametrize(("allowed", "host"), [("127.0.0.0/8", "127.0.0.1"), ("127.0.0.1", "127.0.0.1"),
                                               ("localhost", "localhost")])
async def test_with_the_operators_allow_list_the_same_server_is_reached_and_works(aiohttp_client, settings, model,
                                                                                  http_mcp, allowed, host):  # noqa: F811
    url = http_mcp[0].replace("127.0.0.1", host)
    docs = {"name": "docs", "url": url, "headers": {"Authorization": HEADER_VALUE}}
    refusing = await aiohttp_client(create_app(settings))
    status, body = await chat(refusing, "who calls the docs server?", provider=provider(model, docs))
    assert status == 400 and body["error"]["code"] == "mcp_url_not_allowed"

    allowing = await aiohttp_client(create_app(settings.model_copy(update={"mcp_allowed_hosts": allowed})))
    model.script(Reply(tool_calls=[{"name": "docs__whoami", "arguments": {}}]), Reply(text="Answered."))
    status, events = await chat(allowing, "who calls the docs server?", provider=provider(model, docs))
    assert status == 200 and not [e for e in events if e["type"] in ("error", "notice")], events
    assert f"authorization={HEADER_VALUE}" in whoami_result(events)


async def test_a_redirect_to_a_loopback_address_is_refused_at_the_redirect(aiohttp_server, caplog):
    """A server on an allowed address (127.0.0.2, reached by a public-looking name) answers 307 to a loopback one
    (127.0.0.1) that is not allowed: the redirect is not sent, whoever follows it. The SDK installed today follows
    only redirects within the server's origin; mcp before 1.2x let httpx follow every redirect
    (``follow_redirects=True`` in its client factory), which is what this client is asked to do here."""
    target = await Listener(lambda request: web.json_response({"reached": True})).start(aiohttp_server)
    redirecting = await Listener(lambda request: web.Response(
        status=307, headers={"Location": f"http://127.0.0.1:{target.port}/mcp?{SECRET_QUERY}"})).start(
        aiohttp_server, host="127.0.0.2")
    policy = AddressPolicy(networks=(ipaddress.ip_network("127.0.0.2/32"),),
                           resolver=names({"mcp.example.com": "127.0.0.2"}))
    caplog.set_level(logging.INFO)
    async with pinned_client_factory(policy)(headers={"Authorization": HEADER_VALUE}) as client:
        with pytest.raises(RefusedAddress, match=f"http://127.0.0.1:{target.port} is not on a public address"):
            await client.post(f"http://mcp.example.com:{redirecting.port}/mcp", json={"jsonrpc": "2.0"},
                              follow_redirects=True)
    # The first request went to the address the name was checked at (no other resolver knows the name), with the
    # name as its Host; the redirect reached nothing.
    assert redirecting.seen == [(f"mcp.example.com:{redirecting.port}", "/mcp")]
    assert target.seen == []
    assert f"http://127.0.0.1:{target.port}" in caplog.text and "query-secret" not in caplog.text


async def test_a_request_servers_connection_goes_to_the_checked_address_or_nowhere(aiohttp_server, caplog):
    """The service's own wiring (the pool, the SDK's streamable HTTP client): a name that resolves to loopback
    (as a rebinding DNS server would answer after a public address) gets no request; once its range is allowed,
    the request goes to the address the check saw, under the name."""
    listener = await Listener().start(aiohttp_server)
    caplog.set_level(logging.INFO)
    config = McpServerConfig(name="docs", url=f"http://mcp.example.com:{listener.port}/mcp?{SECRET_QUERY}",
                             startTimeout=5)
    resolver = names({"mcp.example.com": "127.0.0.1"})
    refusing = ExternalServers([]).with_servers([config], AddressPolicy(resolver=resolver))
    allowing = ExternalServers([]).with_servers(
        [config], AddressPolicy(networks=(ipaddress.ip_network("127.0.0.0/8"),), resolver=resolver))
    try:
        await refusing.start()
        assert "is not on a public address" in refusing.unavailable()["docs"]
        assert listener.seen == []
        await allowing.start()  # the listener is no MCP server: the start fails after the request reached it
        assert listener.seen and listener.seen[0] == (f"mcp.example.com:{listener.port}", f"/mcp?{SECRET_QUERY}")
    finally:
        await refusing.close()
        await allowing.close()
    # The service's log (the listener's own access log aside) names the origin: httpx's request line too.
    service_log = "\n".join(record.getMessage() for record in caplog.records if record.name != "aiohttp.access")
    assert f"http://mcp.example.com:{listener.port}" in service_log and "query-secret" not in service_log
    assert "HTTP Request: POST http://mcp.example.com" in service_log


@pytest.mark.parametrize("address", [
    "127.0.0.1", "127.9.9.9", "10.0.0.1", "172.16.0.1", "192.168.1.1", "100.64.0.1", "169.254.169.254", "0.0.0.0",
    "224.0.0.1", "255.255.255.255", "::1", "::", "fc00::1", "fd12::1", "fe80::1", "fec0::1", "ff02::1",
    "::ffff:127.0.0.1", "::ffff:169.254.169.254", "::ffff:10.0.0.1", "::127.0.0.1", "64:ff9b::a9fe:a9fe",
    "2002:7f00:1::1"])
def test_non_public_addresses_and_their_ipv6_forms_are_not_public(address):
    assert not is_public(ipaddress.ip_address(address))
    assert not AddressPolicy().allows(ipaddress.ip_address(address))


@pytest.mark.parametrize("address", ["8.8.8.8", "1.1.1.1", "2001:4860:4860::8888", "::ffff:8.8.8.8"])
def test_public_addresses_are_allowed(address):
    assert is_public(ipaddress.ip_address(address))


def test_the_allow_list_takes_names_wildcards_addresses_and_ranges():
    policy = Settings.from_env(
        {"AI_SIDEBAR_MCP_ALLOWED_HOSTS": "MCP.internal., *.corp.example 10.0.0.0/8,[::1], 127.0.0.1"}
    ).mcp_address_policy
    assert policy.allows_name("mcp.internal") and policy.allows_name("wiki.corp.example")
    assert not policy.allows_name("corp.example") and not policy.allows_name("mcp.internal.evil.example")
    assert policy.allows(ipaddress.ip_address("10.200.0.1")) and policy.allows(ipaddress.ip_address("::1"))
    assert policy.allows(ipaddress.ip_address("::ffff:127.0.0.1"))
    assert not policy.allows(ipaddress.ip_address("127.0.0.2"))
    assert not policy.allows(ipaddress.ip_address("192.168.0.1"))
    with pytest.raises(SettingsError, match="AI_SIDEBAR_MCP_ALLOWED_HOSTS"):
        Settings.from_env({"AI_SIDEBAR_MCP_ALLOWED_HOSTS": "http://mcp.internal/"})


async def test_a_host_that_is_no_valid_name_is_a_server_that_does_not_resolve_not_a_500(aiohttp_client, settings,
                                                                                         model):
    with pytest.raises(OSError, match="not a valid name"):
        await AddressPolicy().check("http://\x80/mcp")
    client = await aiohttp_client(create_app(settings))
    model.script(Reply(text="Hello."))
    status, body = await chat(client, "hello", provider=provider(model, {"name": "odd", "url": "http://\x80/mcp",
                                                                         "startTimeout": 3}))
    assert status == 200, body


async def test_the_services_own_servers_are_not_checked(aiohttp_client, settings, model, http_mcp):  # noqa: F811
    own = McpServerConfig(name="docs", url=http_mcp[0], headers={"Authorization": HEADER_VALUE})
    client = await aiohttp_client(create_app(settings.model_copy(update={"mcp_servers": [own]})))
    model.script(Reply(tool_calls=[{"name": "docs__whoami", "arguments": {}}]), Reply(text="Answered."))
    response = await client.post("/ai-sidebar/stream-chat", json={"message": "who calls the docs server?"})
    assert response.status == 200
    events = await read_events(response)
    assert f"authorization={HEADER_VALUE}" in whoami_result(events)
