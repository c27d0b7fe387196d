"""Scenario catalogs: the base file and the words-only language files, merging and en-US fallback, errors that name
the file and the key, keyword detection, and the scenarios route."""

from __future__ import annotations

import json
import shutil

import pytest
from pydantic import SecretStr

from service.chat.scenarios import (
    STRUCTURAL_KEYS,
    CatalogError,
    ScenarioCatalog,
    fill_placeholders,
    load_base,
    load_language,
)
from service.errors import ServiceError
from service.llm.providers import DEFAULT_MODELS, SUPPORTED_PROVIDERS, ChatModelFactory, ProviderConfig
from service.settings import PROVIDERS, REPO_ROOT
from service.web.app import create_app

LOCALES = REPO_ROOT / "locales"
BASE = LOCALES / "scenarios.json"


@pytest.fixture(scope="module")
def catalog() -> ScenarioCatalog:
    return ScenarioCatalog(LOCALES)


def test_every_shipped_language_has_words_for_every_scenario_and_no_structure(catalog):
    base = load_base(BASE)
    assert list(base.scenarios) == ["general", "learning", "solution", "integration", "development",
                                    "configuration", "management"]
    files = sorted(LOCALES.glob("*/scenarios.json"))
    assert {"en-US", "zh-CN", "es-ES"} <= {f.parent.name for f in files}
    for path in files:
        words = load_language(path, base)
        assert set(words.scenarios) == set(base.scenarios), path
        assert set(words.keywords) == set(base.keywords), path
        assert all(None not in s.model_dump().values() for s in words.scenarios.values()), path
        assert all(None not in k.model_dump().values() for k in words.keywords.values()), path
        assert not STRUCTURAL_KEYS & set(_keys(json.loads(path.read_text()))), path
        assert catalog.fallbacks[path.parent.name] == [], path


def _keys(value):
    if isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _keys(item)
    elif isinstance(value, list):
        for item in value:
            yield from _keys(item)


def test_structure_comes_from_the_base_file_in_every_language(catalog):
    base = load_base(BASE)
    for language in catalog.languages:
        data = catalog.get(language).data
        assert list(data.scenarios) == list(base.scenarios)
        for key, scenario in data.scenarios.items():
            assert scenario.tools == base.scenarios[key].tools
            assert [(g.id, g.scenario, g.tool) for g in scenario.keywords] == \
                [(i, r.scenario, r.tool) for i, r in base.keywords.items() if r.scenario == key]


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


@pytest.fixture
def locales(tmp_path):
    """A writable copy of the shipped locales: the base file, en-US and de."""
    shutil.copy(BASE, tmp_path / "scenarios.json")
    for language in ("en-US", "de"):
        shutil.copytree(LOCALES / language, tmp_path / language)
    return tmp_path


def edit(path, change):
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))
    return path


def test_an_unknown_tool_in_the_base_file_fails_naming_the_file_and_the_field(locales):
    path = edit(locales / "scenarios.json", lambda d: d["scenarios"]["general"].update(tools=["get-flow", "rm-rf"]))
    with pytest.raises(CatalogError) as info:
        ScenarioCatalog(locales)
    assert str(path) in str(info.value) and "scenarios.general.tools" in str(info.value)


def test_a_keyword_group_leading_to_no_scenario_is_rejected(locales):
    path = edit(locales / "scenarios.json", lambda d: d["keywords"]["tutorial"].update(scenario="teaching"))
    with pytest.raises(CatalogError) as info:
        ScenarioCatalog(locales)
    assert str(path) in str(info.value) and "keywords.tutorial.scenario: 'teaching' is not a scenario" in \
        str(info.value)


def test_the_base_file_is_required(locales):
    (locales / "scenarios.json").unlink()
    with pytest.raises(CatalogError, match=r"scenarios\.json: missing"):
        ScenarioCatalog(locales)


