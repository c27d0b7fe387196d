"""Node status texts as the editor shows them: a node may set its status to a message key
(``node-red:common.status.connecting``), which the editor words in the user's language; a model must read the same
words, not the key.

The editor (``@node-red/editor-client``, ``RED.comms.subscribe("status/#")``) translates a status text that starts
with a letter or ``@`` through ``node._(text, {defaultValue: text})``: a key without a namespace is looked up in the
namespace of the node's set (``node-red`` for the core nodes, ``<module>/<set>`` for others), ``ns:key`` in
``ns``, and a text that is no key stays as it is. The catalogs come from the Admin API as the editor loads them
(``GET /locales/<namespace>?lng=``), kept per namespace and language for :data:`CATALOG_TTL` seconds.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

from service.nodered.client import NodeRedClient, NodeRedError

CATALOG_TTL = 600.0  # seconds a catalog (and the type → namespace index) is reused: they change when modules do
FAILURE_TTL = 30.0   # seconds a catalog Node-RED did not answer counts as empty before it is asked again
# What the editor tries to translate (a text starting with a letter or "@"), less texts with white space: Node-RED's
# keys have none, so "sensor offline" costs no request.
_KEY = re.compile(r"^[@A-Za-z]\S*$")


class StatusTexts:
    """The editor's wording of status texts for one Node-RED, its catalogs cached per namespace and language.

    Args:
        clock: monotonic seconds (tests).
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._catalogs: dict[tuple[str, str], tuple[float, dict[str, Any]]] = {}  # expiry, catalog
        self._namespaces: tuple[float, dict[str, str]] | None = None  # expiry, node type → namespace

    async def shown(self, nodered: NodeRedClient, text: str | None, node_type: str | None,
                    language: str | None) -> str | None:
        """``text`` as the editor shows it in ``language`` (a BCP 47 tag Node-RED knows, e.g. ``de``,
        ``pt-BR``; default ``en-US``): a message key in the node's namespace or its own is replaced by its
        sentence; anything else, and a key Node-RED cannot word (or cannot be asked), is returned as it is."""
        if not text or not _KEY.match(text):
            return text
        namespace, _, key = text.partition(":") if ":" in text else ("", "", text)
        if not namespace:
            namespace = (await self._namespace_of(nodered)).get(node_type or "", "")
            if not namespace:
                return text
        catalog = await self._catalog(nodered, namespace, language or "en-US")
        found = _lookup(catalog, key)
        return found if isinstance(found, str) and found else text

    async def _catalog(self, nodered: NodeRedClient, namespace: str, language: str) -> dict[str, Any]:
        cached = self._catalogs.get((namespace, language))
        if cached is not None and self._clock() < cached[0]:
            return cached[1]
        try:
            answer = await nodered.get_locale(namespace, language)
            catalog, ttl = (answer if isinstance(answer, dict) else {}), CATALOG_TTL
        except NodeRedError:
            catalog, ttl = {}, FAILURE_TTL
        self._catalogs[(namespace, language)] = (self._clock() + ttl, catalog)
        return catalog

    async def _namespace_of(self, nodered: NodeRedClient) -> dict[str, str]:
        """Node type → its message namespace: ``node-red`` for the core nodes, else the node set's id
        (``<module>/<set>``, where ``@node-red/registry``'s loader registers a set's own catalog)."""
        if self._namespaces is not None and self._clock() < self._namespaces[0]:
            return self._namespaces[1]
        try:
            node_sets = await nodered.get_nodes()
        except NodeRedError:
            return {}
        namespaces = {node_type: "node-red" if node_set.get("module") == "node-red" else str(node_set.get("id") or "")
                      for node_set in node_sets if isinstance(node_set, dict)
                      for node_type in node_set.get("types") or []}
        self._namespaces = (self._clock() + CATALOG_TTL, namespaces)
        return namespaces


def _lookup(catalog: dict[str, Any], key: str) -> Any:
    """i18next's nested look-up: ``common.status.connecting`` → ``catalog["common"]["status"]["connecting"]``."""
    found: Any = catalog
    for part in key.split("."):
        if not isinstance(found, dict):
            return None
        found = found.get(part)
    return found
