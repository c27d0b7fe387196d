"""The "why does it fail" keyword group in all ten shipped languages: natural phrasings force get_debug_messages
(which reads the selected tab's recent errors and debug messages), also when the message names "this flow"; the
sentences of tests/test_scenarios_languages.py that must force nothing still force nothing (checked there)."""

from __future__ import annotations

import re

import pytest

from service.chat.scenarios import ScenarioCatalog, keyword_pattern, normalize
from service.settings import REPO_ROOT
from tests.test_scenarios_languages import LANGUAGES

WHY_FAIL: dict[str, list[str]] = {
    "en-US": ["Why does this flow fail?", "why does it fail every time I deploy?", "What went wrong here?",
              "Show me the recent errors", "Why is my flow failing since this morning?"],
    "zh-CN": ["这个流程为什么报错？", "为什么会失败？", "当前流程为什么出错了", "帮我看看最近的错误"],
    "zh-TW": ["這個流程為什麼報錯？", "為什麼會失敗？", "目前流程為什麼出錯", "幫我看最近的錯誤"],
    "ja": ["このフローはなぜ失敗するの？", "なぜエラーになるのか教えて", "最近のエラーを見せて",
           "現在のフローが失敗する原因は？"],
    "ko": ["이 플로우는 왜 실패하나요?", "왜 에러가 나요?", "최근 오류 보여 줘",
           "현재 플로우가 실패하는 이유가 뭐예요?"],
    "es-ES": ["¿Por qué falla?", "¿Por qué falla este flujo?", "¿por que falla el flujo actual?",
              "¿Por qué da error cada vez que despliego?", "Enséñame los errores recientes"],
    "pt-BR": ["Por que falha?", "Por que esse fluxo falha?", "Por que dá erro quando faço deploy?",
              "Mostre os erros recentes"],
    "fr": ["Pourquoi ça plante ?", "Pourquoi ce flux échoue ?", "Pourquoi ça échoue depuis ce matin ?",
           "Montre-moi les erreurs récentes"],
    "de": ["Warum schlägt dieser Flow fehl?", "Warum scheitert der aktuelle Flow?", "Zeig mir die letzten Fehler",
           "Warum gibt es einen Fehler beim Deploy?"],
    "ru": ["Почему падает этот поток?", "Почему не работает текущий поток?", "Покажи последние ошибки",
           "Почему выдаёт ошибку при деплое?"],
}


@pytest.fixture(scope="module")
def catalog() -> ScenarioCatalog:
    return ScenarioCatalog(REPO_ROOT / "locales")


def test_every_shipped_language_has_why_fail_phrasings():
    assert set(WHY_FAIL) == set(LANGUAGES)
    assert all(len(messages) >= 3 for messages in WHY_FAIL.values())


@pytest.mark.parametrize("language,message", [
    pytest.param(language, message, id=f"{language}-{index}")
    for language in LANGUAGES for index, message in enumerate(WHY_FAIL[language])])
def test_why_does_it_fail_forces_the_recent_errors_and_debug_messages(catalog, language, message):
    match = catalog.get(language).match_keywords(message)
    assert match is not None, f"{language}: nothing matched {message!r}"
    assert match.group.tool == "get_debug_messages", f"{language}: {message!r} matched {match.phrase!r}"
    assert match.group.id == "why-fail" and match.group.scenario == "general"
    # The phrase that matched is in the message, its parts in order when it has words in between ("por qué … falla")
    assert re.search(keyword_pattern(match.phrase), normalize(message)), (match.phrase, message)


def test_the_scenarios_that_troubleshoot_offer_the_evidence_tools_to_the_agent(catalog):
    scenarios = catalog.get("en-US").data.scenarios
    for key in ("general", "development", "management"):
        assert {"get_debug_messages", "get_node_status"} <= set(scenarios[key].tools), key
