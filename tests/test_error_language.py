"""Error sentences follow the request's language (``locales/<lang>/errors.json``); codes never change.

The language is the stream-chat body's ``language``, else ``Accept-Language`` (the plugin forwards the browser's),
else English; region variants fall back as scenarios do (``es-MX`` → ``es-ES``).
"""

from __future__ import annotations

import json
import re

import pytest
from pydantic import SecretStr

from service.nodered.messages import MessageCatalog, accept_languages, placeholders
from service.settings import REPO_ROOT
from service.web.app import create_app
from tests.conftest import SERVICE_TOKEN
from tests.support.model_server import Reply
from tests.support.sse import read_events

LOCALES = REPO_ROOT / "locales"
SHIPPED = sorted(path.parent.name for path in LOCALES.glob("*/scenarios.json"))
ENGLISH = json.loads((LOCALES / "en-US" / "errors.json").read_text(encoding="utf-8"))


def readme_codes() -> set[str]:
    """Codes of the README's error table that the service itself raises (the plugin's row is the plugin's)."""
    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    table = text[text.index("| code | meaning |"):]
    table = table[:table.index("\n\n")]
    codes: set[str] = set()
    for row in table.splitlines()[2:]:
        cells = row.split("|")
        if "the Node-RED plugin" in cells[2]:
            continue
        codes |= set(re.findall(r"`([a-z][a-z0-9_]*)`", cells[1]))
    return codes


def test_ten_languages_ship_an_error_catalog():
    assert len(SHIPPED) == 10
    assert sorted(path.parent.name for path in LOCALES.glob("*/errors.json")) == SHIPPED


def test_every_readme_code_has_a_sentence_and_every_sentence_a_readme_code():
    codes = readme_codes()
    assert "diagnostics_disabled" in codes and "llm_unreachable" in codes
    assert codes <= set(ENGLISH)
    assert {key.split(".")[0] for key in ENGLISH} <= codes


@pytest.mark.parametrize("language", SHIPPED)
def test_every_sentence_exists_in_each_language_with_the_same_placeholders(language):
    sentences = json.loads((LOCALES / language / "errors.json").read_text(encoding="utf-8"))
    assert set(sentences) == set(ENGLISH)
    for key, english in ENGLISH.items():
        assert placeholders(sentences[key]) == placeholders(english), (language, key)
        assert sentences[key].strip() and "{{" not in sentences[key]
        if language != "en-US":
            assert sentences[key] != english, (language, key)  # written, not copied


