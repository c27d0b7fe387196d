"""Node-RED's Projects feature beside the flow history (issue 35): when it is on and a project is active, its git
history is read too, so the sidebar and the model say so rather than pretend the service's history is the only one.

Facts (``@node-red/editor-api`` ``lib/editor/projects.js``, ``@node-red/runtime`` ``lib/api/projects.js`` and
``lib/storage/localfilesystem/projects/git/index.js``, Node-RED 4.1): the ``/projects`` routes answer 404 when the
feature is off (``editorTheme.projects.enabled`` false, or git missing); ``GET /projects`` answers
``{"projects": [...], "active": name}`` without ``active`` when none is active; ``GET /projects/:id/commits``
(``projects.read``) runs ``git log`` and answers ``{"commits": [{sha, author, date, subject, ...}], "total"}`` newest
first, ``date`` the committer time in Unix seconds.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from service.nodered.client import NodeRedClient, NodeRedError

COMMITS = 10  # the newest commits shown


def _time(seconds: Any) -> str | None:
    try:
        return datetime.fromtimestamp(int(seconds), UTC).isoformat().replace("+00:00", "Z")
    except (TypeError, ValueError, OverflowError, OSError):
        return None


def _commit(raw: dict[str, Any]) -> dict[str, Any]:
    return {"sha": str(raw.get("sha", "")), "subject": str(raw.get("subject", "")),
            "author": str(raw.get("author", "")), "time": _time(raw.get("date"))}


async def project_history(client: NodeRedClient, limit: int = COMMITS) -> dict[str, Any] | None:
    """The active Node-RED project and its newest commits, read with ``client``'s rights (the caller's).

    Returns:
        ``None`` when Projects is off (404) or no project is active; ``{"name", "commits": [{sha, subject,
        author, time (ISO 8601 UTC)}]}`` newest first, at most ``limit``; ``{"name", "error": code}`` when the
        project list or the commits cannot be read (``name`` ``None`` when even the list failed), ``code`` a
        :class:`~service.nodered.client.NodeRedError` code such as ``nodered_unauthorized``. Never raises for
        Node-RED's failures.
    """
    try:
        listing = await client.get_projects()
    except NodeRedError as err:
        return None if err.code == "not_found" else {"name": None, "error": err.code}
    name = listing.get("active") if isinstance(listing, dict) else None
    if not isinstance(name, str) or not name:
        return None
    try:
        answer = await client.get_project_commits(name, limit)
    except NodeRedError as err:
        return {"name": name, "error": err.code}
    commits = answer.get("commits") if isinstance(answer, dict) else None
    return {"name": name, "commits": [_commit(c) for c in (commits or [])[:limit] if isinstance(c, dict)]}


def project_text(project: dict[str, Any] | None) -> str:
    """One sentence for the model about the active project's git history, or ``""`` when Projects is off."""
    if project is None:
        return ""
    if project.get("error"):
        return (f"Node-RED's Projects feature is on (project {project.get('name') or 'unknown'}); its git history "
                f"could not be read ({project['error']}).")
    commits = project.get("commits") or []
    if not commits:
        return f"Node-RED's Projects feature is on: project {project['name']}, no commits yet."
    latest = commits[0]
    return (f"Node-RED's Projects feature is on: project {project['name']} keeps its own git history too; its "
            f"latest commit is {latest['subject']!r} ({latest['time']}, {latest['sha'][:7]}).")
