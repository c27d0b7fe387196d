"""Where a provider's requests go, said to a user without a secret: the origin of its endpoint and the setting that
chose it (issue 31: "model server cannot be reached" said neither)."""

from __future__ import annotations

import urllib.parse

from service.errors import ServiceError
from service.llm.providers import ANTHROPIC_API_URL, ProviderConfig

# Where each provider's client sends its requests when no base URL is set (each SDK's default endpoint).
DEFAULT_ENDPOINTS = {"openai": "https://api.openai.com", "deepseek": "https://api.deepseek.com",
                     "google": "https://generativelanguage.googleapis.com", "anthropic": ANTHROPIC_API_URL}
# The service's environment variable that sets each provider's base URL (service/settings.py).
BASE_URL_SETTINGS = {"openai": "OPENAI_BASE_URL", "openai-compatible": "OPENAI_BASE_URL",
                     "deepseek": "DEEPSEEK_API_BASE", "anthropic": "ANTHROPIC_BASE_URL",
                     "azure-openai": "AZURE_OPENAI_ENDPOINT"}


def endpoint_origin(config: ProviderConfig) -> str | None:
    """The scheme, host and port the model requests of ``config`` go to, never a path, query or credentials
    (a base URL may carry a key in them); ``None`` when it is not known."""
    url = config.base_url or DEFAULT_ENDPOINTS.get(config.provider)
    if not url:
        return None
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError:  # a bracket left open, a port out of range: the request itself fails and says so
        return None
    if not parts.scheme or not parts.hostname:
        return None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{parts.scheme}://{host}" + (f":{port}" if port else "")


def located(fault: ServiceError, config: ProviderConfig, *, from_node: bool) -> ServiceError:
    """``fault`` saying where the model server it could not reach is and where that is set, when it is an
    ``llm_unreachable`` before any answer (``llm_unreachable.node``: the ``ai-config`` node's base URL, when
    ``from_node``; ``llm_unreachable.environment``: the service's variable for the provider, or its default), with
    the endpoint's origin only (:func:`endpoint_origin`); any other fault, or an unknown origin, as it was."""
    url = endpoint_origin(config)
    if fault.key != "llm_unreachable" or url is None:
        return fault
    if from_node:
        return ServiceError("llm_unreachable", status=fault.status, key="llm_unreachable.node", params={"url": url})
    setting = BASE_URL_SETTINGS.get(config.provider, "AI_PROVIDER")
    return ServiceError("llm_unreachable", status=fault.status, key="llm_unreachable.environment",
                        params={"url": url, "setting": setting})