@pytest.mark.parametrize("where,change", [
    ("scenarios.general.tools", lambda d: d["scenarios"]["general"].update(tools=["get-flow"])),
    ("keywords.current-flow.tool", lambda d: d["keywords"]["current-flow"].update(tool="get-settings")),
    ("keywords.tutorial.scenario", lambda d: d["keywords"]["tutorial"].update(scenario="general")),
    ("defaultScenario", lambda d: d.update(defaultScenario="learning")),
])
def test_a_language_file_holding_structure_fails_naming_the_file_and_the_key(locales, where, change):
    path = edit(locales / "de" / "scenarios.json", change)
    with pytest.raises(CatalogError) as info:
        ScenarioCatalog(locales)
    message = str(info.value)
    assert message.startswith(f"{path}: {where}: is structure") and str(locales / "scenarios.json") in message


def test_a_language_file_with_an_unknown_scenario_fails_naming_the_file_and_the_key(locales):
    path = edit(locales / "de" / "scenarios.json",
                lambda d: d["scenarios"].update(sales={"name": "Vertrieb", "description": "", "prompts": []}))
    with pytest.raises(CatalogError) as info:
        ScenarioCatalog(locales)
    assert str(info.value).startswith(f"{path}: scenarios.sales: not a scenario of")


def test_a_language_file_with_an_unknown_keyword_group_fails_naming_the_file_and_the_key(locales):
    path = edit(locales / "de" / "scenarios.json", lambda d: d["keywords"].update(sales={"key": ["Vertrieb"]}))
    with pytest.raises(CatalogError) as info:
        ScenarioCatalog(locales)
    assert str(info.value).startswith(f"{path}: keywords.sales: not a keyword group of")


def test_a_missing_word_falls_back_to_english(locales):
    def drop(d):
        del d["scenarios"]["learning"]["name"]
        del d["scenarios"]["solution"]
        del d["keywords"]["current-flow"]
    edit(locales / "de" / "scenarios.json", drop)
    catalog = ScenarioCatalog(locales)
    german, english = catalog.get("de").data, catalog.get("en-US").data
    assert german.scenarios["learning"].name == english.scenarios["learning"].name == "Learning"
    assert german.scenarios["learning"].description == "Node-RED-Konzepte Schritt für Schritt lernen, mit kleinen " \
        "Beispielen zum Importieren."
    assert german.scenarios["solution"].model_dump(exclude={"keywords"}) == \
        english.scenarios["solution"].model_dump(exclude={"keywords"})
    assert german.languageName == "Deutsch"
    assert catalog.get("de").match_keywords("Erkläre mir den current flow").group.tool == "get_flow"
    assert {"scenarios.learning.name", "keywords.current-flow.key"} <= set(catalog.fallbacks["de"])


def test_english_missing_a_word_fails_naming_the_file_and_the_key(locales):
    path = edit(locales / "en-US" / "scenarios.json", lambda d: d["keywords"]["diagnostics"].pop("newHumanPrompt"))
    with pytest.raises(CatalogError) as info:
        ScenarioCatalog(locales)
    assert str(info.value).startswith(f"{path}: keywords.diagnostics.newHumanPrompt: missing")


def test_a_phrase_claimed_by_two_tools_is_rejected(locales):
    edit(locales / "scenarios.json",
         lambda d: d["keywords"].update(settings2={"scenario": "general", "tool": "get_settings"}))
    edit(locales / "en-US" / "scenarios.json",
         lambda d: d["keywords"].update(settings2={"key": ["Current Flow"], "newHumanPrompt": ""}))
    with pytest.raises(CatalogError, match="claimed by tools"):
        ScenarioCatalog(locales)


def test_unknown_placeholder_is_rejected(locales):
    edit(locales / "en-US" / "scenarios.json",
         lambda d: d["scenarios"]["learning"].update(systemPrompt="Hi {{secretSauce}}"))
    with pytest.raises(CatalogError, match="scenarios.learning.systemPrompt"):
        ScenarioCatalog(locales)


