"""Per-user concurrency: how many chat streams one Node-RED user may have open at once."""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Hashable, Iterator

from service.errors import ServiceError


class StreamLimiter:
    """Counts open streams per user; :meth:`slot` refuses one over ``max_per_user`` with 429 ``too_many_requests``.

    Single event loop only (no locking needed: ``slot`` never awaits between the check and the increment).
    """

    def __init__(self, max_per_user: int):
        self.max_per_user = max_per_user
        self._open: Counter[Hashable] = Counter()

    def open_streams(self, user: Hashable) -> int:
        return self._open[user]

    @contextlib.contextmanager
    def slot(self, user: Hashable) -> Iterator[None]:
        if self._open[user] >= self.max_per_user:
            raise ServiceError("too_many_requests", status=429, params={"count": self._open[user]})
        self._open[user] += 1
        try:
            yield
        finally:
            self._open[user] -= 1
            if self._open[user] <= 0:
                del self._open[user]
