"""Node help as Node-RED serves it, cut into sections.

``GET /nodes`` with an ``Accept`` other than ``application/json`` answers the editor's HTML for every enabled node
set (``@node-red/registry/lib/registry.js`` ``getAllNodeConfigs``): for each set a marker
``<!-- --- [red-module:<module>/<set>] --- -->``, the set's ``<script type="text/javascript">`` (where
``RED.nodes.registerType("<type>", {category: ...})`` runs) and edit templates, then its help blocks
``<script type="text/html" data-help-name="<type>">`` in the language asked by ``Accept-Language`` (the first
language the header accepts; a module without that translation falls back to its ``en-US`` help,
``@node-red/registry/lib/loader.js`` ``getNodeHelp``). Help follows the Inputs / Outputs / Details form: an
introduction, then ``<h3>`` sections (headings translated).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from html.parser import HTMLParser

_MARKER = re.compile(r"<!-- --- \[red-module:([^\]]+)\] --- -->")
# The same expression Node-RED's loader uses to find help blocks, with the type captured.
_HELP = re.compile(r"<script[^>]*\sdata-help-name\s*=\s*['\"]([^'\"]+)['\"][^>]*>([\s\S]*?)</script>", re.I)
_CATEGORY = re.compile(r"registerType\(\s*['\"]([^'\"]+)['\"]\s*,\s*\{[\s\S]{0,400}?"
                       r"\bcategory\s*:\s*['\"]([^'\"]*)['\"]")
_BLOCKS = frozenset({"p", "div", "li", "dt", "dd", "ul", "ol", "dl", "pre", "br", "tr", "table", "h1", "h2", "h3",
                     "h4", "h5", "h6", "blockquote"})
MAX_SECTION_CHARS = 1500  # a longer section is cut into parts at line ends


@dataclass(frozen=True)
class HelpSection:
    """One section of one node type's help.

    Attributes:
        node_type: the Node-RED type (``csv``, ``mqtt in``).
        module: the npm module of its node set (``node-red`` for the core nodes).
        node_set: the node set id (``node-red/csv``).
        category: the palette category from ``registerType`` (``parser``, ``config``), ``""`` when not found.
        section: the heading as written in the help (translated), ``""`` for the introduction.
        part: 0, or the number of the part when a long section is cut.
        text: plain text, one line per block.
    """

    node_type: str
    module: str
    node_set: str
    category: str
    section: str
    part: int
    text: str


class _TextParser(HTMLParser):
    """Plain text of help HTML, split at ``<h3>``/``<h4>`` headings into (heading, text) pairs."""

    def __init__(self, headings: frozenset[str] = frozenset({"h3", "h4"})) -> None:
        super().__init__(convert_charrefs=True)
        self.headings = headings
        self.sections: list[tuple[str, list[str]]] = [("", [])]
        self._heading: list[str] | None = None
        self._skip = 0
        self._type_span = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self._skip += 1
        elif tag in self.headings:
            self._heading = []
        elif tag in _BLOCKS:
            self._text("\n")
        elif tag == "span" and ("class", "property-type") in attrs:
            self._type_span = True
            self._text(" (")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self._skip = max(0, self._skip - 1)
        elif tag in self.headings and self._heading is not None:
            heading = " ".join("".join(self._heading).split())
            self._heading = None
            self.sections.append((heading, []))
        elif tag in _BLOCKS:
            self._text("\n")
        elif tag == "span" and self._type_span:
            self._type_span = False
            self._text(") ")

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self._text(data)

    def _text(self, data: str) -> None:
        if self._heading is not None:
            self._heading.append(data)
        else:
            self.sections[-1][1].append(data)


def _clean(parts: list[str]) -> str:
    lines = (" ".join(line.split()) for line in "".join(parts).split("\n"))
    return "\n".join(line for line in lines if line)


def split_text(text: str) -> list[str]:
    """``text`` cut at line ends into parts of at most :data:`MAX_SECTION_CHARS` characters (a longer line stays
    whole)."""
    if len(text) <= MAX_SECTION_CHARS:
        return [text]
    parts, current = [], ""
    for line in text.split("\n"):
        if current and len(current) + len(line) > MAX_SECTION_CHARS:
            parts.append(current)
            current = ""
        current = f"{current}\n{line}" if current else line
    return parts + ([current] if current else [])


def help_sections(node_type: str, html: str, module: str = "", node_set: str = "",
                  category: str = "") -> list[HelpSection]:
    """The sections of one help block's inner HTML; empty sections are left out."""
    parser = _TextParser()
    parser.feed(html)
    parser.close()
    sections: list[HelpSection] = []
    for heading, parts in parser.sections:
        text = _clean(parts)
        if not text:
            continue
        for number, piece in enumerate(split_text(text)):
            sections.append(HelpSection(node_type, module, node_set, category, heading, number, piece))
    return sections


def html_sections(html: str) -> list[tuple[str, str]]:
    """Plain text of an HTML page as ``(heading, text)`` pairs, cut at its ``<h1>`` to ``<h4>`` headings (the text
    before the first heading under ``""``); scripts and styles left out, empty sections too. Python's own
    :class:`html.parser.HTMLParser`, as for node help: tolerant of broken markup, no dependency."""
    parser = _TextParser(frozenset({"h1", "h2", "h3", "h4"}))
    parser.feed(html)
    parser.close()
    return [(heading, text) for heading, parts in parser.sections if (text := _clean(parts))]


def parse_node_configs(html: str) -> list[HelpSection]:
    """Every help section in a ``GET /nodes`` HTML answer, in the order Node-RED serves the node sets.

    Returns:
        :class:`HelpSection` items; ``module`` is the set id without its last ``/<set>`` part (scoped modules keep
        their ``@scope/``).
    """
    sections: list[HelpSection] = []
    pieces = _MARKER.split(html)
    # split() with one group: [before, set id, segment, set id, segment, ...]
    for node_set, segment in zip(pieces[1::2], pieces[2::2]):
        module = node_set.rsplit("/", 1)[0]
        categories = dict(_CATEGORY.findall(segment))
        for node_type, inner in _HELP.findall(segment):
            sections += help_sections(node_type, inner, module, node_set, categories.get(node_type, ""))
    return sections
