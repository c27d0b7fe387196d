"""Vector ranking fused with full text (issue 17): the real ``OpenAIEmbeddings`` client over HTTP against the
scripted model server's ``/v1/embeddings`` (a hashed bag of words whose concept words share a bucket, so a
paraphrase lands near its text), over a real Node-RED's help. Embedding is incremental (a chunk's text hash
decides), a failing provider leaves full text alone, and no embedding model means no embedding call."""

from __future__ import annotations

import pytest
from pydantic import SecretStr

from service.knowledge.base import Knowledge
from service.knowledge.embeddings import embedder_for
from service.knowledge.index import Chunk
from service.nodered.client import NodeRedClient, admin_session
from service.web.app import create_app
from service.web.keys import KNOWLEDGE
from tests.support.knowledge_questions import DOCS_QUESTIONS
from tests.support.nodered import REPO

LOCALES = REPO / "locales"
MODEL = "scripted-embedding"


@pytest.fixture
async def admin(nodered):
    async with admin_session() as session:
        yield NodeRedClient(nodered.url, session)


@pytest.fixture
async def stores(tmp_path, model):
    """Full text alone and fused, each over its own database."""
    plain = await Knowledge.open(tmp_path / "plain.db", LOCALES)
    fused = await Knowledge.open(tmp_path / "fused.db", LOCALES,
                                 embedder_for("openai", MODEL, SecretStr("test-key"), model.base_url), MODEL)
    yield plain, fused
    await plain.close()
    await fused.close()


def types(hits) -> list[str]:
    return [hit.metadata["type"] for hit in hits]


async def test_fusion_finds_the_node_a_paraphrase_means_where_full_text_alone_misses_it(admin, stores, model):
    plain, fused = stores
    await plain.refresh(admin)
    await fused.refresh(admin)
    await fused.index.vectors.settled()
    assert fused.index.vectors.stats()["chunks"]["docs/en-US"] > 100
    assert model.embedding_requests and model.embedding_requests[0]["model"] == MODEL
    # Words only the embedding model relates to exec: the knowledge concepts (locales/<lang>/knowledge.json) bring
    # "terminal" or "command" to exec in full text too.
    question = "invoke a binary utility"
    assert "exec" not in types(await plain.docs.search(question, "en-US", 3))
    assert "exec" in types(await fused.docs.search(question, "en-US", 3))
    # A question full text answers keeps its answer.
    assert types(await fused.docs.search("Which node can I use to parse CSV?", "en-US", 1)) == ["csv"]


async def test_only_chunks_whose_text_changed_are_embedded_again(admin, stores, model, tmp_path):
    _, fused = stores
    await fused.refresh(admin)
    await fused.index.vectors.settled()
    first = sum(len(r["input"]) for r in model.embedding_requests)
    chunks = (await fused.index.stats())["docs"]["chunks"] + (await fused.index.stats())["workspace"]["chunks"]
    assert 0 < first <= chunks
    assert await fused.index.vectors.sync() == 0
    # A reindexed source with the same texts costs nothing; one changed text costs one embedding.
    summary = await fused.index.chunks("workspace", "", "summary")
    await fused.index.replace_source("workspace", "", "summary", "changed", [
        Chunk(h.key, h.title, h.text, h.metadata) for h in summary])
    assert await fused.index.vectors.sync() == 0
    await fused.index.replace_source("workspace", "", "summary", "changed again", [
        Chunk(h.key, h.title, h.text + (" extra" if i == 0 else ""), h.metadata) for i, h in enumerate(summary)])
    await fused.index.vectors.settled()
    assert await fused.index.vectors.sync() == 0
    assert sum(len(r["input"]) for r in model.embedding_requests) == first + 1
    # The embeddings survive a restart: a new process embeds nothing it has.
    await fused.close()
    again = await Knowledge.open(tmp_path / "fused.db", LOCALES,
                                 embedder_for("openai", MODEL, SecretStr("test-key"), model.base_url), MODEL)
    await again.index.vectors.settled()
    assert sum(len(r["input"]) for r in model.embedding_requests) == first + 1
    await again.close()


async def test_a_failing_embedding_provider_leaves_the_full_text_ranking(admin, stores, model):
    plain, fused = stores
    await plain.refresh(admin)
    await fused.refresh(admin)
    await fused.index.vectors.settled()
    model.embedding_status = 500
    question = "invoke a binary utility"
    assert types(await fused.docs.search(question, "en-US", 3)) == types(await plain.docs.search(question, "en-US", 3))


async def test_the_labelled_questions_recall_with_full_text_alone_and_fused(admin, stores):
    plain, fused = stores
    for language in sorted({language for language, _, _ in DOCS_QUESTIONS}):
        await plain.refresh(admin, language)
        await fused.refresh(admin, language)
    await fused.index.vectors.settled()
    rates = {}
    for name, knowledge in (("FTS alone", plain), ("fused (FTS + scripted embeddings)", fused)):
        found = [expected in types(await knowledge.docs.search(question, language, 3))
                 for language, question, expected in DOCS_QUESTIONS]
        rates[name] = sum(found) / len(found)
        print(f"docs recall@3, {name}: {sum(found)}/{len(found)} = {rates[name]:.1%}")
    assert rates["FTS alone"] >= 0.95
    # The scripted embeddings are a bag of words (no meaning, CJK unsplit): fusion with them must not ruin FTS.
    assert rates["fused (FTS + scripted embeddings)"] >= 0.85


async def test_without_an_embedding_model_the_service_makes_no_embedding_call(aiohttp_client, settings, model):
    client = await aiohttp_client(create_app(settings))
    slot = client.server.app[KNOWLEDGE]
    await slot.refresher.refresh()
    assert slot.knowledge.index.vectors is None and model.embedding_requests == []


async def test_with_an_embedding_model_the_service_fills_the_vectors(aiohttp_client, settings, model):
    client = await aiohttp_client(create_app(settings.model_copy(update={"embedding_model": MODEL})))
    slot = client.server.app[KNOWLEDGE]
    await slot.refresher.refresh()
    await slot.knowledge.index.vectors.settled()
    assert slot.knowledge.index.vectors.stats()["chunks"]["docs/en-US"] > 100
    assert {r["model"] for r in model.embedding_requests} == {MODEL}
