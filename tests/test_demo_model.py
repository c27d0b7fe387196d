"""The README's way to try the sidebar without a model: ``python -m tests.support.model_server`` serves echo answers
on a port, and the service set to ``openai-compatible`` at it answers through the real ``ChatOpenAI`` client."""

from __future__ import annotations

import subprocess
import sys

from service.web.app import create_app
from tests.support.health import stop_process
from tests.support.nodered import REPO, free_port
from tests.support.sse import read_events


async def test_the_stand_alone_scripted_model_answers_the_service_with_what_it_received(aiohttp_client, settings):
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "tests.support.model_server", "--port", str(port)], cwd=REPO,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert "scripted model server on" in (server.stdout.readline() if server.stdout else "")
        demo = settings.model_copy(update={"provider": "openai-compatible", "model": "demo", "openai_api_key": None,
                                           "openai_base_url": f"http://127.0.0.1:{port}/v1"})
        client = await aiohttp_client(create_app(demo))
        response = await client.post("/ai-sidebar/stream-chat", json={"message": "What does a switch node do?"})
        events = await read_events(response)
    finally:
        stop_process(server)
    text = "".join(e["content"] for e in events if e["type"] == "token")
    assert text.startswith("(Scripted test model, not a real LLM.)") and "What does a switch node do?" in text
    assert events[-1]["type"] == "done" and not [e for e in events if e["type"] == "error"]
