"""Azure OpenAI (``AI_PROVIDER=azure-openai``): LangChain's ``AzureChatOpenAI`` for one deployment of one resource.

Azure serves OpenAI's chat completions API per deployment (``POST {endpoint}/openai/deployments/{deployment}/chat/
completions?api-version={version}``, key in the ``api-key`` header:
https://learn.microsoft.com/azure/ai-services/openai/reference); the deployment, not the model name, picks the model.
"""

from __future__ import annotations

from typing import Any

import httpx2
from langchain_core.language_models import BaseChatModel
from pydantic import SecretStr

# The API version sent when none is configured: the latest GA (not preview) data-plane version of Azure OpenAI's
# inference API (https://learn.microsoft.com/azure/ai-services/openai/api-version-lifecycle, 2024-10-21).
DEFAULT_API_VERSION = "2024-10-21"


def azure_chat_model(*, endpoint: str, deployment: str, api_version: str | None, api_key: SecretStr,
                     model: str | None, timeout: float, client: httpx2.AsyncClient | None,
                     common: dict[str, Any]) -> BaseChatModel:
    """A streaming ``AzureChatOpenAI`` for ``deployment`` at ``endpoint`` (``https://<resource>.openai.azure.com``)
    with ``api_key``; ``model`` (optional) names the deployed model for usage and prices, ``timeout`` is seconds per
    request, ``common`` holds ``temperature`` / ``max_tokens`` when set.

    Everything the client would otherwise read from the process environment is given here (the Azure AD token,
    ``OPENAI_API_BASE``, the organization): the environment's credentials never reach an endpoint an ``ai-config``
    node names."""
    from langchain_openai import AzureChatOpenAI

    return AzureChatOpenAI(
        azure_endpoint=endpoint, azure_deployment=deployment, api_version=api_version or DEFAULT_API_VERSION,
        api_key=api_key, azure_ad_token=None, base_url=None, organization=None, model=model or deployment,
        streaming=True, stream_usage=True, timeout=timeout, max_retries=2, http_async_client=client,
        stream_chunk_timeout=None, **common)
