"""Follow-up suggestions on ``done`` (issue 31): chosen by rules from what the turn did, worded in the request's
language from locales/<lang>/followups.json, against a real Node-RED and the real ChatOpenAI client over HTTP."""

from __future__ import annotations

import json
from pathlib import Path

from service.chat.followups import ACTING, kinds, load_sentences, suggestions
from service.nodered.messages import LOCALES_DIR
from tests.support.model_server import Reply
from tests.support.sse import read_events


async def chat(client, **body):
    response = await client.post("/ai-sidebar/stream-chat", json=body)
    assert response.status == 200, await response.text()
    return await read_events(response)


def test_every_language_words_every_follow_up_of_english():
    sentences = load_sentences(LOCALES_DIR)
    english = sentences["en-US"]
    shipped = sorted(path.parent.name for path in Path(LOCALES_DIR).glob("*/scenarios.json"))
    assert sorted(sentences) == shipped
    for language, words in sentences.items():
        assert set(words) == set(english), language
        if language != "en-US":
            assert all(words[key] != english[key] for key in english), language  # translated, not copied


def test_rules_follow_what_the_turn_did():
    assert kinds(["get_flow"], brought_error=False, selected_nodes=False) == ["checkFlow", "improveFlow",
                                                                               "addErrorHandling"]
    assert kinds(["get_debug_messages", "add_nodes"], brought_error=False, selected_nodes=False)[:3] == [
        "fixError", "testChange", "whatChanged"]
    # A change handed to the editor undeployed cannot be tested on the running flow yet.
    assert "testChange" not in kinds(["update_node"], brought_error=False, selected_nodes=False, deployed=False)
    assert kinds([], brought_error=True, selected_nodes=True) == ["fixError", "explainSelected"]
    assert kinds(["get_node_info"], brought_error=False, selected_nodes=True) == ["exampleFlow"]


def test_suggestions_skip_what_was_asked_and_what_ask_mode_cannot_do():
    sentences = {"en-US": {"checkFlow": "Check it", "addErrorHandling": "Add a catch", "improveFlow": "Improve"},
                 "de": {"checkFlow": "Prüfe es"}}
    items = suggestions(["checkFlow", "addErrorHandling", "improveFlow"], sentences, "de", ["Quick one"],
                        ["  PRÜFE   es "], may_act=False)
    # German where it has the sentence, English where not; the asked one and the acting one left out.
    assert items == [{"text": "Improve", "kind": "improveFlow"}, {"text": "Quick one", "kind": "scenario"}]
    assert "addErrorHandling" in ACTING
    many = suggestions([], {}, "en-US", ["a", "b", "c", "d"], [], may_act=True)
    assert [item["text"] for item in many] == ["a", "b", "c"]


async def test_an_explained_flow_gets_follow_ups_in_the_request_language(client, nodered, model):
    tab = nodered.tabs()[0]
    model.script(Reply(text="Der Flow sendet einen Wert an einen Debug-Node."))
    events = await chat(client, message="erkläre den aktuellen Flow", selectedFlow={"id": tab["id"]},
                        language="de")

    assert [e["tool"] for e in events if e["type"] == "tool_call"] == ["get_flow"]
    done = events[-1]
    german = json.loads((LOCALES_DIR / "de" / "followups.json").read_text(encoding="utf-8"))
    assert [item["text"] for item in done["suggestions"]] == [german["checkFlow"], german["improveFlow"],
                                                               german["addErrorHandling"]]
    assert [item["kind"] for item in done["suggestions"]] == ["checkFlow", "improveFlow", "addErrorHandling"]


async def test_ask_mode_suggests_no_change(client, nodered, model):
    tab = nodered.tabs()[0]
    model.script(Reply(text="It injects a value."))
    events = await chat(client, message="explain the current flow", selectedFlow={"id": tab["id"]},
                        language="en-US", mode="ask")

    found = [item["kind"] for item in events[-1]["suggestions"]]
    assert found[:2] == ["checkFlow", "improveFlow"] and not set(found) & ACTING
    assert len(found) == 3  # filled with a quick-start question of the scenario


async def test_a_failed_answer_gets_no_follow_ups(client, model):
    events = await chat(client, message="explain the current flow", selectedFlow={"id": "no-such-tab"})

    assert [e["type"] for e in events][-2:] == ["error", "done"]
    assert "suggestions" not in events[-1]
