"""The MCP server's audit of write decisions (``MCP_AUDIT_DB``): one row per write tool call that reached the point
of asking, with who asked (the MCP client's name and version from its ``initialize`` request: all an MCP server
knows of its caller), what (tool, arguments redacted of secrets, the change's summary), when, the decision, and the
outcome of an approved change.

The service keeps its own audit in its memory database (``approval_audit``); this server has no memory database
and may import only the Node-RED core and the knowledge package, hence this small SQLite file of its own.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any, Literal

import aiosqlite

from mcp_server.sqlite import adding_columns, open_sqlite
from service.nodered.node_secrets import strip_secrets

# approve: the person accepted with approve=true; decline: declined, or accepted with approve=false; cancel: dismissed
# without deciding; refused: the client cannot ask (no elicitation capability) or its answer was unusable.
Decision = Literal["approve", "decline", "cancel", "refused"]

SCHEMA_VERSION = 4
SCHEMA = """
CREATE TABLE IF NOT EXISTS mcp_audit (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at REAL NOT NULL,
    client_name TEXT NOT NULL,
    client_version TEXT NOT NULL DEFAULT '',
    tool TEXT NOT NULL,
    args TEXT NOT NULL DEFAULT '{}',
    summary TEXT NOT NULL DEFAULT '',
    decision TEXT NOT NULL CHECK (decision IN ('approve', 'decline', 'cancel', 'refused')),
    reason TEXT,
    outcome TEXT,
    user TEXT,
    oauth_client TEXT,
    run_id TEXT,
    instance TEXT NOT NULL DEFAULT ''
);
"""
# Columns added after version 1, added to an older file when it is opened: (name, declaration).
ADDED_COLUMNS = (("user", "TEXT"), ("oauth_client", "TEXT"), ("run_id", "TEXT"),
                 ("instance", "TEXT NOT NULL DEFAULT ''"))


@dataclass(frozen=True)
class Caller:
    """Who called a tool, as far as an MCP server can know: the client's ``clientInfo`` (``name``, ``version``),
    and with MCP sign-in the signed-in Node-RED ``user`` and the OAuth client id (``oauth_client``)."""

    name: str
    version: str = ""
    user: str | None = None
    oauth_client: str | None = None


class McpAudit:
    """The audit file, open for one server lifespan. Each write commits at once (a decision is on disk before the
    change it approves is applied). Every row names the Node-RED ``instance`` it was written for (``""`` for a
    server in front of one Node-RED, else its name in ``MCP_NODERED_INSTANCES``)."""

    def __init__(self, db: aiosqlite.Connection, instance: str = ""):
        self._db = db
        self.instance = instance

    @classmethod
    async def open(cls, path: str, instance: str = "") -> McpAudit:
        """Open (creating if needed) the audit at ``path`` for the Node-RED ``instance``.

        Raises:
            OSError, sqlite3.Error: the file cannot be opened or created.
        """
        db = await open_sqlite(path, SCHEMA, SCHEMA_VERSION, adding_columns("mcp_audit", ADDED_COLUMNS))
        return cls(db, instance)

    async def record(self, caller: Caller, tool: str, args: dict[str, Any], summary: str, decision: Decision,
                     reason: str | None = None, run_id: str | None = None) -> int:
        """Add one decision (``args`` are stored redacted of secrets, as previews show them; ``run_id``: the build
        run the call belongs to, see the ``build`` prompt); returns its row id."""
        cursor = await self._db.execute(
            "INSERT INTO mcp_audit(created_at, client_name, client_version, tool, args, summary, decision, reason, "
            "user, oauth_client, run_id, instance) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (time.time(), caller.name, caller.version, tool, json.dumps(strip_secrets(args), ensure_ascii=False),
             summary, decision, reason, caller.user, caller.oauth_client, run_id, self.instance))
        await self._db.commit()
        assert cursor.lastrowid is not None
        return cursor.lastrowid

    async def settle(self, row_id: int, outcome: str) -> None:
        """Note what became of an approved change: ``deployed``, ``triggered``, or the failure's code
        (``flows_conflict``, ...)."""
        await self._db.execute("UPDATE mcp_audit SET outcome = ? WHERE id = ?", (outcome, row_id))
        await self._db.commit()

    async def close(self) -> None:
        await self._db.close()