APPROVALS = json.loads((LOCALES / "en-US" / "approvals.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("language", SHIPPED)
def test_every_change_summary_exists_in_each_language_with_the_same_placeholders(language):
    sentences = json.loads((LOCALES / language / "approvals.json").read_text(encoding="utf-8"))
    assert set(sentences) == set(APPROVALS) and all(key.startswith("change.") for key in sentences)
    for key, english in APPROVALS.items():
        assert placeholders(sentences[key]) == placeholders(english), (language, key)
        if language != "en-US":
            assert sentences[key] != english, (language, key)  # written, not copied


def test_a_sentence_key_in_both_errors_and_approvals_is_refused(tmp_path):
    (tmp_path / "de").mkdir()
    (tmp_path / "de" / "errors.json").write_text('{"change.create_tab": "x"}', encoding="utf-8")
    (tmp_path / "de" / "approvals.json").write_text('{"change.create_tab": "y"}', encoding="utf-8")
    with pytest.raises(ValueError, match="approvals.json"):
        MessageCatalog(tmp_path)


@pytest.mark.parametrize("header, expected", [
    ("de-CH, fr;q=0.8, *;q=0.1", ["de-CH", "fr"]),
    ("fr;q=0.5, ja", ["ja", "fr"]),
    ("en;q=0, ko", ["ko"]),
    ("", []),
])
def test_accept_language_is_read_by_weight(header, expected):
    assert accept_languages(header) == expected


@pytest.mark.parametrize("language, accept, expected", [
    ("de", "ja", "de"),
    (None, "es-MX,es;q=0.9", "es-ES"),
    (None, "zh-Hant-HK", "zh-TW"),
    (None, "zh-Hans-CN,zh;q=0.9", "zh-CN"),
    (None, "sv-SE, pt-BR;q=0.5", "pt-BR"),
    ("xx-YY", "de", "en-US"),
    (None, None, "en-US"),
])
def test_the_body_language_wins_then_accept_language_then_english(language, accept, expected):
    assert MessageCatalog(LOCALES).negotiate(language, accept) == expected


async def stream(client, **body):
    response = await client.post("/ai-sidebar/stream-chat", json=body)
    assert response.status == 200, await response.text()
    return [e for e in await read_events(response) if e["type"] == "error"]


@pytest.mark.parametrize("language, expected", [
    ("de", "Es gibt keinen Tab und keinen Subflow mit der ID no-such-tab. Tabs: "),
    ("ja", "ID no-such-tab のタブまたはサブフローはありません。タブ: "),
    ("zh-CN", "没有 id 为 no-such-tab 的标签页或子流程。标签页："),
    ("en-US", "There is no tab or subflow with id no-such-tab. Tabs: "),
])
async def test_a_tool_error_in_the_stream_is_in_the_requests_language(client, nodered, language, expected):
    [error] = await stream(client, message='@tools:get_flow|{"flow_id": "no-such-tab"}', language=language)
    assert error["code"] == "flow_not_found"
    assert error["message"].startswith(expected)
    assert nodered.tabs()[0]["label"] in error["message"]


@pytest.mark.parametrize("language, expected", [
    ("de", "Der Modellanbieter hat den API-Schlüssel abgelehnt; prüfen Sie den Schlüssel im ai-config-Node oder "
           "in der Umgebung des Dienstes."),
    ("ja", "モデルプロバイダーが API キーを拒否しました。"
           "ai-config ノードまたはサービスの環境にあるキーを確認してください。"),
    ("zh-CN", "模型提供方拒绝了 API 密钥；请检查 ai-config 节点或服务环境中的密钥。"),
    ("es-MX", "El proveedor del modelo rechazó la clave de API; revisa la clave en el nodo ai-config o en el "
              "entorno del servicio."),
])
async def test_a_provider_error_in_the_stream_is_in_the_requests_language(client, model, language, expected):
    model.default = Reply(status=401, error_message="Incorrect API key provided.")
    [error] = await stream(client, message="hello", language=language)
    assert error == {"type": "error", "code": "invalid_api_key", "message": expected}


async def test_without_a_body_language_the_stream_follows_accept_language(client, model):
    model.default = Reply(status=429, error_message="slow down", headers={"retry-after-ms": "20"})
    response = await client.post("/ai-sidebar/stream-chat", json={"message": "hello"},
                                 headers={"Accept-Language": "fr-CA,fr;q=0.9"})
    [error] = [e for e in await read_events(response) if e["type"] == "error"]
    assert error["code"] == "rate_limited"
    assert error["message"] == ("Le fournisseur du modèle limite les requêtes ; patientez un instant puis "
                                "réessayez.")


@pytest.mark.parametrize("headers, body_language, expected", [
    ({"Accept-Language": "de-DE,de;q=0.9,en;q=0.5"}, None, "Die Nachricht hat 10001 Zeichen; erlaubt sind 10000."),
    ({"Accept-Language": "de"}, "ja", "メッセージは 10001 文字です。上限は 10000 文字です。"),
    ({"Accept-Language": "zh-Hans-CN"}, None, "消息有 10001 个字符；上限为 10000。"),
    ({}, None, "The message has 10001 characters; the limit is 10000."),
])
async def test_a_json_error_is_in_the_body_language_else_accept_language(client, headers, body_language,
                                                                        expected):
    body = {"message": "x" * 10_001, **({"language": body_language} if body_language else {})}
    response = await client.post("/ai-sidebar/stream-chat", json=body, headers=headers)
    assert response.status == 413
    assert await response.json() == {"error": {"code": "message_too_long", "message": expected}}


@pytest.mark.parametrize("accept, expected", [
    ("de", "Es gibt kein Werkzeug 'no-such-tool'. Werkzeuge: "),
    ("ja", "ツール 'no-such-tool' はありません。ツール: "),
    ("zh-CN", "没有工具 'no-such-tool'。可用工具："),
])
async def test_execute_tool_errors_follow_accept_language(client, accept, expected):
    response = await client.post("/ai-sidebar/execute-tool", json={"tool": "no-such-tool"},
                                 headers={"Accept-Language": accept})
    assert response.status == 404
    error = (await response.json())["error"]
    assert error["code"] == "unknown_tool" and error["message"].startswith(expected)
    assert "get_flow" in error["message"]


async def test_an_unknown_route_and_a_wrong_service_token_are_worded_too(aiohttp_client, settings):
    # no default Authorization header: the second request leaves the token out
    client = await aiohttp_client(create_app(settings.model_copy(update={"token": SecretStr(SERVICE_TOKEN)})),
                                  headers={})
    response = await client.get("/ai-sidebar/nothing-here",
                                headers={"Accept-Language": "ko", "Authorization": f"Bearer {SERVICE_TOKEN}"})
    assert response.status == 404
    assert await response.json() == {"error": {"code": "not_found",
                                               "message": "경로 GET /ai-sidebar/nothing-here이(가) 없습니다."}}
    response = await client.get("/ai-sidebar/templates", headers={"Accept-Language": "ru"})
    assert response.status == 401
    refused = "Токен сервиса (AI_SIDEBAR_TOKEN) отсутствует или неверен."
    assert await response.json() == {"error": {"code": "unauthorized", "message": refused}}
