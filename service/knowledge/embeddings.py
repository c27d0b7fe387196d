"""The embedding model of the knowledge index: the configured provider's embeddings through LangChain, only when
``AI_SIDEBAR_EMBEDDING_MODEL`` names one (no model named: full-text ranking alone, no embedding call ever).

- ``openai``, ``openai-compatible``, ``deepseek`` (whose own API has no embeddings: point ``OPENAI_BASE_URL`` /
  ``DEEPSEEK_API_BASE`` at a server that has, e.g. Ollama's ``nomic-embed-text``): ``OpenAIEmbeddings`` against the
  provider's base URL with its key (https://platform.openai.com/docs/api-reference/embeddings).
- ``google``: ``GoogleGenerativeAIEmbeddings`` (e.g. ``gemini-embedding-001``).
- ``anthropic``: no embeddings API; full text alone.
"""

from __future__ import annotations

from pydantic import SecretStr

from service.knowledge.vectors import Embedder

OPENAI_STYLE = frozenset({"openai", "openai-compatible", "deepseek"})


def embedder_for(provider: str, model: str | None, api_key: SecretStr | None, base_url: str | None,
                 timeout: float = 30.0) -> Embedder | None:
    """A LangChain embeddings client for ``model`` at ``provider``, or ``None`` (no model named, no key, or a
    provider without embeddings).

    ``check_embedding_ctx_length`` is off: it would count tokens with ``tiktoken``, which downloads its encoding
    files on first use (the service may run with no route to them), and the texts are already bounded
    (:data:`service.knowledge.vectors.TEXT_LIMIT`).
    """
    if not model or api_key is None:
        return None
    if provider in OPENAI_STYLE:
        from langchain_openai import OpenAIEmbeddings

        return OpenAIEmbeddings(model=model, openai_api_key=api_key, openai_api_base=base_url,
                                check_embedding_ctx_length=False, request_timeout=timeout, max_retries=1)
    if provider == "google":
        from langchain_google_genai import GoogleGenerativeAIEmbeddings

        return GoogleGenerativeAIEmbeddings(model=model, google_api_key=api_key)
    return None
