"""Secret detection and redaction for Node-RED flows and any text that leaves the service.

Two kinds of knowledge meet here:

* **Secret formats**, from Yelp's ``detect-secrets`` (1.5, https://github.com/Yelp/detect-secrets): its provider
  key detectors (AWS, GitHub, GitLab, Slack, Stripe, Twilio, SendGrid, Telegram, Discord, npm, PyPI, Azure, IBM,
  ...), Basic-auth URLs, JWTs (formally validated), the keyword detector's assignment patterns, and its Shannon
  entropy checks for random-looking base64 and hex strings with the library's false-positive heuristics
  (sequential strings, UUIDs, templated values). A few formats the library does not know yet (current OpenAI,
  Anthropic and DeepSeek ``sk-`` keys, Google ``AIza`` keys, Hugging Face ``hf_`` tokens, GitHub fine-grained
  tokens, Stripe test keys, PEM private key blocks) are added here.
* **Node-RED knowledge**: which properties of which core nodes carry secrets. Node ``credentials`` are dropped;
  the ``headers`` of ``http request`` / ``websocket-client`` (list of ``{keyType, keyValue, valueType,
  valueValue}``) and ``http response`` (object) are sent only for header names known to be safe (Content-Type,
  Accept, ...): every other header value is redacted; typed-input rules (change rules ``{p, to, tot}``, inject
  ``props`` ``{p, v, vt}``, environment entries ``{name, value, type}``) that set a secret-named property lose
  their literal value, while a value that is a reference (``msg``/``flow``/``global``/``env`` path) is kept;
  environment entries of type ``cred`` always lose their value; code (function ``func``/``initialize``/
  ``finalize``) is scanned for quoted secrets only, since unquoted right-hand sides are expressions.

A property or header *name* is secret-looking when one of its words (split at camelCase, ``-``, ``_``, ``.``) is
a password/secret/token/auth word or a ``<qualifier> key`` pair such as ``apiKey`` or ``X-API-Key``, unless its
last word says it describes rather than holds the secret (``authType``, ``tokenUrl``, ``passwordField``).

A query, form or fragment parameter's value is also redacted by its shape whatever its name
(:func:`is_key_shaped`: 32+ hex digits, or 32+ random-looking base64/base64url characters), as in the weather API
URLs of many Node-RED tutorials (``appid=<32 hex>``); node ids (16 hex) and UUIDs stay.

Everything replaces only the secret part by :data:`REDACTED` and keeps the rest of the text. The Node-RED knowledge
is applied to a node by :func:`service.nodered.node_secrets.strip_secrets`; this module holds the text side.
"""

from __future__ import annotations

import base64
import binascii
import functools
import re
import urllib.parse
from collections.abc import Iterator
from typing import Any

from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
from detect_secrets.filters.heuristic import is_potential_uuid, is_sequential_string, is_templated_secret
from detect_secrets.plugins.base import RegexBasedDetector
from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString, HexHighEntropyString
from detect_secrets.plugins.jwt import JwtTokenDetector
from detect_secrets.plugins.keyword import QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP

REDACTED = "[redacted]"

# ---------------------------------------------------------------------------------------------------------------
# Names

# Words that make a property, variable, header or parameter name secret (compared lower-case, whole words).
_SECRET_WORDS = frozenset({
    "password", "passwords", "passwd", "passwort", "pwd", "pw", "pass", "passphrase", "passcode", "secret",
    "secrets", "token", "apikey", "apitoken", "authtoken", "accesstoken", "refreshtoken", "bearertoken",
    "credential", "credentials", "creds", "auth", "authorization", "authentication", "privatekey", "secretkey",
    "accesskey", "clientsecret", "appsecret", "sessiontoken", "signature", "sig", "cookie", "jwt",
})
# ``<qualifier> key`` pairs (``apiKey``, ``X-API-Key``, ``privateKey``, ``Ocp-Apim-Subscription-Key``).
_KEY_QUALIFIERS = frozenset({
    "api", "private", "secret", "access", "master", "hmac", "signing", "encryption", "app", "auth", "service",
    "account", "client", "subscription", "license", "shared", "session", "consumer", "admin", "root", "ssh", "aes",
    "crypto", "db", "database", "write", "read", "sas", "storage", "x",
})
# A last word that says the name describes a secret rather than holds one (``authType``, ``tokenUrl``).
_DESCRIPTIVE_LAST_WORDS = frozenset({
    "type", "types", "method", "mode", "url", "uri", "endpoint", "host", "path", "file", "filename", "name",
    "label", "field", "prop", "property", "expiry", "expires", "expiration", "ttl", "length", "len", "count",
    "timeout", "enabled", "required", "location", "format", "scheme", "topic", "policy", "strategy", "prompt",
    "hint", "rule", "rules", "regex", "pattern", "min", "max", "provider", "server", "version", "store", "usage",
})
_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


