"""Attachments (issue 37): images, text files and PDFs pasted or dropped into the sidebar's input reach the scripted
model over HTTP (a real Node-RED, LangChain's OpenAI client): a PNG as an ``image_url`` part of the question for an
image-capable model; for a text-only one an ``images_not_supported`` error naming the model, then ``done``, and no
model request at all; a text file's and a PDF's text as data, secrets redacted; only the attachments' names stored;
bounds give 400 before any model call."""

from __future__ import annotations

import base64
import io
import json
import sqlite3
import struct
import zlib

import pytest
from pypdf import PdfWriter
from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

from service.requests import MAX_IMAGE_BYTES
from service.web.app import create_app
from tests.support.model_server import Reply
from tests.test_runtime_evidence import chat


def png(width: int = 2, height: int = 2) -> bytes:
    """A real PNG of ``width`` x ``height`` red pixels."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def pdf(text: str) -> bytes:
    """A one-page PDF whose page shows ``text`` in Helvetica, written by pypdf."""
    writer = PdfWriter()
    page = writer.add_blank_page(width=300, height=200)
    font = DictionaryObject({NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"): NameObject("/Type1"),
                             NameObject("/BaseFont"): NameObject("/Helvetica")})
    page[NameObject("/Resources")] = DictionaryObject({NameObject("/Font"): DictionaryObject(
        {NameObject("/F1"): writer._add_object(font)})})
    content = DecodedStreamObject()
    content.set_data(f"BT /F1 12 Tf 20 100 Td ({text}) Tj ET".encode())
    page[NameObject("/Contents")] = writer._add_object(content)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


PNG = base64.b64encode(png()).decode()


@pytest.fixture
async def images_client(aiohttp_client, settings):
    """The service with its own model (openai, scripted) taking images (as openai's do)."""
    return await aiohttp_client(create_app(settings.model_copy(update={"model_images": True})))


@pytest.fixture
async def text_only_client(aiohttp_client, settings):
    """The service with its own model configured as taking no images (AI_MODEL_IMAGES=false)."""
    return await aiohttp_client(create_app(settings.model_copy(update={"model_images": False, "model": "llama-3"})))


def user_content(model) -> list | str:
    return [m for m in model.requests[-1]["messages"] if m["role"] == "user"][-1]["content"]


async def test_a_png_reaches_an_image_capable_model_as_an_image_part(images_client, model):
    model.script(Reply(text="A red square."))
    events = await chat(images_client, message="What is in this picture?", language="en-US",
                        attachments=[{"kind": "image", "mediaType": "image/png", "data": PNG, "name": "shot.png"}])
    assert events[-1]["type"] == "done" and not [e for e in events if e["type"] == "error"], events
    content = user_content(model)
    assert isinstance(content, list), content
    assert content[0]["type"] == "text" and "What is in this picture?" in content[0]["text"]
    images = [part for part in content if part["type"] == "image_url"]
    assert [part["image_url"]["url"] for part in images] == [f"data:image/png;base64,{PNG}"]


def database_holds(path, needle: bytes) -> list[str]:
    """The tables of the SQLite file ``path`` with a text or blob value that contains ``needle``."""
    with sqlite3.connect(path) as db:
        tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        found = []
        for table in tables:
            for row in db.execute(f'SELECT * FROM "{table}"'):
                if any(needle in (v if isinstance(v, bytes) else str(v).encode()) for v in row if v is not None):
                    found.append(table)
                    break
        return found


async def test_an_attached_image_is_not_kept_in_the_memory_database(images_client, model, settings, nodered):
    model.script(Reply(text="I would add a debug node after the inject."))
    image = base64.b64encode(png(5, 3)).decode()
    tab = nodered.tabs()[0]
    # A change asked for: the agent answers with write tools offered, so with the approval checkpointer.
    events = await chat(images_client, message="Add a debug node to this flow like in this picture", language="en-US",
                        selectedFlow={"id": tab["id"], "label": tab["label"]}, mode="agent",
                        attachments=[{"kind": "image", "mediaType": "image/png", "data": image, "name": "five.png"}])
    assert events[-1]["type"] == "done", events
    assert any(image in json.dumps(r["messages"]) for r in model.requests)  # the model saw it
    assert "tools" in model.requests[-1], list(model.requests[-1])
    assert "short_term_memory" in database_holds(settings.memory_db_path, b"like in this picture")  # the turn is stored
    assert database_holds(settings.memory_db_path, image.encode()) == []  # its image is not (checkpoints neither)


async def test_an_image_for_a_text_only_model_is_refused_with_the_sentence_and_nothing_is_asked(
        text_only_client, model):
    before = len(model.requests)
    events = await chat(text_only_client, message="What is in this picture?", language="de",
                        attachments=[{"kind": "image", "mediaType": "image/png", "data": PNG}])
    assert [e["type"] for e in events] == ["error", "done"], events
    assert events[0]["code"] == "images_not_supported"
    assert events[0]["message"].startswith("Das Modell llama-3 nimmt keine Bilder an."), events[0]
    assert len(model.requests) == before


async def test_the_provider_override_decides_images_for_an_openai_compatible_server(client, model, settings):
    override = {"provider": "openai-compatible", "baseUrl": settings.openai_base_url, "model": "local-vision",
                "apiKey": "sk-test-attachments"}
    events = await chat(client, message="Look", language="en-US", provider=override,
                        attachments=[{"kind": "image", "mediaType": "image/png", "data": PNG}])
    assert events[0]["code"] == "images_not_supported" and "local-vision" in events[0]["message"], events
    model.script(Reply(text="Seen."))
    events = await chat(client, message="Look", language="en-US", provider={**override, "images": True},
                        attachments=[{"kind": "image", "mediaType": "image/png", "data": PNG}])
    assert events[-1]["type"] == "done" and not [e for e in events if e["type"] == "error"], events
    assert any(part.get("type") == "image_url" for part in user_content(model))


async def test_a_text_file_reaches_the_model_as_data_redacted_and_only_its_name_is_stored(client, model):
    model.script(Reply(text="The log says the broker refused."))
    log_text = "12:00 connect refused\npassword=hunter2-secret-37\n12:01 retry"
    events = await chat(client, message="Why does it fail?", language="en-US",
                        attachments=[{"kind": "text", "name": "broker.log", "text": log_text}])
    done = events[-1]
    assert done["type"] == "done", events
    sent = json.dumps(model.requests[-1]["messages"])
    assert "12:00 connect refused" in sent and "broker.log" in sent and "12:01 retry" in sent
    assert "hunter2-secret-37" not in sent
    response = await client.get(f"/ai-sidebar/history/{done['sessionId']}")
    assert response.status == 200, await response.text()
    stored = json.dumps(await response.json())
    assert "connect refused" not in stored
    assert '{"kind": "text", "name": "broker.log"}' in stored


async def test_a_pdfs_text_reaches_the_model(client, model):
    model.script(Reply(text="The manual says 24 V."))
    data = base64.b64encode(pdf("Supply voltage 24 V DC, max 37 mA")).decode()
    events = await chat(client, message="What voltage?", language="en-US",
                        attachments=[{"kind": "pdf", "name": "manual.pdf", "data": data}])
    assert events[-1]["type"] == "done", events
    sent = json.dumps(model.requests[-1]["messages"])
    assert "Supply voltage 24 V DC, max 37 mA" in sent and "manual.pdf" in sent


async def test_an_unreadable_pdf_is_named_so(client, model):
    model.script(Reply(text="I cannot read it."))
    events = await chat(client, message="What does it say?", language="en-US",
                        attachments=[{"kind": "pdf", "name": "broken.pdf",
                                      "data": base64.b64encode(b"%PDF-1.4 not really").decode()}])
    assert events[-1]["type"] == "done", events
    assert "(this PDF could not be read)" in json.dumps(model.requests[-1]["messages"])


@pytest.mark.parametrize("attachments", [
    [{"kind": "text", "name": "a.txt", "text": "a"}] * 5,
    [{"kind": "image", "mediaType": "image/bmp", "data": PNG}],
    [{"kind": "image", "mediaType": "image/png", "data": "not base64!"}],
    [{"kind": "image", "mediaType": "image/png",
      "data": base64.b64encode(b"\0" * (MAX_IMAGE_BYTES + 3)).decode()}],
    [{"kind": "text", "name": "big.txt", "text": "x" * 100_001}],
    [{"kind": "text", "text": "no name"}],
    [{"kind": "video", "name": "a.mp4", "data": PNG}],
])
async def test_attachments_out_of_bounds_are_refused_before_the_model_is_asked(client, model, attachments):
    before = len(model.requests)
    response = await client.post("/ai-sidebar/stream-chat", json={"message": "hi", "attachments": attachments})
    assert response.status in (400, 413), await response.text()
    assert (await response.json())["error"]["code"] in ("invalid_request", "request_too_large")
    assert len(model.requests) == before
