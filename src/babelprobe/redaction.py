"""Credentials in URLs never leave the process: one redaction for everything babelprobe stores or
prints (manifest config and command line, fingerprints and specs, error texts, log records,
suite files).

A base URL may carry a secret in its user-info (``http://user:KEY@host/v1``, or the key as the user
name) or in its query (``?api_key=KEY``, ``key=``, ``token=`` ...: ``SECRET_PARAMS``). ``redact_url``
replaces the whole user-info with ``***`` and the value of every secret parameter with ``***``;
the scheme, host, port, path and other parameters stay readable, so a manifest still says which
server answered. ``redact_text`` does that to every URL inside a text, and also replaces every
secret registered with ``register_url`` (the backend registers its base URL at load), wherever it
appears: in an error body that echoes it, percent-decoded, or outside any URL.

Once a secret is registered, every log record is redacted too (``logging`` record factory), so
``httpx``'s request log lines ("HTTP Request: POST http://user:KEY@...") and any library's
messages are covered without knowing the logger names.
"""

from __future__ import annotations

import base64
import logging
import re
import threading
from typing import Any, Iterable
from urllib.parse import unquote, urlsplit, urlunsplit

MASK = "***"
# Query parameters that carry credentials in the APIs and gateways users point babelprobe at
# (lower-case, '-' and '_' compared alike).
SECRET_PARAMS = frozenset({
    "key", "apikey", "api_key", "token", "access_token", "auth", "auth_token", "authorization", "password",
    "passwd", "pwd", "secret", "client_secret", "sig", "signature", "subscription_key", "x_api_key",
    "refresh_token", "id_token", "session_token", "code",
})
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>`]+")
_secrets: set[str] = set()
_lock = threading.Lock()
_factory_installed = False


def _is_secret_param(name: str) -> bool:
    return unquote(name).strip().lower().replace("-", "_") in SECRET_PARAMS


def url_secrets(url: str) -> list[str]:
    """The credentials a URL carries: its user-info parts and its secret parameters' values, each
    as written and percent-decoded."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    found = []
    if "@" in parts.netloc:
        # 'user:KEY' -> KEY; 'KEY' alone (a key given as the user name) -> KEY. A user name next to
        # a password is masked in URLs but not hunted in other texts (it is often a plain word).
        userinfo = parts.netloc.rpartition("@")[0]
        user, colon, password = userinfo.partition(":")
        found.append(password if colon else user)
        # HTTP clients send user-info as Basic auth: its base64 form is echoed by some servers' errors
        found.append(base64.b64encode(unquote(userinfo).encode()).decode())
    for piece in parts.query.split("&"):
        name, eq, value = piece.partition("=")
        if eq and value and _is_secret_param(name):
            found.append(value)
    return sorted({v for s in found for v in (s, unquote(s)) if len(v) >= 3}, key=len, reverse=True)


def redact_url(url: str) -> str:
    """``url`` with its user-info and secret query values replaced by ``***`` (else unchanged)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{MASK}@{netloc.rpartition('@')[2]}"
    query = "&".join(
        f"{name}={MASK}" if eq and value and _is_secret_param(name) else f"{name}{eq}{value}"
        for piece in parts.query.split("&") if piece
        for name, eq, value in [piece.partition("=")]
    ) if parts.query else ""
    if netloc == parts.netloc and query == parts.query:
        return url
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def register_url(url: str | None) -> None:
    """Remember ``url``'s secrets so that ``redact_text`` removes them from any text, and redact
    every log record from now on."""
    if not url:
        return
    found = url_secrets(url)
    if not found:
        return
    with _lock:
        _secrets.update(found)
    _install_log_redaction()


def register_secret(value: str | None) -> None:
    """A secret that is not part of a URL (an API key read from the environment)."""
    if value and len(value) >= 3:
        with _lock:
            _secrets.add(value)
        _install_log_redaction()


def redact_urls(text: str) -> str:
    """Every URL in ``text`` redacted (``redact_url``); nothing else changed. For values that must
    come out the same in every process (fingerprints), whatever secrets that process has seen."""
    return _URL.sub(lambda m: redact_url(m.group(0)), text) if text else text


def redact_text(text: str, extra: Iterable[str] = ()) -> str:
    """Every URL in ``text`` redacted, then every registered secret (and ``extra``) replaced."""
    if not text:
        return text
    text = redact_urls(text)
    with _lock:
        secrets = sorted(_secrets.union(s for s in extra if s), key=len, reverse=True)
    for secret in secrets:
        text = text.replace(secret, MASK)
    return text


def redact_value(value: Any) -> Any:
    """``redact_text`` on every string in a JSON-like value (dicts, lists, tuples)."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {k: redact_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(redact_value(v) for v in value)
    return value


def _install_log_redaction() -> None:
    """Wrap the log record factory once: each record's message is rendered and redacted."""
    global _factory_installed
    with _lock:
        if _factory_installed:
            return
        _factory_installed = True
    previous = logging.getLogRecordFactory()

    def factory(*args, **kwargs) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        try:
            message = record.getMessage()
        except Exception:  # a malformed record is left to logging's own error handling
            return record
        redacted = redact_text(message)
        if redacted != message:
            record.msg, record.args = redacted, None
        return record

    logging.setLogRecordFactory(factory)