def name_words(name: str) -> list[str]:
    """The lower-case words of an identifier: ``"X-API-Key"`` → ``["x", "api", "key"]``, ``"authType"`` →
    ``["auth", "type"]``, ``"MQTT_PASSWORD"`` → ``["mqtt", "password"]``."""
    return [word.lower() for word in _WORDS.findall(name)]


def is_secret_name(name: str) -> bool:
    """Whether a property, variable, header or query parameter called ``name`` holds a secret.

    True when a word of the name is a password/secret/token/auth word, or a ``key`` follows a qualifier
    (``api``, ``private``, ``access``, ...), unless the last word describes the secret instead of holding it
    (``authType``, ``tokenUrl``, ``passwordField``). ``maxTokens``, ``author``, ``passthrough`` and a lone
    ``key`` (a TLS key *file*, a rule's target) are not secret names.
    """
    words = name_words(name)
    if not words or words[-1] in _DESCRIPTIVE_LAST_WORDS:
        return False
    for index, word in enumerate(words):
        if word in _SECRET_WORDS:
            return True
        if word in ("key", "keys") and index > 0 and words[index - 1] in _KEY_QUALIFIERS:
            return True
    return False


# HTTP header names whose values never carry a credential: the only headers whose values are sent as they are.
# Everything else (Authorization, X-API-Key, Cookie, a vendor's X-Whatever) is redacted: unknown means unsafe.
SAFE_HEADERS = frozenset({
    "accept", "accept-charset", "accept-encoding", "accept-language", "accept-ranges", "access-control-allow-headers",
    "access-control-allow-methods", "access-control-allow-origin", "access-control-expose-headers",
    "access-control-max-age", "access-control-request-headers", "access-control-request-method", "age", "allow",
    "cache-control", "connection", "content-disposition", "content-encoding", "content-language", "content-length",
    "content-location", "content-range", "content-type", "date", "dnt", "etag", "expect", "expires", "host",
    "if-match", "if-modified-since", "if-none-match", "if-range", "if-unmodified-since", "keep-alive",
    "last-modified", "location", "max-forwards", "origin", "pragma", "range", "referer", "referrer-policy",
    "retry-after", "server", "te", "trailer", "transfer-encoding", "upgrade", "user-agent", "vary", "via",
    "x-content-type-options", "x-forwarded-for", "x-forwarded-host", "x-forwarded-proto", "x-frame-options",
    "x-requested-with", "x-request-id", "x-correlation-id",
})


def is_safe_header(name: str) -> bool:
    """Whether an HTTP header called ``name`` is known to carry no credential (case-insensitive)."""
    return isinstance(name, str) and name.strip().lower() in SAFE_HEADERS


# ---------------------------------------------------------------------------------------------------------------
# Text

