"""Attachments (issue 37) in a real headless Chromium against a real Node-RED (adminAuth, under /admin), the service
as a process and the scripted model, the sidebar 240 px wide and the keyboard alone: a pasted PNG and text file
become chips, the text file's is removed, and the PNG reaches the scripted model as an ``image_url`` part of the
question (the service's own model, openai, takes images) while the removed text file does not; with a text-only
ai-config node chosen (openai-compatible, images unset) a pasted PNG is refused with the service's sentence naming
the model and nothing reaches the model."""

from __future__ import annotations

import base64
import json
import os

from tests.support.model_server import Reply
from tests.test_attachments import png
from tests.test_browser_sidebar import (  # noqa: F401  (auth_stack and browser_installed are fixtures)
    CONFIG_IDS,
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

TAB = "01 - Catch error"
QUESTION = "What does this dashboard show?"
REFUSED_QUESTION = "And what is wired here?"
PNG = base64.b64encode(png(3, 2)).decode()


def test_a_pasted_png_reaches_an_image_model_and_is_refused_for_a_text_only_one(auth_stack, model_server, model):  # noqa: F811
    nodered, _ = auth_stack
    token = admin_token(nodered)
    original = admin_request(nodered, token, "GET", "/flows")
    text_only = ai_config("alpha", model_server.base_url)
    deploy(nodered, token, original + [text_only])
    model.script(Reply(text="A small red picture."))
    try:
        seen = run_browser("sidebar_attachments.js", {
            "EDITOR_URL": nodered.url, "USERNAME": USERNAME, "PASSWORD": PASSWORD,
            "TAB_ID": tab_named(nodered, TAB)["id"], "PNG_BASE64": PNG, "QUESTION": QUESTION,
            "REFUSED_QUESTION": REFUSED_QUESTION, "CONFIG_ID": CONFIG_IDS["alpha"]})
    finally:
        deploy(nodered, token, original)

    assert "failure" not in seen, seen["failure"]
    assert seen["pageErrors"] == [], seen["pageErrors"]
    assert seen["width"] <= 260, seen["width"]
    for screenshot in seen["screenshots"] + seen["detailScreenshots"]:
        assert os.path.getsize(screenshot) > 2_000, screenshot

    # Pasted: a chip each, in a named list; the input keeps no file name as text.
    assert seen["chips"] == ["dashboard.png", "notes.txt"], seen["chips"]
    assert seen["chipsLabel"] == "Attached to your question" and seen["inputAfterPaste"] == ""
    assert seen["focusedChip"] == "Don't send notes.txt with the question"
    assert seen["chipsAfterRemoval"] == ["dashboard.png"]

    # Sent: the PNG as an image part of the question, the removed text file not at all; the chips went with it.
    asked = next(r for r in model.requests if QUESTION in json.dumps(r["messages"]))
    question = [m for m in asked["messages"] if m["role"] == "user"][-1]["content"]
    assert isinstance(question, list), question
    assert [p["image_url"]["url"] for p in question if p["type"] == "image_url"] == [f"data:image/png;base64,{PNG}"]
    assert "not-to-be-sent-notes" not in json.dumps(asked)
    assert "A small red picture." in seen["answer"] and seen["chipsAfterSend"] == []
    assert seen["sentContext"].endswith("attached: dashboard.png"), seen["sentContext"]

    # A text-only model: refused with the sentence naming it, and the model was not asked.
    assert "The model scripted-alpha does not take images." in seen["refused"], seen["refused"]
    assert not any(REFUSED_QUESTION in json.dumps(r["messages"]) for r in model.requests)
    # ... and the refused question keeps its attachment chip with its words in the input.
    assert seen["chipsAfterRefusal"] == ["wiring.png"] and seen["inputAfterRefusal"] == REFUSED_QUESTION
