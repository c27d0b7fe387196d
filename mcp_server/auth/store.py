"""The sign-in database (``MCP_AUTH_DB``, SQLite): registered OAuth clients, grants and the tokens issued for them.

A grant is one sign-in: ``{user, client, scopes, expiry}``, revoked by setting ``revoked_at`` (its tokens are deleted
at once). Tokens are stored under the SHA-256 of the token, never in clear; the Node-RED token a grant acts with is
stored only sealed (Fernet) under a key derived from the token that carries it, so neither the database alone nor a
log of it can act on Node-RED. No password is ever stored.
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import aiosqlite

if TYPE_CHECKING:
    from cryptography.fernet import Fernet

from mcp_server.sqlite import adding_columns, open_sqlite

TokenKind = Literal["access", "refresh"]

SCHEMA_VERSION = 2
SCHEMA = """
CREATE TABLE IF NOT EXISTS mcp_auth_clients (
    client_id TEXT PRIMARY KEY,
    info TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS mcp_auth_grants (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user TEXT NOT NULL,
    client_id TEXT NOT NULL,
    scopes TEXT NOT NULL,
    created_at REAL NOT NULL,
    expires_at REAL NOT NULL,
    revoked_at REAL,
    instance TEXT NOT NULL DEFAULT '',
    last_used_at REAL
);
CREATE TABLE IF NOT EXISTS mcp_auth_tokens (
    hash TEXT PRIMARY KEY,
    grant_id INTEGER NOT NULL REFERENCES mcp_auth_grants(id),
    kind TEXT NOT NULL CHECK (kind IN ('access', 'refresh')),
    expires_at REAL NOT NULL,
    resource TEXT,
    sealed TEXT NOT NULL
);
"""
# Columns of mcp_auth_grants added after version 1, added to an older file when it is opened: (name, declaration).
ADDED_GRANT_COLUMNS = (("instance", "TEXT NOT NULL DEFAULT ''"), ("last_used_at", "REAL"))
# Seconds between two notes of a grant's last use (a note is a write; one per request would be one write per call).
LAST_USED_EVERY = 60.0
GRANT_COLUMNS = "g.id, g.user, g.client_id, g.scopes, g.created_at, g.expires_at, g.revoked_at, g.instance, " \
                "g.last_used_at"


def token_hash(token: str) -> str:
    """The key a token is stored under: hex SHA-256 (tokens carry 256 random bits, so no salt is needed)."""
    return hashlib.sha256(token.encode()).hexdigest()


def _fernet(token: str) -> Fernet:
    # Imported on first use: cryptography's bindings are about 7 MB resident, which a server without sign-in (the
    # service's in-process one, a stdio server) would carry for nothing.
    from cryptography.fernet import Fernet
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"nodered-mcp grant seal").derive(token.encode())
    return Fernet(base64.urlsafe_b64encode(key))


def seal(secret: str, token: str) -> str:
    """``secret`` encrypted under a key derived from ``token`` (HKDF-SHA256, Fernet)."""
    return _fernet(token).encrypt(secret.encode()).decode()


def unseal(sealed: str, token: str) -> str | None:
    """What :func:`seal` sealed with ``token``; ``None`` when ``token`` is not the one it was sealed with."""
    from cryptography.fernet import InvalidToken

    try:
        return _fernet(token).decrypt(sealed.encode()).decode()
    except InvalidToken:
        return None


@dataclass(frozen=True)
class Grant:
    """One sign-in of ``user`` (a Node-RED user name of the Node-RED ``instance``: ``""`` for a server in front of
    one Node-RED, else its name in ``MCP_NODERED_INSTANCES``) for ``client_id`` with ``scopes``; times in Unix
    seconds (``last_used_at``: the last call with one of its tokens, noted at most every :data:`LAST_USED_EVERY`
    seconds; ``None``: never used)."""

    id: int
    user: str
    client_id: str
    scopes: list[str]
    created_at: float
    expires_at: float
    revoked_at: float | None = None
    instance: str = ""
    last_used_at: float | None = None

    @classmethod
    def of_row(cls, row: Any) -> Grant:
        """A grant from a row of :data:`GRANT_COLUMNS`."""
        return cls(row[0], row[1], row[2], row[3].split(), row[4], row[5], row[6], row[7], row[8])


@dataclass(frozen=True)
class IssuedToken:
    """A live token found by :meth:`GrantStore.find_token`: its grant, expiry (Unix seconds), resource, and the
    Node-RED token it acts with (unsealed)."""

    grant: Grant
    kind: TokenKind
    expires_at: float
    resource: str | None
    nodered_token: str = field(repr=False)


class GrantStore:
    """The sign-in database, open for the server's lifetime; every write commits at once."""

    def __init__(self, db: aiosqlite.Connection):
        self._db = db

    @classmethod
    async def open(cls, path: str) -> GrantStore:
        """Open (creating if needed) the database at ``path``.

        Raises:
            OSError, sqlite3.Error: the file cannot be opened or created.
        """
        return cls(await open_sqlite(path, SCHEMA, SCHEMA_VERSION,
                                     adding_columns("mcp_auth_grants", ADDED_GRANT_COLUMNS)))

    async def close(self) -> None:
        await self._db.close()

    async def save_client(self, client_id: str, info: dict[str, Any]) -> None:
        """Store a registered client's information (OAuth client metadata, its ``client_secret`` included)."""
        await self._db.execute("INSERT OR REPLACE INTO mcp_auth_clients(client_id, info, created_at) VALUES (?, ?, ?)",
                               (client_id, json.dumps(info), time.time()))
        await self._db.commit()

    async def client(self, client_id: str) -> dict[str, Any] | None:
        async with self._db.execute("SELECT info FROM mcp_auth_clients WHERE client_id = ?", (client_id,)) as cur:
            row = await cur.fetchone()
        return json.loads(row[0]) if row else None

    async def create_grant(self, user: str, client_id: str, scopes: list[str], expires_at: float,
                           instance: str = "") -> Grant:
        """A new grant for the Node-RED ``instance``, live until ``expires_at`` (Unix seconds) unless revoked."""
        now = time.time()
        cursor = await self._db.execute(
            "INSERT INTO mcp_auth_grants(user, client_id, scopes, created_at, expires_at, instance) "
            "VALUES (?, ?, ?, ?, ?, ?)", (user, client_id, " ".join(scopes), now, expires_at, instance))
        await self._db.commit()
        assert cursor.lastrowid is not None
        return Grant(cursor.lastrowid, user, client_id, list(scopes), now, expires_at, instance=instance)

    async def add_token(self, grant: Grant, kind: TokenKind, token: str, expires_at: float, nodered_token: str,
                        resource: str | None) -> None:
        """Record ``token`` (hashed) for ``grant``, the Node-RED token sealed under it."""
        await self._db.execute(
            "INSERT INTO mcp_auth_tokens(hash, grant_id, kind, expires_at, resource, sealed) VALUES (?, ?, ?, ?, ?, ?)",
            (token_hash(token), grant.id, kind, expires_at, resource, seal(nodered_token, token)))
        await self._db.commit()

    async def find_token(self, token: str, kind: TokenKind) -> IssuedToken | None:
        """The live token ``token`` of ``kind``: ``None`` when unknown, expired, of a revoked or expired grant."""
        async with self._db.execute(
                f"SELECT t.kind, t.expires_at, t.resource, t.sealed, {GRANT_COLUMNS} FROM mcp_auth_tokens t "
                "JOIN mcp_auth_grants g ON g.id = t.grant_id WHERE t.hash = ?", (token_hash(token),)) as cur:
            row = await cur.fetchone()
        now = time.time()
        if row is None or row[0] != kind or row[1] < now:
            return None
        grant = Grant.of_row(row[4:])
        if grant.expires_at < now or grant.revoked_at is not None:
            return None
        nodered_token = unseal(row[3], token)
        if nodered_token is None:
            return None
        if grant.last_used_at is None or now - grant.last_used_at > LAST_USED_EVERY:
            await self._db.execute("UPDATE mcp_auth_grants SET last_used_at = ? WHERE id = ?", (now, grant.id))
            await self._db.commit()
        return IssuedToken(grant, kind, row[1], row[2], nodered_token)

    async def drop_token(self, token: str) -> None:
        """Forget one token (a refresh token once used)."""
        await self._db.execute("DELETE FROM mcp_auth_tokens WHERE hash = ?", (token_hash(token),))
        await self._db.commit()

    async def revoke(self, grant_id: int) -> None:
        """End a grant now: every token of it is refused from here on."""
        await self._db.execute("UPDATE mcp_auth_grants SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
                               (time.time(), grant_id))
        await self._db.execute("DELETE FROM mcp_auth_tokens WHERE grant_id = ?", (grant_id,))
        await self._db.commit()

    async def grants(self, user: str | None = None, instance: str | None = None) -> list[Grant]:
        """The grants, newest first, of ``user`` (else everyone's) on ``instance`` (else on every instance)."""
        conditions = [(column, value) for column, value in (("g.user", user), ("g.instance", instance))
                      if value is not None]
        where = " WHERE " + " AND ".join(f"{column} = ?" for column, _ in conditions) if conditions else ""
        async with self._db.execute(f"SELECT {GRANT_COLUMNS} FROM mcp_auth_grants g{where} ORDER BY g.id DESC",
                                    tuple(value for _, value in conditions)) as cur:
            rows = await cur.fetchall()
        return [Grant.of_row(row) for row in rows]

    async def client_names(self, client_ids: list[str]) -> dict[str, str]:
        """Client id → the ``client_name`` it registered with (the id itself when it gave none)."""
        names = {}
        for client_id in dict.fromkeys(client_ids):
            info = await self.client(client_id)
            names[client_id] = str((info or {}).get("client_name") or client_id)
        return names