# Literal hints per detect-secrets detector: a text containing none of them cannot match the detector, so its
# patterns are skipped (the library scans line by line; scanning 100 KB of code per pattern costs milliseconds).
# A detector without an entry (a newer library version's) always runs.
_DETECTOR_HINTS = {
    "ArtifactoryDetector": tuple(f"{before}{prefix}" for before in ' \t\n=:"' for prefix in ("AKC", "AP")),
    "AWSKeyDetector": ("A3T", "ABIA", "ACCA", "AKIA", "ASIA"),
    "AzureStorageKeyDetector": ("AccountKey=",), "BasicAuthDetector": ("://",), "CloudantDetector": ("cloudant",),
    "DiscordBotTokenDetector": (".",), "GitHubTokenDetector": ("gh",), "GitLabTokenDetector": ("gl", "GR1348941"),
    "MailchimpDetector": ("-us",), "NpmDetector": ("_authToken",), "OpenAIDetector": ("T3BlbkFJ",),
    "PrivateKeyDetector": ("PRIVATE KEY", "PuTTY"), "PypiTokenDetector": ("pypi-",), "SendGridDetector": ("SG.",),
    "SlackDetector": ("xox", "XOX", "hooks.slack.com"), "SoftlayerDetector": ("softlayer",),
    "SquareOAuthDetector": ("sq0csp-",), "StripeDetector": ("k_live_",), "TelegramBotTokenDetector": (":",),
    "TwilioKeyDetector": ("AC", "SK"),
}
# The library's assignment-shaped patterns (built by ``RegexBasedDetector.build_assignment_regex``, or AWS's
# ``aws ... key = "..."``) try every position of a text: they run only on lines that name a secret.
_ASSIGNMENT_PREFIXES = ("(?:(?<=\\W)|(?<=^))", "aws")


def _library_detectors() -> tuple[list[tuple[re.Pattern, bool, frozenset[str], frozenset[str]]],
                                  list[tuple[re.Pattern, bool]]]:
    """Every regex-based ``detect-secrets`` detector's patterns, split into patterns scanned over the whole text
    (with their literal hints) and assignment patterns scanned on secret-naming lines. Each comes with whether the
    secret is the first non-empty capture group (a keyword or URL around it) or the whole match (a
    self-identifying format such as ``AKIA...``).

    Left out: the public IPv4 detector (addresses are configuration, not secrets) and JWT (validated separately).
    """
    context_detectors = {"BasicAuthDetector", "CloudantDetector", "IbmCloudIamDetector", "IbmCosHmacDetector",
                         "SoftlayerDetector", "NpmDetector", "AWSKeyDetector"}
    whole, assignments = [], []
    detector: Any  # detect-secrets declares ``denylist`` as a property of instances; its classes hold it as a tuple
    for detector in get_mapping_from_secret_type_to_class().values():
        if not issubclass(detector, RegexBasedDetector) or detector.__name__ in ("IPPublicDetector",
                                                                                   "JwtTokenDetector"):
            continue
        for pattern in detector.denylist:
            in_group = detector.__name__ in context_detectors and pattern.groups > 0
            if pattern.pattern.startswith(_ASSIGNMENT_PREFIXES):
                assignments.append((pattern, in_group))
            else:
                hints = frozenset(_DETECTOR_HINTS.get(detector.__name__, ()))
                lower_hints = frozenset(hint.lower() for hint in hints) if pattern.flags & re.I else frozenset()
                whole.append((pattern, in_group, hints, lower_hints))
    return whole, assignments


_LIBRARY_PATTERNS, _LIBRARY_ASSIGNMENTS = _library_detectors()
_JWT = JwtTokenDetector()
_BASE64_ENTROPY = Base64HighEntropyString()
_HEX_ENTROPY = HexHighEntropyString()

# Formats detect-secrets 1.5 does not know (or knows only in an old shape), each matched whole, with a literal hint.
_EXTRA_FORMATS = tuple((re.compile(pattern), hint) for pattern, hint in (
    (r"\bsk-(?:proj-|svcacct-|admin-|ant-(?:api\d\d-)?)?[A-Za-z0-9_\-]{16,}", ("sk-",)),  # OpenAI, Anthropic, DeepSeek
    (r"\bAIza[0-9A-Za-z_\-]{30,}", ("AIza",)),                                        # Google API keys
    (r"\bhf_[A-Za-z0-9]{30,}", ("hf_",)),                                              # Hugging Face
    (r"\bgithub_pat_[A-Za-z0-9_]{22,}", ("github_pat_",)),                             # GitHub fine-grained tokens
    (r"\bgh[pousr]_[A-Za-z0-9]{20,}", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),     # GitHub tokens, any length
    (r"\b(?:sk|rk)_(?:test|live)_[0-9A-Za-z]{16,}", ("k_",)),                          # Stripe secret/restricted keys
    (r"\bxapp-[0-9]-[A-Za-z0-9\-]{10,}", ("xapp-",)),                                  # Slack app-level tokens
    (r"\bxox[abposr]-[A-Za-z0-9\-]{10,}", ("xox",)),                                   # Slack tokens, any shape
    (r"\bSharedAccessSignature\s+sr=[^\s\"'`]+", ("SharedAccessSignature",)),          # Azure SAS tokens
    (r"(?<=SharedAccessKey=)[A-Za-z0-9+/=]{20,}", ("SharedAccessKey=",)),              # Azure connection strings
    (r"(?<=AccountKey=)[A-Za-z0-9+/=]{20,}", ("AccountKey=",)),
))


