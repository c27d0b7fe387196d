"""Configuration from the environment and YAML, provider selection, model caching and fault mapping."""

from __future__ import annotations

import httpx
import openai
import pytest
from langchain_anthropic import ChatAnthropic
from langchain_openai import ChatOpenAI
from pydantic import SecretStr

from service.chat.direct import parse_direct_trigger
from service.errors import ServiceError
from service.llm.providers import ChatModelFactory, ProviderConfig, provider_error
from service.settings import Settings, SettingsError
from tests.conftest import TEST_API_KEY
from tests.support.model_server import Reply


def test_environment_wins_over_the_yaml_file(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text("AI_PROVIDER: deepseek\nAI_MODEL: from-file\nAI_SIDEBAR_PORT: 9000\n")
    settings = Settings.from_env({"AI_SIDEBAR_CONFIG": str(config), "AI_MODEL": "from-env"})
    assert (settings.provider, settings.model, settings.port) == ("deepseek", "from-env", 9000)


def test_bad_values_name_the_variable(tmp_path):
    with pytest.raises(SettingsError, match="AI_SIDEBAR_PORT"):
        Settings.from_env({"AI_SIDEBAR_PORT": "eighty"})
    with pytest.raises(SettingsError, match="AI_PROVIDER"):
        Settings.from_env({"AI_PROVIDER": "skynet"})
    bad = tmp_path / "c.yaml"
    bad.write_text("NOT_A_SETTING: 1\n")
    with pytest.raises(SettingsError, match="NOT_A_SETTING"):
        Settings.from_env({"AI_SIDEBAR_CONFIG": str(bad)})


def test_non_loopback_bind_without_token_is_refused():
    with pytest.raises(SettingsError, match="AI_SIDEBAR_TOKEN"):
        Settings.from_env({"AI_SIDEBAR_HOST": "0.0.0.0"}).check_bind()
    Settings.from_env({"AI_SIDEBAR_HOST": "0.0.0.0", "AI_SIDEBAR_TOKEN": "t" * 32}).check_bind()
    Settings.from_env({"AI_SIDEBAR_HOST": "127.0.0.2"}).check_bind()
    Settings.from_env({"AI_SIDEBAR_HOST": "::1"}).check_bind()


def test_secrets_never_show_in_str_or_repr():
    secret = "sk-very-secret-value-1234567890"
    settings = Settings.from_env({"OPENAI_API_KEY": secret, "NODE_RED_PASSWORD": secret,
                                  "AI_SIDEBAR_TOKEN": secret})
    config = ProviderConfig.from_settings(settings)
    for text in (str(settings), repr(settings), repr(config), str(config.cache_key())):
        assert secret not in text


def test_each_provider_builds_its_langchain_chat_model():
    factory = ChatModelFactory()
    key = SecretStr("k-1")
    openai_model = factory.get(ProviderConfig("openai", "gpt-4o-mini", api_key=key))
    assert isinstance(openai_model, ChatOpenAI) and openai_model.streaming
    compatible = factory.get(ProviderConfig("openai-compatible", "llama3.1", base_url="http://127.0.0.1:1/v1"))
    assert compatible.openai_api_base == "http://127.0.0.1:1/v1"
    deepseek = factory.get(ProviderConfig("deepseek", "deepseek-chat", api_key=key))
    assert type(deepseek).__name__ == "ChatDeepSeek"
    google = factory.get(ProviderConfig("google", "gemini-2.5-flash", api_key=key))
    assert type(google).__name__ == "ChatGoogleGenerativeAI"
    claude = factory.get(ProviderConfig("anthropic", "claude-sonnet-4-5", api_key=key))
    assert isinstance(claude, ChatAnthropic) and claude.streaming


async def test_openai_style_streams_hand_over_chunks_as_dicts_and_the_rest_as_models(model):
    # The openai SDK's per-chunk model construction is skipped (chunks_as_dicts); a whole answer is still a model.
    model.script(Reply(text="one two three"), Reply(text="whole answer"))
    factory = ChatModelFactory()
    chat = factory.get(ProviderConfig("openai", "gpt-4o-mini", api_key=SecretStr(TEST_API_KEY),
                                      base_url=model.base_url))
    try:
        completions = chat.root_async_client.chat.completions
        stream = await completions.create(model="gpt-4o-mini", stream=True,
                                          messages=[{"role": "user", "content": "hi"}])
        chunks = [chunk async for chunk in stream]
        assert chunks and all(isinstance(chunk, dict) for chunk in chunks)
        assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c.get("choices")) == \
            "one two three"
        whole = await completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}])
        assert isinstance(whole, openai.types.chat.ChatCompletion) and whole.choices[0].message.content == \
            "whole answer"
    finally:
        await factory.aclose()


