"""``ARCHITECTURE.md`` stays true and short: every repository path it names in backticks exists, every README
section it links to exists, and it is at most 400 lines (issue 32).

A backticked token is a path when it has no space, does not start with ``/`` (an HTTP route) and holds no ``://``,
and it contains a ``/`` or ends in a file extension of the repository. ``<placeholder>`` segments
(``locales/<lang>/errors.json``) and ``*`` match any name, and at least one file must match. A bare file name
(``sse-parser.js``, named under the folder the text is about) must be the name of a file somewhere in the
repository.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "ARCHITECTURE.md"
MAX_LINES = 400
EXTENSIONS = (".py", ".js", ".json", ".html", ".md", ".yaml", ".yml", ".css", ".toml", ".sh", ".txt", ".png")
# Folders that are installs, caches or outputs, not the repository's own files.
NOT_OURS = {"node_modules", "__pycache__", "test-artifacts", "bench-results", "build", "dist"}
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
BACKTICKED = re.compile(r"`([^`\n]+)`")
LINK = re.compile(r"\]\(([^)\s]+)\)")


def path_tokens(text: str) -> list[str]:
    """The backticked tokens of ``text`` (fenced blocks left out) that name repository paths, in order."""
    tokens = []
    for token in BACKTICKED.findall(FENCE.sub("", text)):
        if any(c.isspace() for c in token) or token.startswith("/") or "://" in token:
            continue
        if "/" in token or token.endswith(EXTENSIONS):
            tokens.append(token)
    return tokens


def repository_file_names(root: Path) -> set[str]:
    """The names of the files under ``root``, outside hidden folders and :data:`NOT_OURS`."""
    names: set[str] = set()
    for _, folders, files in os.walk(root):
        folders[:] = [f for f in folders if not f.startswith(".") and f not in NOT_OURS]
        names.update(files)
    return names


def exists(token: str, root: Path, file_names: set[str]) -> bool:
    """Whether ``token`` (see the module docstring) names something in the repository at ``root``."""
    pattern = re.sub(r"<[^>/]+>", "*", token)
    if "/" not in pattern:
        return any(Path(name).match(pattern) for name in file_names)
    pattern = pattern.rstrip("/")
    if "*" in pattern:
        return next(root.glob(pattern), None) is not None
    return (root / pattern).exists()


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_path_the_architecture_names_exists():
    text = DOC.read_text(encoding="utf-8")
    tokens = path_tokens(text)
    assert len(tokens) >= 50, "the map names the repository's files; the path pattern found too few"
    file_names = repository_file_names(REPO)
    missing = sorted({token for token in tokens if not exists(token, REPO, file_names)})
    assert missing == [], f"ARCHITECTURE.md names paths that do not exist: {missing}"


def test_every_readme_section_the_architecture_links_to_exists():
    text = DOC.read_text(encoding="utf-8")
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    anchors = {github_anchor(line.lstrip("#")) for line in FENCE.sub("", readme).splitlines() if line.startswith("#")}
    links = [link for link in LINK.findall(text) if "://" not in link]
    assert links, "the map links to the README's sections"
    for link in links:
        target, _, anchor = link.partition("#")
        assert (REPO / target).exists(), f"ARCHITECTURE.md links to {target}, which does not exist"
        if target == "README.md" and anchor:
            assert anchor in anchors, f"ARCHITECTURE.md links to README section #{anchor}, which does not exist"


def test_the_architecture_is_short_enough_to_read_in_ten_minutes():
    lines = DOC.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_LINES, f"ARCHITECTURE.md has {len(lines)} lines; keep it at most {MAX_LINES}"


def test_the_path_check_refuses_a_path_that_does_not_exist():
    file_names = repository_file_names(REPO)
    text = ("`service/chat/pipeline.py`, `locales/<lang>/errors.json`, `service/nowhere.py`, `sse-parser.js`, "
            "`no-such-file.js`, `service/web/`, `service/nowhere/`, `POST /ai-sidebar/resume`, `/healthz`, "
            "`ai-sidebar.read`")
    tokens = path_tokens(text)
    assert tokens == ["service/chat/pipeline.py", "locales/<lang>/errors.json", "service/nowhere.py",
                      "sse-parser.js", "no-such-file.js", "service/web/", "service/nowhere/"]
    assert [exists(token, REPO, file_names) for token in tokens] == [True, True, False, True, False, True, False]