# Every literal hint, checked once per text: a pattern runs only when one of its hints is in the text.
_CASED_HINTS = tuple(sorted({hint for _, _, hints, _ in _LIBRARY_PATTERNS for hint in hints} |
                            {hint for _, hints in _EXTRA_FORMATS for hint in hints}))
_LOWER_HINTS = tuple(sorted({hint for _, _, _, hints in _LIBRARY_PATTERNS for hint in hints}))
_PEM_PRIVATE_KEY = re.compile(r"-----BEGIN ([A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?)-----.*?(?:-----END \1-----|\Z)", re.S)
# ``Authorization: Basic <base64 of user:password>`` and ``Bearer <token>`` wherever they are written.
_BASIC = re.compile(r"\bBasic\s+([A-Za-z0-9+/]{6,}={0,2})", re.I)
_BEARER = re.compile(r"\bBearer\s+([A-Za-z0-9._~+/\-]{12,}=*)", re.I)
# Basic credentials built in code: btoa("user:password"), Buffer.from("user:password").
_BUILT_BASIC = re.compile(r"(?:\bbtoa|\bBuffer\.from)\(\s*([\"'`])[^\"'`:\s]*:([^\"'`\s]+)\1")
# Query string and form parameters: ?api_key=..., &token=..., ;password=..., #access_token=...
_PARAMETER = re.compile(r"(?<=[?&;#])([A-Za-z_][\w.\-]*)=([^&#\s\"'`<>;]+)")
# Parameter values shaped like keys whatever the parameter's name (OpenWeatherMap's ``appid=<32 hex>``): 32 or
# more hex digits, or 32 or more base64/base64url characters (percent-encoded or not).
_HEX_KEY = re.compile(r"[0-9a-fA-F]{32,}")
_BASE64_KEY = re.compile(r"[A-Za-z0-9+/_\-]{32,}={0,2}")
_SLUG_PARTS = re.compile(r"[-_]+")  # words and numbers joined by dashes or underscores: a slug, not a key
_HEX_SEQUENCE = "0123456789abcdef" * 8
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)
# A name followed by an assignment or comparison and a quoted value: pw = "x", "X-API-Key": "x", 'pwd' => 'x'.
_QUOTED_ASSIGNMENT = re.compile(
    r"(?P<name>[\"'`]?[A-Za-z_$][\w$.\-]{0,80}[\"'`]?)\]?\s*(?:===?|!==?|=>|:=|[:=])\s*"
    r"(?P<quote>[\"'`])(?P<value>[^\"'`\n]+)(?P=quote)")
# A quoted name and a quoted value as two call arguments: setHeader("X-API-Key", "x"), flow.set("pw", "x").
_QUOTED_PAIR = re.compile(
    r"\(\s*(?P<q1>[\"'`])(?P<name>[^\"'`\n]{1,80})(?P=q1)\s*,\s*(?P<quote>[\"'`])(?P<value>[^\"'`\n]+)(?P=quote)")
# Outside code: ``password: hunter2`` (header and YAML style, to the end of the line), ``password=hunter2``
# (INI and connection-string style), ``--password hunter2`` (command lines).
_UNQUOTED_COLON = re.compile(r"(?m)(?P<name>(?<![\w.\-])[A-Za-z_][\w.\-]{0,80}):[ \t]*(?P<value>[^\s\"'`{\[(][^\n]*)")
_UNQUOTED_EQUALS = re.compile(r"(?P<name>(?<![\w.\-])[A-Za-z_][\w.\-]{0,80})=(?P<value>[^\s\"'`&;,]+)")
_COMMAND_OPTION = re.compile(r"(?<!\S)--?(?P<name>[A-Za-z][\w\-]*)[ =](?P<value>[^\s\"'`-][^\s\"'`]*)")
_CURL_USER = re.compile(r"(?<!\S)(?:-u|--user)\s+[\"']?[^\s:\"']+:([^\s\"']+)")
# Node-RED node ids (``RED.nodes.id()``: 16 hex digits; before 3.x ``8hex.6hex``) are never secrets.
_NODE_ID = re.compile(r"[0-9a-f]{16}|[0-9a-f]{8}\.[0-9a-f]{4,6}")
# A cheap pre-check before the per-line keyword patterns: a line without any of these has no secret name.
# Searched in the lower-cased text (an ignore-case search is ten times slower).
_KEYWORD_HINT = re.compile(r"pass|pw|secret|token|key|auth|cred|sig|cookie|jwt")