@pytest.mark.parametrize("config,missing", [
    (ProviderConfig("openai", "gpt-4o-mini"), "OPENAI_API_KEY"),
    (ProviderConfig("openai-compatible", "m"), "OPENAI_BASE_URL"),
    (ProviderConfig("openai-compatible", None, base_url="http://127.0.0.1:1/v1"), "AI_MODEL"),
    (ProviderConfig("deepseek", "deepseek-chat"), "DEEPSEEK_API_KEY"),
    (ProviderConfig("google", "gemini-2.5-flash"), "GOOGLE_API_KEY"),
    (ProviderConfig("anthropic", "claude-sonnet-4-5"), "ANTHROPIC_API_KEY"),
])
def test_missing_configuration_is_provider_not_configured(config, missing):
    with pytest.raises(ServiceError) as info:
        ChatModelFactory().get(config)
    assert info.value.code == "provider_not_configured" and missing in info.value.message


async def test_models_are_cached_by_settings_with_the_key_hashed():
    factory = ChatModelFactory()
    a = factory.get(ProviderConfig("openai", "gpt-4o-mini", api_key=SecretStr("key-a")))
    assert factory.get(ProviderConfig("openai", "gpt-4o-mini", api_key=SecretStr("key-a"))) is a
    assert factory.get(ProviderConfig("openai", "gpt-4o-mini", api_key=SecretStr("key-b"))) is not a
    assert factory.get(ProviderConfig("openai", "gpt-4o", api_key=SecretStr("key-a"))) is not a
    key = ProviderConfig("openai", "gpt-4o-mini", api_key=SecretStr("key-a")).cache_key()
    assert "key-a" not in str(key) and len(key[-1]) == 64
    await factory.aclose()


def _status_error(cls, status):
    request = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")
    response = httpx.Response(status, request=request, json={"error": {"message": "scripted"}})
    return cls(f"Error code: {status} - sk-should-not-leak", response=response, body={"message": "scripted"})


@pytest.mark.parametrize("exc,code", [
    (_status_error(openai.AuthenticationError, 401), "invalid_api_key"),
    (_status_error(openai.RateLimitError, 429), "rate_limited"),
    (_status_error(openai.InternalServerError, 500), "llm_error"),
    (openai.APITimeoutError(request=httpx.Request("POST", "http://127.0.0.1")), "llm_timeout"),
    (openai.APIConnectionError(request=httpx.Request("POST", "http://127.0.0.1")), "llm_unreachable"),
])
def test_provider_faults_map_to_design_codes_without_leaking(exc, code):
    err = provider_error(exc)
    assert err.code == code
    assert "sk-should-not-leak" not in err.message


@pytest.mark.parametrize("message,expected", [
    ("@tools:get_flow", ("get_flow", None)),
    ("@tools:get_node_info|['a','b']", ("get_node_info", ["a", "b"])),
    ('@tools:get_node_info|["a"]', ("get_node_info", ["a"])),
    ('@tools:get_flow|{"flow_id": "t1"}', ("get_flow", {"flow_id": "t1"})),
    ("please @tools:get_flow", None),
    ("hello", None),
])
def test_direct_trigger_parsing(message, expected):
    assert parse_direct_trigger(message) == expected


def test_direct_trigger_params_are_never_evaluated_as_code():
    with pytest.raises(ServiceError) as info:
        parse_direct_trigger("@tools:get_flow|__import__('os').system('true')")
    assert info.value.code == "invalid_params"
