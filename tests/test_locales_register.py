"""Our texts address the user as the installed Node-RED editor's own translation does: German "Sie", French "vous",
Russian "вы", Chinese "您", Spanish "tú", Brazilian Portuguese "você" (measured in
``@node-red/editor-client/locales/<lang>/editor.json``).

Checked are the texts a user reads: the sidebar's and the nodes' strings and help, error and approval sentences,
notices, scenario names, descriptions and the answer instruction. Left out: system prompts (they address the model),
quick starts and keyword phrases (the user's own words to the assistant) and the injection patterns (what an attacker
writes).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.support.nodered import NODERED_HOME, REPO

EDITOR_LOCALES = NODERED_HOME.parent / "@node-red" / "editor-client" / "locales"

# Per language: markers of the form of address Node-RED's editor uses, and of the other one (pronouns and, for
# Spanish, the "usted" imperatives our texts had; a word a sentence may use in either form is not a marker).
REGISTERS = {
    "de": (r"\b(Sie|Ihr|Ihre|Ihren|Ihrem|Ihrer|Ihnen)\b", r"\b([Dd]u|[Dd]ein\w*|[Dd]ich|[Dd]ir)\b"),
    "fr": (r"\b([Vv]ous|[Vv]otre|[Vv]os)\b", r"\b([Tt]u|[Tt]on|[Tt]a|[Tt]es|[Tt]oi)\b"),
    "ru": (r"\b([Вв]ы|[Вв]аш\w*|[Вв]ас|[Вв]ам)\b", r"\b([Тт]ы|[Тт]еб[яе]|[Тт]во[йяёи]\w*)\b"),
    "zh-CN": ("您", "你"),
    "zh-TW": ("您", "你"),
    "es-ES": (r"\b([Tt]ú|[Tt]us?|puedes|quieres|[Ee]stás)\b",
              r"\b([Uu]sted(es)?|[Cc]ompruebe|[Ii]nténtelo|[Ee]nvíe(lo)?|[Ee]lija|[Rr]eduzca|[Pp]roteja|[Cc]onecte|"
              r"[Cc]orríjala|[Aa]córtela|[Dd]ivídala|[Dd]esbloquéelo|[Dd]éjelo|[Cc]onviértalo|[Dd]espliéguelo|"
              r"[Ii]nícielo|[Mm]arque)\b"),
    "pt-BR": (r"\b([Vv]ocê)\b", r"\b([Tt]u|[Tt]eu|[Tt]ua|[Tt]eus|[Tt]uas)\b"),
}


def strings(value) -> list[str]:
    """Every string inside a JSON value."""
    if isinstance(value, dict):
        return [s for item in value.values() for s in strings(item)]
    if isinstance(value, list):
        return [s for item in value for s in strings(item)]
    return [value] if isinstance(value, str) else []


def editor_texts(language: str) -> str:
    return "\n".join(strings(json.loads((EDITOR_LOCALES / language / "editor.json").read_text(encoding="utf-8"))))


def our_texts(language: str) -> dict[str, list[str]]:
    """What a user reads from us in ``language``, by file."""
    locales = REPO / "locales" / language
    texts: dict[str, list[str]] = {}
    for name in ("errors.json", "approvals.json", "knowledge.json"):
        data = json.loads((locales / name).read_text(encoding="utf-8"))
        if name == "knowledge.json":
            data = {key: data.get(key) for key in ("noModelNotice", "unknownNodeTypes")}
        texts[name] = strings(data)
    guardrails = json.loads((locales / "guardrails.json").read_text(encoding="utf-8"))
    texts["guardrails.json"] = strings({k: v for k, v in guardrails.items() if k != "injectionPatterns"})
    scenarios = json.loads((locales / "scenarios.json").read_text(encoding="utf-8"))
    texts["scenarios.json"] = [scenarios["answerInstruction"]] + strings(
        [{"name": s.get("name"), "description": s.get("description")} for s in scenarios["scenarios"].values()])
    palette = REPO / "node-red-contrib-ai-sidebar"
    for path in sorted(palette.glob(f"*/locales/{language}/*")):
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".json":
            data = json.loads(text)
            data.get("prompt", {}).clear()  # quick questions the user sends, in the user's voice
            texts[str(path.relative_to(palette))] = strings(data)
        else:
            texts[str(path.relative_to(palette))] = [text]
    return texts


@pytest.mark.parametrize("language", sorted(REGISTERS))
def test_we_address_the_user_as_the_node_red_editors_own_translation_does(language):
    same, other = (re.compile(pattern) for pattern in REGISTERS[language])
    editor = editor_texts(language)
    assert len(same.findall(editor)) > 10 * len(other.findall(editor)), "Node-RED's editor changed its register"
    found = {name: hits for name, texts in our_texts(language).items()
             if (hits := [text[:120] for text in texts if other.search(text)])}
    assert found == {}


def test_the_model_is_asked_to_address_the_user_in_that_register_too():
    instructions = {language: json.loads((REPO / "locales" / language / "scenarios.json").read_text(
        encoding="utf-8"))["answerInstruction"] for language in REGISTERS}
    assert "„Sie“" in instructions["de"] and "vouvoie" in instructions["fr"] and "«вы»" in instructions["ru"]
    assert "您" in instructions["zh-CN"] and "您" in instructions["zh-TW"] and "tutea" in instructions["es-ES"]
    assert "você" in instructions["pt-BR"]


def test_the_palettes_german_sidebar_says_sie():
    sidebar = json.loads((REPO / "node-red-contrib-ai-sidebar" / "plugins" / "locales" / "de" / "ai-sidebar.json")
                         .read_text(encoding="utf-8"))
    assert sidebar["sidebar"]["you"] == "Sie" and "Ihren Flows" in sidebar["sidebar"]["placeholder"]
    assert Path(EDITOR_LOCALES / "de" / "editor.json").is_file()


def editor_label(language: str, *path: str) -> str:
    """A label of the installed Node-RED editor in ``language``, as the editor shows it: i18next falls back to the
    English one where the language's editor.json lacks it (de, ko, pt-BR, ru lack workspace.unlockFlow in 4.1)."""
    for locale in (language, "en-US"):
        file = EDITOR_LOCALES / locale / "editor.json"
        value: object = json.loads(file.read_text(encoding="utf-8")) if file.exists() else {}
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if isinstance(value, str):
            return value
    raise AssertionError(f"Node-RED's editor has no {'.'.join(path)}")


@pytest.mark.parametrize("language", sorted(p.name for p in (REPO / "locales").iterdir() if p.is_dir()))
def test_the_locked_tab_sentence_names_the_menu_entry_as_the_editor_shows_it(language):
    sentence = json.loads((REPO / "locales" / language / "errors.json").read_text(encoding="utf-8"))["flow_locked"]
    assert editor_label(language, "workspace", "unlockFlow") in sentence