def redact_text(text: str, *, code: bool = False) -> str:
    """``text`` with every secret found in it replaced by ``[redacted]``; the rest of the text is kept.

    Found: provider keys and tokens (detect-secrets' detectors plus current OpenAI/Google/Hugging Face/Stripe
    formats), JWTs, ``user:password@`` in URLs, ``Basic``/``Bearer`` credentials, ``btoa("user:pw")``, PEM private
    keys, secret-named query parameters, secret-named assignments (``pw = "..."``, ``"X-API-Key": "..."``,
    ``setHeader("Authorization", "...")``) and random-looking quoted strings (detect-secrets' entropy limits).

    Args:
        text: any text: function code, a URL, a template body, a JSON payload, a provider's error message.
        code: ``True`` for JavaScript (function node code): only quoted values count as literals, since an
            unquoted right-hand side (``pw = msg.payload``) is an expression. ``False`` (default) also redacts
            ``password: hunter2``, ``password=hunter2;`` and ``--password hunter2``.

    Returns:
        The redacted text (equal to ``text`` when nothing was found). Runs in linear time: about 25 ms for
        100 KB of function code on one core, about 20 µs for a short value.
    """
    if not text or not isinstance(text, str):
        return text
    # Flows repeat short values (types, topics, paths) and every node is formatted twice (data and text).
    return _redact_short(text, code) if len(text) <= 1024 else _redact(text, code)


@functools.lru_cache(maxsize=16384)
def _redact_short(text: str, code: bool) -> str:
    return _redact(text, code)


