"""The user's own documents in the chat (issue 37), against a real Node-RED, the real LangChain client and the
scripted model, on SQLite and PostgreSQL: a document's fact reaches the model's prompt with its citation and the
answer's sources name it; after it is deleted it does not; another user never gets a private one; a shared one
reaches everyone; its secrets never reach the model."""

from __future__ import annotations

import json

import pytest

from service.web.app import create_app
from tests.conftest import MEMORY_BACKENDS
from tests.support.model_server import Reply
from tests.support.sse import read_events
from tests.test_documents import ALICE, BOB, MANUAL, URL, upload

QUESTION = "What is the maximum inlet pressure of pump P-7?"


@pytest.fixture(params=MEMORY_BACKENDS)
def memory_backend(request) -> str:
    return request.param


@pytest.fixture
async def docs_client(aiohttp_client, backend_settings):
    return await aiohttp_client(create_app(backend_settings))


async def ask(client, model, headers: dict, message: str = QUESTION) -> tuple[list[dict], str]:
    """Ask as the user of ``headers``; the events and everything the model was sent for the answer."""
    model.script(Reply(text="The answer."))
    asked = len(model.requests)
    response = await client.post("/ai-sidebar/stream-chat", json={"message": message, "language": "en-US"},
                                 headers=headers)
    assert response.status == 200, await response.text()
    events = await read_events(response)
    assert events[-1]["type"] == "done" and not [e for e in events if e["type"] == "error"], events
    return events, json.dumps([r["messages"] for r in model.requests[asked:]], ensure_ascii=False)


def document_results(events: list[dict]) -> list[dict]:
    return [e for e in events if e["type"] == "tool_result" and e["tool"] == "search_documents"]


async def test_a_documents_fact_is_cited_until_it_is_deleted(docs_client, model):
    response = await docs_client.post(URL, json=upload("pump-p7.md", MANUAL), headers=ALICE)
    assert response.status == 201, await response.text()
    document_id = (await response.json())["document"]["id"]

    events, sent = await ask(docs_client, model, ALICE)
    assert "6.5 bar" in sent and '[source: document \\"pump-p7.md\\", Limits]' in sent
    assert "hunter2-secret-37" not in sent
    [result] = document_results(events)
    assert result["sources"][0] == {"kind": "document", "id": document_id, "name": "pump-p7.md", "section": "Limits"}
    calls = [e for e in events if e["type"] == "tool_call" and e["tool"] == "search_documents"]
    assert calls and calls[0]["origin"] == "router"

    assert (await docs_client.delete(f"{URL}/{document_id}", headers=ALICE)).status == 200
    events, sent = await ask(docs_client, model, ALICE)
    assert "6.5 bar" not in sent and "pump-p7.md" not in sent and not document_results(events)


async def test_another_user_never_gets_a_private_document_but_everyone_gets_a_shared_one(docs_client, model):
    assert (await docs_client.post(URL, json=upload("pump-p7.md", MANUAL), headers=ALICE)).status == 201
    events, sent = await ask(docs_client, model, BOB)
    assert "6.5 bar" not in sent and "pump-p7.md" not in sent and not document_results(events)

    shared = upload("tags.md", "# Tag convention\nEvery zorblat tag is AREA-LINE-DEVICE.", shared=True)
    assert (await docs_client.post(URL, json=shared, headers=ALICE)).status == 201
    events, sent = await ask(docs_client, model, BOB, "How is a zorblat tag written?")
    assert "AREA-LINE-DEVICE" in sent and "6.5 bar" not in sent
    assert [s["name"] for s in document_results(events)[0]["sources"]] == ["tags.md"]


async def test_a_question_the_documents_do_not_answer_does_not_search_them_into_the_prompt(docs_client, model):
    assert (await docs_client.post(URL, json=upload("pump-p7.md", MANUAL), headers=ALICE)).status == 201
    events, sent = await ask(docs_client, model, ALICE, "Tell me a joke about cats")
    assert "6.5 bar" not in sent and not document_results(events)
