"""Scenario catalogs: schema, language fallback, keyword detection, and the scenarios route."""

from __future__ import annotations

import json
import shutil

import pytest

from service.chat.scenarios import CatalogError, ScenarioCatalog, fill_placeholders, load_file
from service.settings import REPO_ROOT
from service.web.app import create_app

LOCALES = REPO_ROOT / "locales"


@pytest.fixture(scope="module")
def catalog() -> ScenarioCatalog:
    return ScenarioCatalog(LOCALES)


def test_every_shipped_locale_passes_the_schema(catalog):
    files = sorted(LOCALES.glob("*/scenarios.json"))
    assert {"en-US", "zh-CN", "es-ES"} <= {f.parent.name for f in files}
    for path in files:
        data = load_file(path)
        assert data.language == path.parent.name
        assert set(data.scenarios) >= {"general", "learning", "solution", "integration", "development",
                                       "configuration", "management"}


FORCED = [
    ("en-US", "Can you explain the current flow?", "get_flow"),
    ("en-US", "What does the selected node do?", "get_node_info"),
    ("en-US", "Show me the current config please", "get_settings"),
    ("en-US", "Run the diagnostics", "get_diagnostics"),
    ("en-US", "EXPLAIN THE CURRENT FLOW", "get_flow"),
    ("en-US", "ｅｘｐｌａｉｎ ｔｈｅ ｃｕｒｒｅｎｔ ｆｌｏｗ", "get_flow"),  # full-width letters
    ("zh-CN", "解释一下当前流程", "get_flow"),
    ("zh-CN", "这个节点是做什么的？", "get_node_info"),
    ("zh-CN", "看看当前配置", "get_settings"),
    ("zh-CN", "给我诊断信息", "get_diagnostics"),
    ("es-ES", "¿Qué hace el flujo actual?", "get_flow"),
    ("es-ES", "Explícame este nodo", "get_node_info"),
    ("es-ES", "Muéstrame la configuración actual", "get_settings"),
    ("es-ES", "Necesito un diagnóstico del runtime", "get_diagnostics"),
]


@pytest.mark.parametrize("language,message,tool", FORCED)
def test_natural_phrasings_force_the_tool(catalog, language, message, tool):
    match = catalog.get(language).match_keywords(message)
    assert match is not None and match.group.tool == tool


ORDINARY = [
    ("en-US", "How do I debounce messages from a sensor?"),
    ("en-US", "What is the difference between flow context and global context?"),
    ("en-US", "My current flowchart tool is Visio, can Node-RED replace it?"),
    ("en-US", "Which node should I use to split an array?"),
    ("en-US", "The river's current flows north in spring"),
    ("en-US", "Is the current Node-RED version affected by this bug?"),
    ("en-US", "Does this Node.js release work with this node-red install?"),
    ("zh-CN", "当前流量很大，怎么限流？"),
    ("zh-CN", "如何在 Node-RED 中使用 MQTT？"),
    ("zh-CN", "函数节点里怎么用 flow 上下文？"),
    ("es-ES", "¿Cómo uso el nodo switch con expresiones JSONata?"),
    ("es-ES", "El flujo de caja de la empresa es actualmente positivo"),
]


@pytest.mark.parametrize("language,message", ORDINARY)
def test_ordinary_sentences_force_no_tool(catalog, language, message):
    match = catalog.get(language).match_keywords(message)
    assert match is None or match.group.tool is None


@pytest.mark.parametrize("requested,expected", [
    ("en-US", "en-US"), ("zh-CN", "zh-CN"), ("es-MX", "es-ES"), ("es", "es-ES"), ("ZH-cn", "zh-CN"),
    ("zh", "zh-CN"), ("xx", "en-US"), ("", "en-US"), (None, "en-US"), ("../../etc/passwd", "en-US"),
    ("en-US/../../../etc", "en-US"), ("en_US", "en-US"), ("pt_BR", "pt-BR"), ("zh_TW", "zh-TW"),
])
def test_language_resolution_falls_back_and_never_leaves_locales(catalog, requested, expected):
    assert catalog.resolve(requested) == expected


def test_traditional_chinese_regions_fall_back_to_zh_tw_when_shipped(catalog):
    if "zh-TW" not in catalog.languages:
        pytest.skip("zh-TW not shipped yet")
    assert catalog.resolve("zh-HK") == "zh-TW"


def test_a_broken_file_fails_naming_the_file_and_the_field(tmp_path):
    shutil.copytree(LOCALES / "en-US", tmp_path / "en-US")
    path = tmp_path / "en-US" / "scenarios.json"
    data = json.loads(path.read_text())
    data["scenarios"]["general"]["tools"] = ["get_flow", "rm-rf"]
    path.write_text(json.dumps(data))
    with pytest.raises(CatalogError) as info:
        ScenarioCatalog(tmp_path)
    assert str(path) in str(info.value) and "scenarios.general.tools" in str(info.value)


def test_a_phrase_claimed_by_two_tools_is_rejected(tmp_path):
    shutil.copytree(LOCALES / "en-US", tmp_path / "en-US")
    path = tmp_path / "en-US" / "scenarios.json"
    data = json.loads(path.read_text())
    data["scenarios"]["general"]["keywords"].append(
        {"key": ["Current Flow"], "scenario": "general", "tool": "get_settings", "newHumanPrompt": ""})
    path.write_text(json.dumps(data))
    with pytest.raises(CatalogError, match="claimed by tools"):
        ScenarioCatalog(tmp_path)


def test_unknown_placeholder_is_rejected(tmp_path):
    shutil.copytree(LOCALES / "en-US", tmp_path / "en-US")
    path = tmp_path / "en-US" / "scenarios.json"
    data = json.loads(path.read_text())
    data["scenarios"]["learning"]["systemPrompt"] += " {{secretSauce}}"
    path.write_text(json.dumps(data))
    with pytest.raises(CatalogError, match="scenarios.learning.systemPrompt"):
        ScenarioCatalog(tmp_path)


def test_placeholders_are_filled_with_readable_text_never_left_literal():
    text = fill_placeholders("v{{nodeRedVersion}} on {{selectedFlow}} with {{selectedNodes}}",
                             {"nodeRedVersion": "4.1.15", "selectedFlow": '"Main" (id t1)'})
    assert text == 'v4.1.15 on "Main" (id t1) with none'


async def test_scenarios_route_gives_the_editor_view_in_the_asked_language(aiohttp_client, settings):
    client = await aiohttp_client(create_app(settings))
    response = await client.get("/ai-sidebar/scenarios", params={"lang": "es-MX"})
    body = await response.json()
    assert response.status == 200 and body["language"] == "es-ES"
    general = body["scenarios"]["general"]
    assert general["name"] and general["prompts"] and general["keywords"]
    assert all("systemPrompt" not in s for s in body["scenarios"].values())
    response = await client.get("/ai-sidebar/scenarios", params={"lang": "../../etc/passwd"})
    assert (await response.json())["language"] == "en-US"