def _redact(text: str, code: bool) -> str:
    spans = list(_spans(text, code))
    if not spans:
        return text
    spans.sort()
    merged: list[list[int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    parts, last = [], 0
    for start, end in merged:
        parts.append(text[last:start])
        parts.append(REDACTED)
        last = end
    parts.append(text[last:])
    return "".join(parts)


def _spans(text: str, code: bool) -> Iterator[tuple[int, int]]:
    """(start, end) of every secret in ``text``; they may overlap."""
    lowered = text.lower()
    yield from _format_spans(text, lowered)
    if "eyj" in lowered:
        for match in _JWT.denylist[0].finditer(text):
            end = match.end()
            # The library's pattern stops before the signature (a lazy ending); the whole token is the secret.
            while end < len(text) and (text[end].isalnum() or text[end] in "-_.+/="):
                end += 1
            if _JWT.is_formally_valid(text[match.start():end].rstrip(".")):
                yield match.start(), end
    if "private key" in lowered:
        yield from (match.span() for match in _PEM_PRIVATE_KEY.finditer(text))
    if "basic" in lowered:
        yield from (match.span(1) for match in _BASIC.finditer(text) if _is_basic_credential(match.group(1)))
    if "bearer" in lowered:
        for match in _BEARER.finditer(text):
            token = match.group(1)
            if not _is_placeholder(token) and (any(c.isdigit() or c in "._-+/" for c in token) or len(token) >= 20):
                yield match.span(1)
    if "btoa" in text or "Buffer.from" in text:
        yield from (match.span(2) for match in _BUILT_BASIC.finditer(text) if not _is_placeholder(match.group(2)))
    if "=" in text and ("?" in text or "&" in text or "#" in text):
        yield from (match.span(2) for match in _PARAMETER.finditer(text) if is_key_shaped(match.group(2)))
    if "://" in text and "@" in text:
        yield from _userinfo_spans(text)
    for offset, line in _secret_naming_lines(text, lowered):
        for start, end in _line_spans(line, code):
            yield offset + start, offset + end
    if "'" in text or '"' in text:
        yield from _entropy_spans(text)


# A URL's userinfo (RFC 3986 section 3.2.1: ``scheme://user:password@host``): the password is any run of characters
# up to the ``@`` (sub-delimiters ``!$&'()*+,;=`` included, which detect-secrets' BasicAuthDetector leaves out), the
# user name may be empty; a user name alone (``https://<token>@host``, as GitHub's and some brokers' URLs carry a
# token) counts when it is shaped like a key.
_USERINFO = re.compile(r"://([^/\s:@?#]*):([^/\s@?#]+)@")
_USER_ONLY = re.compile(r"://([^/\s:@?#]{20,})@")


def _userinfo_spans(text: str) -> Iterator[tuple[int, int]]:
    for match in _USERINFO.finditer(text):
        if not _is_placeholder(match.group(2)):
            yield match.span(2)
    yield from (match.span(1) for match in _USER_ONLY.finditer(text) if is_key_shaped(match.group(1)))


def _format_spans(text: str, lowered: str) -> Iterator[tuple[int, int]]:
    """Self-identifying formats (provider keys, Basic-auth URLs, ...) by the library's and our extra patterns."""
    padded = "\n" + text  # a hint written as "<separator><prefix>" also finds the prefix at the start
    present = {hint for hint in _CASED_HINTS if hint in padded}
    present.update(hint for hint in _LOWER_HINTS if hint in lowered)
    for pattern, in_group, hints, lower_hints in _LIBRARY_PATTERNS:
        if not hints or not present.isdisjoint(hints) or not present.isdisjoint(lower_hints):
            yield from _pattern_spans(pattern, in_group, text)
    for pattern, format_hints in _EXTRA_FORMATS:
        if not present.isdisjoint(format_hints):
            yield from (match.span() for match in pattern.finditer(text))


def _pattern_spans(pattern: re.Pattern, in_group: bool, text: str) -> Iterator[tuple[int, int]]:
    for match in pattern.finditer(text):
        group = next((g for g in range(1, pattern.groups + 1) if match.group(g)), 0) if in_group else 0
        if match.end(group) > match.start(group):
            yield match.span(group)


def _secret_naming_lines(text: str, lowered: str) -> Iterator[tuple[int, str]]:
    """(offset, line) of the lines that may name a secret (a keyword hint in them), each once."""
    end = -1
    for match in _KEYWORD_HINT.finditer(lowered):
        if match.start() < end:
            continue
        start = text.rfind("\n", 0, match.start()) + 1
        end = text.find("\n", match.end())
        end = len(text) if end < 0 else end
        yield start, text[start:end]


def _line_spans(line: str, code: bool) -> Iterator[tuple[int, int]]:
    """Secrets named in one line: library assignment patterns, detect-secrets' keyword patterns, secret-named
    assignments, call arguments and query parameters; outside code also unquoted values and command options."""
    for pattern, in_group in _LIBRARY_ASSIGNMENTS:
        yield from _pattern_spans(pattern, in_group, line)
    # detect-secrets' keyword detector (quotes required, as for JavaScript), applied per line as the library does;
    # it adds reversed comparisons ("x" == password) and ``secret "x";`` forms.
    for pattern, group in QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP.items():
        match = pattern.search(line)
        if match and match.group(group) and not _is_placeholder(match.group(group)):
            yield match.span(group)
    for pattern in (_QUOTED_ASSIGNMENT, _QUOTED_PAIR):
        for match in pattern.finditer(line):
            if is_secret_name(match.group("name").strip("\"'`")) and not _is_placeholder(match.group("value")):
                yield match.span("value")
    for match in _PARAMETER.finditer(line):
        if (is_secret_name(match.group(1)) or match.group(1).lower() in ("key", "access_key")) \
                and not _is_placeholder(match.group(2)):
            yield match.span(2)
    if code:
        return
    for pattern in (_UNQUOTED_COLON, _UNQUOTED_EQUALS, _COMMAND_OPTION):
        for match in pattern.finditer(line):
            value = match.group("value").rstrip()
            if is_secret_name(match.group("name")) and not _is_placeholder(value):
                yield match.start("value"), match.start("value") + len(value)
    yield from (match.span(1) for match in _CURL_USER.finditer(line))


def _entropy_spans(text: str) -> Iterator[tuple[int, int]]:
    """Quoted strings random enough to be keys, by detect-secrets' entropy limits and heuristics."""
    for plugin in (_BASE64_ENTROPY, _HEX_ENTROPY):
        for match in plugin.regex.finditer(text):
            if looks_random(match.group(2), plugin):
                yield match.span(2)


def looks_random(value: str, plugin: Any = None) -> bool:
    """Whether ``value`` (one token, no quotes) is a random-looking base64 or hex string: longer than 15
    characters, above detect-secrets' entropy limit (base64 4.5, hex 3.0 bits per character), and not a UUID, a
    Node-RED node id, a sequential string or a word-like identifier."""
    # Entropy is at most log2(distinct characters): 4.5 bits needs 23 of them, 3.0 bits needs 9.
    distinct = len(set(value))
    if len(value) < 16 or distinct < 9 or _NODE_ID.fullmatch(value) or is_potential_uuid(value) \
            or is_sequential_string(value):
        return False
    plugins = (plugin,) if plugin is not None else (_BASE64_ENTROPY, _HEX_ENTROPY)
    for candidate in plugins:
        if candidate is _BASE64_ENTROPY and distinct < 23 or not all(c in candidate.charset for c in value):
            continue
        if candidate is _BASE64_ENTROPY and (value.isalpha() or "/" in value.strip("/") and _is_path(value)):
            continue
        if candidate.calculate_shannon_entropy(value) > candidate.entropy_limit:
            return True
    return False


def is_key_shaped(value: str) -> bool:
    """Whether a query or form parameter's value (``value``, percent-encoded or not) is shaped like an API key,
    whatever the parameter is called: at least 32 hex digits (OpenWeatherMap's ``appid``, many weather and maps
    APIs), or at least 32 base64/base64url characters mixing at least two of upper case, lower case and digits at
    a Shannon entropy above 4 bits per character, and not a slug of words and numbers
    (``my-long-descriptive-page-name-2024``). Node-RED node ids (16 hex digits) are too short; UUIDs with their
    dashes are identifiers and kept; sequential strings (``0123456789abcdef...``) are not keys.
    """
    if "%" in value:
        value = urllib.parse.unquote(value)
    if len(value) < 32 or is_sequential_string(value) or _UUID.fullmatch(value):
        return False
    if _HEX_KEY.fullmatch(value):
        return len(set(value.lower())) >= 8 and value.lower() not in _HEX_SEQUENCE
    if not _BASE64_KEY.fullmatch(value) or all(part.isalpha() or part.isdigit() for part in _SLUG_PARTS.split(value)):
        return False
    classes = sum((any(c.isupper() for c in value), any(c.islower() for c in value), any(c.isdigit() for c in value)))
    return classes >= 2 and _BASE64_ENTROPY.calculate_shannon_entropy(value) > 4.0


def _is_path(value: str) -> bool:
    """``home/living-room/temperature``: slash-separated words, a topic or a path rather than base64."""
    return all(part.isalpha() or part.replace("-", "").replace("_", "").isalpha() for part in value.split("/") if part)


def _is_basic_credential(encoded: str) -> bool:
    try:
        decoded = base64.b64decode(encoded + "=" * (-len(encoded) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    return b":" in decoded


def _is_placeholder(value: str) -> bool:
    """A template, reference or keyword rather than a literal secret: ``{{token}}``, ``${TOKEN}``, ``<your key>``,
    ``[redacted]``, ``$(env)``, an authorization scheme alone (``"Basic "``), a JavaScript ``typeof`` name
    (``typeof pw !== "string"``), or an empty or masked value (``****``)."""
    value = value.strip()
    return (not value or value == REDACTED or "{{" in value or "${" in value or value.startswith("$(")
            or value.lower() in _NOT_SECRET_VALUES or is_templated_secret(value) or set(value) <= set("*x.•-_ "))


_NOT_SECRET_VALUES = frozenset({
    "basic", "bearer", "digest", "token", "apikey", "oauth", "hmac",
    "string", "number", "boolean", "object", "undefined", "function", "symbol", "bigint", "null", "true", "false",
})


# ---------------------------------------------------------------------------------------------------------------
# Nodes


