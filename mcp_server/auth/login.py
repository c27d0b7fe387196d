"""The sign-in page of MCP sign-in (``GET``/``POST <base>/login``): where ``/authorize`` sends the person. They
enter their Node-RED user name and password and choose the scopes to grant (``read`` always; ``write`` only if they
tick it and Node-RED lets them deploy); Node-RED checks the password (:mod:`mcp_server.auth.nodered_login`), and
the browser goes back to the client with an authorization code. A wrong password shows the page again, no grant."""

from __future__ import annotations

import functools
import html
import json
import logging
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from service.nodered.messages import (
    DEFAULT_LANGUAGE,
    LOCALES_DIR,
    MessageCatalog,
    accept_languages,
    english,
    match_language,
)

from .nodered_login import LoginRefused, NodeRedUnreachable, nodered_login
from .provider import READ_SCOPE, WRITE_SCOPE, NodeRedAuthProvider, PendingSignIn

log = logging.getLogger(__name__)

# The page may not be framed (a consent page inside another site's frame could be clicked through) nor cached. No
# form-action: browsers apply it to the redirect after the post too, which goes to the client's redirect URI.
HEADERS = {"Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
           "X-Frame-Options": "DENY", "Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}

PAGE_FILE = "mcp_signin.json"  # the page's sentences per language, beside errors.json


@functools.cache
def page_texts() -> dict[str, dict[str, str]]:
    """Language → the sign-in page's sentences (``locales/<lang>/mcp_signin.json``), read once."""
    return {path.parent.name: json.loads(path.read_text(encoding="utf-8"))
            for path in sorted(LOCALES_DIR.glob(f"*/{PAGE_FILE}"))}


def page_language(accept_language: str | None) -> str:
    """The first ``Accept-Language`` entry a shipped page language matches, else English."""
    for tag in accept_languages(accept_language):
        found = match_language(tag, page_texts())
        if found:
            return found
    return DEFAULT_LANGUAGE


def text(language: str, key: str) -> str:
    return page_texts().get(language, {}).get(key) or page_texts()[DEFAULT_LANGUAGE][key]


def login_page(pending: PendingSignIn, request_id: str, client_name: str, language: str, error: str | None = None,
               username: str = "") -> str:
    """The sign-in form (HTML, in ``language``) for ``pending``, with the sentence ``error`` (a key of
    :data:`PAGE_FILE`) above it when the last attempt failed."""
    esc = html.escape
    words = {key: text(language, key) for key in page_texts()[DEFAULT_LANGUAGE]}
    write = (f'<label><input type="checkbox" name="scope" value="{WRITE_SCOPE}"> {esc(words["write"])}</label>'
             if WRITE_SCOPE in pending.scopes else "")
    problem = f'<p role="alert" class="error">{esc(words[error])}</p>' if error else ""
    return f"""<!doctype html>
<html lang="{esc(language)}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>{esc(words["title"])}</title>
<style>body{{font-family:sans-serif;max-width:28em;margin:3em auto}}label{{display:block;margin:.6em 0}}
.error{{color:#b00}}</style></head>
<body><h1>{esc(words["title"])}</h1><p>{esc(words["intro"].format(client=client_name))}
{esc(words["return"].format(target=_origin(str(pending.params.redirect_uri))))}</p>{problem}
<form method="post" action="login">
<input type="hidden" name="request" value="{esc(request_id)}">
<label>{esc(words["username"])} <input name="username" autocomplete="username" required value="{esc(username)}"></label>
<label>{esc(words["password"])} <input name="password" type="password" autocomplete="current-password" required></label>
<label><input type="checkbox" checked disabled> {esc(words["read"])}</label>{write}
<button type="submit">{esc(words["submit"])}</button>
</form></body></html>"""


def _origin(url: str) -> str:
    """``scheme://host[:port]`` of ``url``: where the code goes, shown so that a person sees a client that
    registered someone else's name."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _expired(request: Request) -> JSONResponse:
    catalog = error_catalog()
    language = catalog.negotiate(None, request.headers.get("accept-language"))
    message = catalog.render("mcp_signin_expired", {}, language) or english("mcp_signin_expired")
    return JSONResponse({"error": {"code": "mcp_signin_expired", "message": message}}, status_code=400,
                        headers=HEADERS)


@functools.cache
def error_catalog() -> MessageCatalog:
    return MessageCatalog()


async def _client_name(provider: NodeRedAuthProvider, pending: PendingSignIn) -> str:
    client = await provider.get_client(pending.client_id)
    return (client.client_name if client is not None and client.client_name else None) or pending.client_id


async def login(request: Request, provider: NodeRedAuthProvider) -> Response:
    """``GET``: the form for ``?request=<id>``; ``POST``: check the form's user with Node-RED, then redirect (302)
    to the client with the code, or show the form again (401 refused, 502 Node-RED unreachable). An unknown or
    expired request id is 400 ``mcp_signin_expired``."""
    language = page_language(request.headers.get("accept-language"))
    if request.method == "GET":
        request_id = request.query_params.get("request", "")
        pending = provider.pending(request_id)
        if pending is None:
            return _expired(request)
        page = login_page(pending, request_id, await _client_name(provider, pending), language)
        return HTMLResponse(page, headers=HEADERS)
    form = await request.form()
    request_id = str(form.get("request") or "")
    pending = provider.pending(request_id)
    if pending is None:
        return _expired(request)
    username, password = str(form.get("username") or ""), str(form.get("password") or "")
    want_write = WRITE_SCOPE in form.getlist("scope") and WRITE_SCOPE in pending.scopes
    try:
        signed = await nodered_login(pending.endpoint.nodered_url, username, password, want_write)
    except (LoginRefused, NodeRedUnreachable) as err:
        refused = isinstance(err, LoginRefused)
        log.warning("MCP sign-in of Node-RED user %r failed: %s", username, err)
        page = login_page(pending, request_id, await _client_name(provider, pending), language,
                          "refused" if refused else "unreachable", username)
        return HTMLResponse(page, status_code=401 if refused else 502, headers=HEADERS)
    scopes = [READ_SCOPE] + ([WRITE_SCOPE] if want_write and signed.may_write else [])
    target = await provider.signed_in(request_id, username, scopes, signed.token, signed.expires_in)
    return RedirectResponse(target, status_code=302, headers=HEADERS)
