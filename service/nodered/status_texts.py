"""Node status texts as the editor shows them: a node may set its status to a message key
(``node-red:common.status.connecting``), which the editor words in the user's language; a model must read the same
words, not the key.

The editor (``@node-red/editor-client``, ``RED.comms.subscribe("status/#")``) translates a status text that starts
with a letter or ``@`` through ``node._(text, {defaultValue: text})``: a key without a namespace is looked up in the
namespace of the node's module (``node-red`` for the core nodes), ``ns:key`` in ``ns``, and a text that is no key
stays as it is. The catalogs come from the Admin API as the editor loads them (``GET /locales/<namespace>?lng=``),
kept per namespace and language for :data:`CATALOG_TTL` seconds.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

from service.nodered.client import NodeRedClient, NodeRedError
from service.nodered.flows import module_index

CATALOG_TTL = 600.0  # seconds a catalog (and the type → module index) is reused: they change when modules do
# A message key: no spaces, dotted words, an optional namespace (the editor tries any text starting with a letter;
# one with a space is never a key, so it costs no request).
_KEY = re.compile(r"^[@A-Za-z][\w\-@]*(?::[\w\-]+)?(?:\.[\w\-]+)+$|^[@A-Za-z][\w\-@]*:[\w\-.]+$")


class StatusTexts:
    """The editor's wording of status texts for one Node-RED, its catalogs cached per namespace and language.

    Args:
        clock: monotonic seconds (tests).
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._catalogs: dict[tuple[str, str], tuple[float, dict[str, Any]]] = {}
        self._modules: tuple[float, dict[str, str]] | None = None

    async def shown(self, nodered: NodeRedClient, text: str | None, node_type: str | None,
                    language: str | None) -> str | None:
        """``text`` as the editor shows it in ``language`` (a BCP 47 tag Node-RED knows, e.g. ``de``,
        ``pt-BR``; default ``en-US``): a message key in the node's namespace or its own is replaced by its
        sentence; anything else, and a key Node-RED cannot word (or cannot be asked), is returned as it is."""
        if not text or not _KEY.match(text):
            return text
        namespace, _, key = text.partition(":") if ":" in text else ("", "", text)
        if not namespace:
            namespace = (await self._module_of(nodered)).get(node_type or "", "")
            if not namespace:
                return text
        catalog = await self._catalog(nodered, namespace, language or "en-US")
        found = _lookup(catalog, key)
        return found if isinstance(found, str) and found else text

    async def _catalog(self, nodered: NodeRedClient, namespace: str, language: str) -> dict[str, Any]:
        cached = self._catalogs.get((namespace, language))
        if cached is not None and self._clock() - cached[0] < CATALOG_TTL:
            return cached[1]
        try:
            catalog = await nodered.get_locale(namespace, language)
        except NodeRedError:
            return {}  # not cached: asked again next time
        catalog = catalog if isinstance(catalog, dict) else {}
        self._catalogs[(namespace, language)] = (self._clock(), catalog)
        return catalog

    async def _module_of(self, nodered: NodeRedClient) -> dict[str, str]:
        if self._modules is not None and self._clock() - self._modules[0] < CATALOG_TTL:
            return self._modules[1]
        try:
            modules = {node_type: entry.get("module") or "" for node_type, entry in
                       module_index(await nodered.get_nodes()).items()}
        except NodeRedError:
            return {}
        self._modules = (self._clock(), modules)
        return modules


def _lookup(catalog: dict[str, Any], key: str) -> Any:
    """i18next's nested look-up: ``common.status.connecting`` → ``catalog["common"]["status"]["connecting"]``."""
    found: Any = catalog
    for part in key.split("."):
        if not isinstance(found, dict):
            return None
        found = found.get(part)
    return found
