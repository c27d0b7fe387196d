"""Two service replicas on one PostgreSQL (issue 23's deployment, on one machine): simultaneous streams split
between them, with the same measures as :mod:`tests.bench.concurrency`.

A PostgreSQL server is started for the phase (:class:`tests.support.postgres.PostgresServer`, the Debian
``postgresql`` package as the tests use it); two ``python -m service`` processes, one worker each, get the same
``DATABASE_URL`` (memory, sessions, approvals, usage and the per-user open streams live there) and their own
``MEMORY_DB_PATH`` for the knowledge index, as on two machines. Chat ``i`` goes to replica ``i % 2``: the split a
round-robin load balancer makes. Without PostgreSQL installed the phase is skipped, saying why.
"""

from __future__ import annotations

from typing import Any

from tests.support.nodered import free_port
from tests.support.postgres import PostgresServer, postgres_bin

from . import concurrency
from .stack import Stack

REPLICAS = 2


async def run(stack: Stack, *, streams: int, words: int, token_delay: float, timeout: float) -> dict[str, Any]:
    """``streams`` chats at once over :data:`REPLICAS` replicas on one new PostgreSQL database; returns the level's
    measures (errors, gaps, TTFT, CPU and peak RSS summed over the replicas) and the model's own TTFT, or
    ``{"skipped": reason}``."""
    bindir = postgres_bin()
    if bindir is None:
        return {"skipped": "PostgreSQL is not installed (/usr/lib/postgresql/<version>/bin; `make test` installs it)"}
    server = PostgresServer(bindir)
    replicas = []
    try:
        server.start()
        url = server.new_database()
        for number in range(REPLICAS):
            replica = stack.new_service(free_port(), f"replica-{number}",
                                        extra={"DATABASE_URL": url, "AI_SIDEBAR_WORKERS": "1"})
            replicas.append(replica)
            replica.start()  # one after the other: the first migrates the database
        stack.model.control("reply", {"words": words, "token_delay": token_delay})
        stack.model.control("reset")
        model = await concurrency.model_ttft(stack)
        measured = await concurrency.level(stack, streams, words, timeout, services=replicas)
        stack.model.control("reset")
        return {"replicas": REPLICAS, "database": f"PostgreSQL {bindir.parent.name}", "words": words,
                "token_delay_ms": token_delay * 1000, "model_ttft_ms": model, "level": measured}
    finally:
        for replica in replicas:
            replica.stop()
        server.stop()
