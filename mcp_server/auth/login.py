"""The sign-in page of MCP sign-in (``GET``/``POST <base>/login``): where ``/authorize`` sends the person. They
enter their Node-RED user name and password and choose the scopes to grant (``read`` always; ``write`` only if they
tick it and Node-RED lets them deploy); Node-RED checks the password (:mod:`mcp_server.auth.nodered_login`), and
the browser goes back to the client with an authorization code. A wrong password shows the page again, no grant."""

from __future__ import annotations

import html
import logging

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from .nodered_login import LoginRefused, NodeRedUnreachable, nodered_login
from .provider import READ_SCOPE, WRITE_SCOPE, NodeRedAuthProvider, PendingSignIn

log = logging.getLogger(__name__)

# The page may not be framed (a consent page inside another site's frame could be clicked through) nor cached.
HEADERS = {"Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
                                      "frame-ancestors 'none'",
           "X-Frame-Options": "DENY", "Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}

TEXT = {
    "title": "Sign in to Node-RED",
    "intro": "{client} asks to use Node-RED through its MCP server as you.",
    "username": "Node-RED user name",
    "password": "Password",
    "read": "Read flows, settings and runtime messages",
    "write": "Change flows (each change still asks you to approve it)",
    "submit": "Sign in and allow",
    "refused": "Node-RED refused this user name and password.",
    "unreachable": "Node-RED could not be reached; try again in a moment.",
}


def login_page(pending: PendingSignIn, request_id: str, client_name: str, error: str | None = None,
               username: str = "") -> str:
    """The sign-in form (HTML) for ``pending``, with ``error`` above it when the last attempt failed."""
    esc = html.escape
    write = (f'<label><input type="checkbox" name="scope" value="{WRITE_SCOPE}"> {esc(TEXT["write"])}</label>'
             if WRITE_SCOPE in pending.scopes else "")
    problem = f'<p role="alert" class="error">{esc(error)}</p>' if error else ""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>{esc(TEXT["title"])}</title>
<style>body{{font-family:sans-serif;max-width:28em;margin:3em auto}}label{{display:block;margin:.6em 0}}
.error{{color:#b00}}</style></head>
<body><h1>{esc(TEXT["title"])}</h1><p>{esc(TEXT["intro"].format(client=client_name))}</p>{problem}
<form method="post" action="login">
<input type="hidden" name="request" value="{esc(request_id)}">
<label>{esc(TEXT["username"])} <input name="username" autocomplete="username" required value="{esc(username)}"></label>
<label>{esc(TEXT["password"])} <input name="password" type="password" autocomplete="current-password" required></label>
<label><input type="checkbox" checked disabled> {esc(TEXT["read"])}</label>{write}
<button type="submit">{esc(TEXT["submit"])}</button>
</form></body></html>"""


def _expired() -> JSONResponse:
    return JSONResponse({"error": {"code": "mcp_signin_expired",
                                   "message": "This sign-in request is unknown or older than 10 minutes: start the "
                                              "connection from your MCP client again."}},
                        status_code=400, headers=HEADERS)


async def _client_name(provider: NodeRedAuthProvider, pending: PendingSignIn) -> str:
    client = await provider.get_client(pending.client_id)
    return (client.client_name if client is not None and client.client_name else None) or pending.client_id


async def login(request: Request, provider: NodeRedAuthProvider) -> Response:
    """``GET``: the form for ``?request=<id>``; ``POST``: check the form's user with Node-RED, then redirect (302)
    to the client with the code, or show the form again (401 refused, 502 Node-RED unreachable). An unknown or
    expired request id is 400 ``mcp_signin_expired``."""
    if request.method == "GET":
        request_id = request.query_params.get("request", "")
        pending = provider.pending(request_id)
        if pending is None:
            return _expired()
        return HTMLResponse(login_page(pending, request_id, await _client_name(provider, pending)), headers=HEADERS)
    form = await request.form()
    request_id = str(form.get("request") or "")
    pending = provider.pending(request_id)
    if pending is None:
        return _expired()
    username, password = str(form.get("username") or ""), str(form.get("password") or "")
    want_write = WRITE_SCOPE in form.getlist("scope") and WRITE_SCOPE in pending.scopes
    try:
        signed = await nodered_login(provider.nodered_url, username, password, want_write)
    except (LoginRefused, NodeRedUnreachable) as err:
        refused = isinstance(err, LoginRefused)
        log.warning("MCP sign-in of Node-RED user %r failed: %s", username, err)
        page = login_page(pending, request_id, await _client_name(provider, pending),
                          TEXT["refused" if refused else "unreachable"], username)
        return HTMLResponse(page, status_code=401 if refused else 502, headers=HEADERS)
    scopes = [READ_SCOPE] + ([WRITE_SCOPE] if want_write and signed.may_write else [])
    target = await provider.signed_in(request_id, username, scopes, signed.token, signed.expires_in)
    return RedirectResponse(target, status_code=302, headers=HEADERS)
