"""The document library (issue 37), the third knowledge store, over HTTP on SQLite and on a real PostgreSQL: add
(Markdown, text, HTML, PDF), replace by name, delete, list with chunk counts and stats, search; shared documents
need write permission, private ones are their owner's alone; limits and unreadable files give the locales' 4xx
errors and store nothing; secrets are redacted before anything is stored."""

from __future__ import annotations

import base64
import re

import pytest

from service.web.app import create_app
from tests.conftest import MEMORY_BACKENDS
from tests.test_attachments import pdf

ALICE = {"X-Node-RED-User": "alice"}
BOB = {"X-Node-RED-User": "bob"}
ALICE_READ_ONLY = {"X-Node-RED-User": "alice", "X-AI-Sidebar-Permission": "read"}
URL = "/ai-sidebar/knowledge/documents"

MANUAL = """# Pump P-7 manual

Installed in hall 3.

## Limits

The maximum inlet pressure of pump P-7 is 6.5 bar. Above that the relief valve opens.

```
# not a heading: a comment in code
```

## Maintenance

Replace the zorblat seal every 4000 operating hours. The service password=hunter2-secret-37 opens the panel.
"""


def upload(name: str, content: bytes | str, shared: bool = False, **extra) -> dict:
    data = content.encode() if isinstance(content, str) else content
    return {"name": name, "data": base64.b64encode(data).decode(), "shared": shared, **extra}


@pytest.fixture(params=MEMORY_BACKENDS)
def memory_backend(request) -> str:
    return request.param


@pytest.fixture
async def docs_client(aiohttp_client, backend_settings):
    return await aiohttp_client(create_app(backend_settings))


async def listed(client, headers) -> dict:
    response = await client.get(URL, headers=headers)
    assert response.status == 200, await response.text()
    return await response.json()


async def test_a_markdown_document_is_cut_at_its_headings_listed_with_counts_and_found_by_search(docs_client):
    response = await docs_client.post(URL, json=upload("pump-p7.md", MANUAL), headers=ALICE)
    assert response.status == 201, await response.text()
    added = (await response.json())["document"]
    assert added["name"] == "pump-p7.md" and added["scope"] == "private" and added["mediaType"] == "text/markdown"
    assert added["chunks"] == 3 and added["replaced"] is False  # intro, Limits, Maintenance (the code '#' is code)
    library = await listed(docs_client, ALICE)
    assert [d["name"] for d in library["documents"]] == ["pump-p7.md"]
    assert library["stats"]["documents"] == 1 and library["stats"]["chunks"] == 3
    assert library["stats"]["private"] == 1 and library["limits"]["perUser"] == 50
    found = await (await docs_client.get(URL + "/search", params={"q": "inlet pressure"}, headers=ALICE)).json()
    assert found["hits"][0]["section"] == "Limits" and "6.5 bar" in found["hits"][0]["text"]
    assert found["hits"][0]["citation"] == 'document "pump-p7.md", Limits'


async def test_secrets_in_a_document_are_redacted_before_they_are_stored(docs_client, backend_settings):
    await docs_client.post(URL, json=upload("pump-p7.md", MANUAL), headers=ALICE)
    found = await (await docs_client.get(URL + "/search", params={"q": "zorblat seal"}, headers=ALICE)).json()
    assert "zorblat" in found["hits"][0]["text"] and "hunter2-secret-37" not in found["hits"][0]["text"]
    if backend_settings.database_url is None:  # SQLite: not in the file at all
        assert b"hunter2-secret-37" not in backend_settings.memory_db_path.read_bytes()


async def test_a_private_document_is_never_seen_by_another_user(docs_client):
    response = await docs_client.post(URL, json=upload("alice-notes.txt", "The zorblat valve is blue."), headers=ALICE)
    document_id = (await response.json())["document"]["id"]
    assert (await listed(docs_client, BOB))["documents"] == []
    found = await (await docs_client.get(URL + "/search", params={"q": "zorblat"}, headers=BOB)).json()
    assert found["hits"] == []
    response = await docs_client.delete(f"{URL}/{document_id}", headers=BOB)
    assert response.status == 404 and (await response.json())["error"]["code"] == "document_not_found"
    assert len((await listed(docs_client, ALICE))["documents"]) == 1


async def test_a_shared_document_needs_write_permission_and_is_seen_by_everyone(docs_client):
    response = await docs_client.post(URL, json=upload("conventions.txt", "Tags are AREA-LINE-DEVICE.", shared=True),
                                      headers=ALICE_READ_ONLY)
    assert response.status == 403 and (await response.json())["error"]["code"] == "forbidden"
    assert (await listed(docs_client, ALICE))["documents"] == []
    response = await docs_client.post(URL, json=upload("conventions.txt", "Tags are AREA-LINE-DEVICE.", shared=True),
                                      headers=ALICE)
    assert response.status == 201
    document_id = (await response.json())["document"]["id"]
    assert [d["scope"] for d in (await listed(docs_client, BOB))["documents"]] == ["shared"]
    response = await docs_client.delete(f"{URL}/{document_id}", headers={**BOB, "X-AI-Sidebar-Permission": "read"})
    assert response.status == 403
    response = await docs_client.delete(f"{URL}/{document_id}", headers=BOB)
    assert response.status == 200 and (await response.json())["deleted"]["name"] == "conventions.txt"
    assert (await listed(docs_client, ALICE))["documents"] == []