async def test_the_locales_dir_setting_moves_base_and_words_together(aiohttp_client, settings, locales):
    edit(locales / "scenarios.json", lambda d: (d["scenarios"].pop("management"), d["keywords"].pop("diagnostics")))
    edit(locales / "de" / "scenarios.json",
         lambda d: (d["scenarios"]["general"].update(name="Alles"), d["scenarios"].pop("management"),
                    d["keywords"].pop("diagnostics")))
    edit(locales / "en-US" / "scenarios.json",
         lambda d: (d["scenarios"].pop("management"), d["keywords"].pop("diagnostics")))
    client = await aiohttp_client(create_app(settings.model_copy(update={"locales_dir": locales})))
    body = await (await client.get("/ai-sidebar/scenarios", params={"lang": "de-AT"})).json()
    assert body["language"] == "de" and body["scenarios"]["general"]["name"] == "Alles"
    assert list(body["scenarios"]) == ["general", "learning", "solution", "integration", "development",
                                       "configuration"]


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


async def test_scenarios_route_gives_the_palette_the_providers_and_the_message_limit_of_the_service(client, settings):
    body = await (await client.get("/ai-sidebar/scenarios", params={"lang": "de"})).json()
    # The providers this installation answers with: every one a setting may name, Anthropic and Azure included.
    assert body["providers"] == ["openai", "deepseek", "google", "anthropic", "azure-openai", "openai-compatible"]
    assert body["maxMessageChars"] == settings.max_message_chars == 10_000
    assert list(body["scenarios"]) == list(load_base(BASE).scenarios)
    # The model that answers without an ai-config node: the sidebar's header names it.
    assert body["model"] == {"provider": settings.provider,
                             "model": settings.model or DEFAULT_MODELS[settings.provider]}
    assert body["model"]["model"]
    # The model an ai-config node naming none gets, per provider: the service's own for its provider (AI_MODEL).
    assert body["defaultModels"] == {**DEFAULT_MODELS, settings.provider: body["model"]["model"]}
    assert body["defaultModels"]["anthropic"] == "claude-sonnet-4-5"


async def test_an_ai_config_node_naming_no_model_is_answered_by_the_default_the_scenarios_route_names(
        client, model, settings):
    """What the sidebar's header shows for such a node is what answers (the scripted server reports the model)."""
    names = (await (await client.get("/ai-sidebar/scenarios")).json())["defaultModels"]
    provider = {"provider": "openai", "baseUrl": model.base_url, "apiKey": "sk-test-key-0002"}
    response = await client.post("/ai-sidebar/stream-chat", json={"message": "hi", "provider": provider})
    assert response.status == 200 and "error" not in await response.text()
    assert model.requests[-1]["model"] == names["openai"]


@pytest.mark.parametrize("allowed,answered_in", [(["sales", "learning"], "learning"), (["sales"], "general")])
async def test_a_scenario_the_service_lacks_in_an_ai_config_is_ignored(client, model, catalog, allowed, answered_in):
    provider = {"provider": "openai-compatible", "model": "scripted", "baseUrl": model.base_url, "scenarios": allowed}
    response = await client.post("/ai-sidebar/stream-chat",
                                 json={"message": "hi", "scenario": "general", "provider": provider})
    assert response.status == 200
    text = await response.text()
    assert "error" not in text, text
    system = model.requests[-1]["messages"][0]["content"]
    assert system.startswith(catalog.get("en-US").data.scenarios[answered_in].systemPrompt[:40])


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_provider_is_offered_exactly_when_the_service_can_build_its_model(provider):
    """The dialog's list (GET /ai-sidebar/scenarios ``providers``) and the factory agree for every provider a
    setting may name: an offered one builds a model from a key, base URL and model; another is refused as
    unsupported, naming the offered ones. (Azure OpenAI answers with a deployment, which it needs too.)"""
    config = ProviderConfig(provider, "some-model", api_key=SecretStr("sk-test-key-0001"),
                            base_url="http://127.0.0.1:1/v1",
                            deployment="some-deployment" if provider == "azure-openai" else None)
    if provider in SUPPORTED_PROVIDERS:
        assert ChatModelFactory().get(config) is not None
    else:
        with pytest.raises(ServiceError) as info:
            ChatModelFactory().get(config)
        assert info.value.code == "provider_not_configured"
        assert info.value.params["supported"] == ", ".join(SUPPORTED_PROVIDERS)
