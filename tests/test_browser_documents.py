"""The document library (issue 37) in a real headless Chromium against a real Node-RED (adminAuth, under /admin), the
service as a process and the scripted model, the sidebar 240 px wide and the keyboard alone: a Markdown file added
with the Knowledge panel's file picker is listed with its passages, a question it answers reaches the model with
the document's fact and its citation (the answer shows the documents search), and once deleted with the keyboard
the list is empty and the same question reaches the model without it."""

from __future__ import annotations

import json
import os

from tests.support.model_server import Reply
from tests.test_browser_sidebar import (  # noqa: F401  (auth_stack and browser_installed are fixtures)
    PASSWORD,
    USERNAME,
    auth_stack,
    browser_installed,
    pytestmark,
    run_browser,
    tab_named,
)
from tests.test_documents import MANUAL

QUESTION = "What is the maximum inlet pressure of pump P-7?"


def test_a_document_added_in_the_panel_is_cited_and_after_its_deletion_is_not(auth_stack, model):  # noqa: F811
    nodered, _ = auth_stack
    model.script(Reply(text="At most 6.5 bar (pump-p7.md, Limits)."), Reply(text="I do not know that pump."))
    asked = len(model.requests)
    seen = run_browser("sidebar_documents.js", {
        "EDITOR_URL": nodered.url, "USERNAME": USERNAME, "PASSWORD": PASSWORD,
        "TAB_ID": tab_named(nodered, "01 - Catch error")["id"], "DOC_NAME": "pump-p7.md", "DOC_TEXT": MANUAL,
        "QUESTION": QUESTION})

    assert "failure" not in seen, seen["failure"]
    assert seen["pageErrors"] == [], seen["pageErrors"]
    assert seen["width"] <= 260, seen["width"]
    for screenshot in seen["screenshots"] + seen["detailScreenshots"]:
        assert os.path.getsize(screenshot) > 2_000, screenshot

    # Added and listed with its passages, inside the 240 px sidebar.
    assert seen["countsBefore"].startswith("0 documents"), seen["countsBefore"]
    assert seen["listed"] == [{"name": "pump-p7.md", "detail": seen["listed"][0]["detail"], "scope": "private"}]
    assert seen["listed"][0]["detail"].startswith("private · 3 passages · "), seen["listed"]
    assert seen["status"] == "Added pump-p7.md: 3 passages.", seen["status"]
    assert seen["countsAfter"] == "1 document · 3 passages" and seen["inside"]

    # Cited: the fact and its source reached the model; the answer shows the documents search.
    prompts = [json.dumps(r["messages"], ensure_ascii=False) for r in model.requests[asked:]
               if QUESTION in json.dumps(r["messages"], ensure_ascii=False)]
    assert len(prompts) == 2, prompts
    assert "6.5 bar" in prompts[0] and '[source: document \\"pump-p7.md\\", Limits]' in prompts[0]
    assert "6.5 bar" in seen["answer"] and any("search_documents" in tool for tool in seen["tools"]), seen

    # Deleted with the keyboard: gone from the list and from the next answer's prompt.
    assert seen["deleteLabel"] == "Delete pump-p7.md"
    assert seen["listedAfterDelete"] == [] and seen["statusAfterDelete"] == "Deleted pump-p7.md."
    assert "ai-sidebar-documents-pick" in seen["focusAfterDelete"]
    assert "6.5 bar" not in prompts[1] and "pump-p7.md" not in prompts[1]
    assert seen["toolsAfterDelete"] == []