async def test_adding_a_document_of_the_same_name_replaces_it_and_its_chunks(docs_client):
    await docs_client.post(URL, json=upload("notes.md", "# Old\nThe flux capacitor needs 1.21 GW."), headers=ALICE)
    response = await docs_client.post(URL, json=upload("notes.md", "# New\nThe zorblat runs at 40 Hz."), headers=ALICE)
    assert response.status == 200 and (await response.json())["document"]["replaced"] is True
    library = await listed(docs_client, ALICE)
    assert len(library["documents"]) == 1 and library["stats"]["chunks"] == 1
    assert (await (await docs_client.get(URL + "/search", params={"q": "capacitor"}, headers=ALICE)).json())[
        "hits"] == []
    assert (await (await docs_client.get(URL + "/search", params={"q": "zorblat"}, headers=ALICE)).json())["hits"]


async def test_html_and_pdf_documents_are_read_as_text(docs_client):
    html = ("<html><head><style>p{color:red}</style><script>var x = 'no';</script></head><body>"
            "<h1>Line 2</h1><p>The conveyor speed is 0.8 m/s.</p><h2>Stops</h2><p>Emergency stop E-12.</p></body>")
    response = await docs_client.post(URL, json=upload("line2.html", html), headers=ALICE)
    assert response.status == 201 and (await response.json())["document"]["chunks"] == 2
    response = await docs_client.post(URL, json=upload("sensor.pdf", pdf("Supply voltage 24 V DC for zorblat")),
                                      headers=ALICE)
    assert response.status == 201, await response.text()
    assert (await response.json())["document"]["mediaType"] == "application/pdf"
    hits = (await (await docs_client.get(URL + "/search", params={"q": "supply voltage"}, headers=ALICE)).json())[
        "hits"]
    assert hits[0]["name"] == "sensor.pdf" and "24 V DC" in hits[0]["text"]
    hits = (await (await docs_client.get(URL + "/search", params={"q": "conveyor"}, headers=ALICE)).json())["hits"]
    assert hits[0]["section"] == "Line 2" and "color" not in hits[0]["text"] and "var x" not in hits[0]["text"]


@pytest.mark.parametrize(("body", "status", "code"), [
    (upload("setup.exe", b"MZ\x90\x00"), 415, "document_type_unsupported"),
    (upload("broken.pdf", b"%PDF-1.4 not really"), 422, "document_unreadable"),
    (upload("latin1.txt", "Größe".encode("latin-1")), 422, "document_unreadable"),
    (upload("empty.md", "   \n\n"), 422, "document_empty"),
    (upload("big.txt", "x" * 3_000), 413, "document_too_large"),
    ({"name": "a/b.txt", "data": "aGVsbG8="}, 400, "invalid_request"),
    ({"name": "a.txt", "data": "not base64!"}, 400, "invalid_request"),
])
async def test_bad_documents_are_refused_with_the_sentence_and_nothing_is_stored(aiohttp_client, backend_settings,
                                                                                  body, status, code):
    client = await aiohttp_client(create_app(backend_settings.model_copy(update={"document_max_bytes": 2_000})))
    response = await client.post(URL, json=body, headers={**ALICE, "Accept-Language": "de"})
    assert response.status == status, await response.text()
    error = (await response.json())["error"]
    assert error["code"] == code and error["message"] and not re.search(r"\{[a-z_]+\}", error["message"])
    assert (await listed(client, ALICE))["documents"] == []


async def test_the_documents_per_user_limit_counts_new_documents_not_replacements(aiohttp_client, backend_settings):
    client = await aiohttp_client(create_app(backend_settings.model_copy(update={"documents_per_user": 2})))
    for name in ("a.txt", "b.txt"):
        assert (await client.post(URL, json=upload(name, f"text of {name}"), headers=ALICE)).status == 201
    response = await client.post(URL, json=upload("c.txt", "one too many"), headers=ALICE)
    assert response.status == 409 and (await response.json())["error"]["code"] == "document_limit"
    assert "2" in (await response.json())["error"]["message"]
    assert (await client.post(URL, json=upload("a.txt", "a new text"), headers=ALICE)).status == 200
    assert (await client.post(URL, json=upload("c.txt", "bob's own"), headers=BOB)).status == 201
    assert [d["name"] for d in (await listed(client, ALICE))["documents"]] == ["a.txt", "b.txt"]


async def test_a_search_without_words_or_with_a_bad_limit_is_a_400(docs_client):
    for params in ({"q": ""}, {"q": "pump", "limit": "0"}, {"q": "pump", "limit": "x"}):
        response = await docs_client.get(URL + "/search", params=params, headers=ALICE)
        assert response.status == 400 and (await response.json())["error"]["code"] == "invalid_request"
