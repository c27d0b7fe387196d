"""Model prices (``prices.yaml`` beside this module, overridable by ``AI_SIDEBAR_PRICES``) and the cost of tokens.

Prices are USD per 1 million tokens, input and output apart, per provider and model; each bundled entry names its
source page and the date it was taken. A model without a price has no cost (``None``), never a guessed one.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import yaml
from pydantic import TypeAdapter

from service.settings import ModelPrice as ModelPrice

PRICES_FILE = Path(__file__).with_name("prices.yaml")
TOKENS_PER_UNIT = 1_000_000  # prices are per million tokens


PriceMap = dict[str, dict[str, ModelPrice]]
_PRICE_MAP = TypeAdapter(PriceMap)


def bundled_prices() -> PriceMap:
    """The price table shipped in the package (``service/llm/prices.yaml``)."""
    return _PRICE_MAP.validate_python(yaml.safe_load(PRICES_FILE.read_text(encoding="utf-8")) or {})


class PriceTable:
    """The bundled prices with ``overrides`` laid over them model by model (an override replaces that model's
    entry; other models keep the bundled one)."""

    def __init__(self, overrides: Mapping[str, Mapping[str, ModelPrice]] | None = None,
                 base: PriceMap | None = None):
        table = base if base is not None else bundled_prices()
        self._prices: PriceMap = {provider: dict(models) for provider, models in table.items()}
        for provider, models in (overrides or {}).items():
            self._prices.setdefault(provider, {}).update(models)

    def price(self, provider: str, *models: str | None) -> ModelPrice | None:
        """The price of the first of ``models`` that ``provider`` has one for (a response may name a dated version
        of the model asked for: both are tried), or ``None``."""
        known = self._prices.get(provider, {})
        return next((known[model] for model in models if model and model in known), None)

    def cost(self, provider: str, models: tuple[str | None, ...], input_tokens: int, output_tokens: int,
             cache_read: int = 0, cache_write: int = 0) -> float | None:
        """USD for the tokens at the price of the first of ``models`` that has one; ``None`` without a price.
        ``input_tokens`` counts all input, ``cache_read`` and ``cache_write`` of them included (LangChain's
        ``usage_metadata``: ``input_token_details.cache_read`` / ``cache_creation``); those are priced at the
        model's cache prices when it has them."""
        price = self.price(provider, *models)
        if price is None:
            return None
        read_price = price.input if price.cache_read is None else price.cache_read
        write_price = price.input if price.cache_write is None else price.cache_write
        plain = max(0, input_tokens - cache_read - cache_write)
        return (plain * price.input + cache_read * read_price + cache_write * write_price
                + output_tokens * price.output) / TOKENS_PER_UNIT
