"""A scripted Azure OpenAI server for tests (``AI_PROVIDER=azure-openai``).

Azure serves OpenAI's chat completions per deployment (https://learn.microsoft.com/azure/ai-services/openai/reference):
``POST /openai/deployments/<deployment>/chat/completions?api-version=<version>`` with the key in an ``api-key``
header; the body and the streamed chunks are OpenAI's, so this server answers with the scripted OpenAI-compatible
server's handler (:class:`tests.support.model_server.ScriptedModelServer`: its replies, queue, request log and
faults) once the request passed Azure's own checks, which it makes as Azure does: a request without ``api-version``
is 404 ``Resource not found``, one without a key or with a key not in ``accepted_keys`` is 401 (Azure's sentence),
one to a deployment not in ``deployments`` is 404 ``DeploymentNotFound``. What each request named is in ``calls``
(``(deployment, api_version)``), its headers in ``headers``.
"""

from __future__ import annotations

from aiohttp import web

from tests.support.model_server import ScriptedModelServer

INVALID_KEY = ("Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid "
               "key for an active subscription and use a correct regional API endpoint for your resource.")


def _error(status: int, code: str, message: str) -> web.Response:
    return web.json_response({"error": {"code": code, "message": message}}, status=status)


class ScriptedAzureServer(ScriptedModelServer):
    """Start with :meth:`start` (returns the resource endpoint, ``http://127.0.0.1:<port>``), stop with
    :meth:`stop`. ``deployments``: the deployments the resource has; ``accepted_keys``: its keys."""

    def __init__(self, deployments: set[str], accepted_keys: set[str]) -> None:
        super().__init__()
        self.deployments = deployments
        self.accepted_keys = accepted_keys
        self.calls: list[tuple[str, str | None]] = []

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def reset(self) -> None:
        super().reset()
        self.calls.clear()

    def routes(self, app: web.Application) -> None:
        app.router.add_post("/openai/deployments/{deployment}/chat/completions", self._deployment)

    async def _deployment(self, request: web.Request) -> web.StreamResponse:
        deployment = request.match_info["deployment"]
        version = request.query.get("api-version")
        with self._lock:
            self.calls.append((deployment, version))
        if not version:
            return _error(404, "404", "Resource not found")
        key = request.headers.get("api-key")
        if not key or key not in self.accepted_keys:
            with self._lock:
                self.requests.append(await request.json())
                self.headers.append(dict(request.headers))
            return _error(401, "401", INVALID_KEY)
        if deployment not in self.deployments:
            return _error(404, "DeploymentNotFound", "The API deployment for this resource does not exist. If you "
                                                      "created the deployment within the last 5 minutes, please "
                                                      "wait a moment and try again.")
        return await self._handle(request)
