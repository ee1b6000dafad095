"""Structured JSON logs: one object per line, one line per delivery outcome.

Secrets never reach the output: fields whose names look secret are replaced, and every value
registered with `register_secret` (webhook secret, tokens, private key) is scrubbed from
messages and field values before the line is written.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

from analyzers.text import DIRECTION_CONTROLS

DELIVERY_LOGGER = "rltracker.delivery"

# Attributes every LogRecord has; anything else on a record came from `extra=`.
_STANDARD = set(vars(logging.LogRecord("x", 0, "x", 0, "x", None, None))) | {
    "message",
    "asctime",
    "taskName",
}
_SECRET_NAMES = ("secret", "token", "password", "authorization", "private_key", "signature", "jwt")
_REDACTED = "[redacted]"
_secrets: set[str] = set()
# Secrets that expire (installation tokens, app JWTs): value -> monotonic time after which it
# is dropped (its expiry plus EXPIRED_GRACE). Bounded: expired ones leave at each registration,
# and past MAX_EXPIRING the soonest to expire go first.
_expiring: dict[str, float] = {}
_expiring_lock = threading.Lock()
EXPIRED_GRACE = 300.0  # seconds an expired token is still scrubbed (a late line about it)
MAX_EXPIRING = 10_000
# asyncpg: "invalid input for query argument $3: 'the value…' (why)": the value is dropped
_ARGUMENT_VALUE = re.compile(r"(query argument \$\d+(?: in element #\d+ of executemany\(\) sequence)?): .*")
# JSON escapes U+0000-U+001F; with ensure_ascii=False the rest is written as it came. These
# also end a line (U+0085, U+2028, U+2029 for splitlines and many viewers) or drive a terminal
# (DEL, the C1 controls: U+009B is CSI), so they are written as backslash-u escapes too; and
# so are the direction embeddings, overrides and isolates (security79: a title's RLO turned
# the rest of its line around in a viewer that lays out bidirectional text, the fields after
# it read backwards: "status": "failed" as "deliaf" ...).
_UNSAFE = {c: f"\\u{c:04x}" for c in [*range(0x7F, 0xA0), 0x2028, 0x2029,
                                       *map(ord, DIRECTION_CONTROLS)]}


def register_secret(value: str | None, *, expires_in: float | None = None) -> None:
    """Remember a secret so it is scrubbed from every later log line (short values are ignored:
    they would scrub ordinary words). `expires_in`: seconds the secret is good for (an
    installation token, an app JWT); it is forgotten EXPIRED_GRACE after that."""
    if not value or len(value) < 8:
        return
    if expires_in is None:
        _secrets.add(value)
        return
    now = time.monotonic()
    with _expiring_lock:
        for old in [v for v, until in _expiring.items() if until <= now]:
            del _expiring[old]
        until = now + expires_in + EXPIRED_GRACE
        if until <= now:
            return  # expired already: nothing to protect
        _expiring[value] = max(until, _expiring.get(value, until))
        if len(_expiring) > MAX_EXPIRING:
            for old in sorted(_expiring, key=_expiring.__getitem__)[: len(_expiring) - MAX_EXPIRING]:
                del _expiring[old]


def registered_secret_count() -> int:
    """How many secrets the scrubber holds (the settings' and the live tokens)."""
    return len(_secrets) + len(_expiring)


def register_settings_secrets(settings: Any) -> None:
    """The secrets of `Settings` (webhook secret, token, private key), in every process that
    logs: a spawned worker process starts with none registered."""
    from bot.config import webhook_secrets  # (each as it is and without blanks around it)

    for value in (*webhook_secrets(settings.webhook_secret,
                                   getattr(settings, "webhook_secret_previous", None)),
                  settings.token, settings.private_key):
        register_secret(value)
    if settings.private_key and "\\n" in settings.private_key:  # pasted on one line
        register_secret(settings.private_key.replace("\\n", "\n"))


def _scrub(value: Any) -> Any:
    if isinstance(value, str):
        for secret in (*_secrets, *_expiring):
            if secret in value:
                value = value.replace(secret, _REDACTED)
        return value
    if isinstance(value, dict):
        return {k: _field(k, v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_scrub(v) for v in value]
    return value


def _field(name: str, value: Any) -> Any:
    lowered = str(name).lower()
    if any(part in lowered for part in _SECRET_NAMES):
        return _REDACTED
    return _scrub(value)


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": _scrub(record.getMessage()),
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_"):
                out[key] = _field(key, value)
        if record.exc_info:
            out["exc"] = _scrub(self.formatException(record.exc_info))
        return json.dumps(out, ensure_ascii=False, default=str).translate(_UNSAFE)


# A plain line's message (`PlainFormatter`): every control character (C0 with tab, line feed
# and carriage return, DEL, C1) and U+2028/9 as a backslash-u escape, as in a JSON line.
_PLAIN_UNSAFE = {**{c: f"\\u{c:04x}" for c in range(0x20)}, **_UNSAFE}


class PlainFormatter(logging.Formatter):
    """A command's log as plain lines (`rltracker sync`): each record's message on one line
    (a GraphQL error's message from GitHub, a skip reason quoting a repository's labels could
    start a line reading as the command's own, or drive the terminal; security71), secrets
    scrubbed as in a JSON line. A traceback keeps its own lines."""

    def format(self, record: logging.LogRecord) -> str:
        line = str(_scrub(record.getMessage())).translate(_PLAIN_UNSAFE)
        if record.exc_info:
            line += "\n" + str(_scrub(self.formatException(record.exc_info)))
        return line


class _MalformedRequests(logging.Filter):
    """aiohttp's line for a request its HTTP parser refused (a header line without a colon, a
    control character in the path, a header over 8 KiB, a bad chunk size: what scanners and
    broken clients send) was an ERROR with the parser's traceback: the client's fault, nothing
    for an operator to do. It becomes one WARNING line naming the client and what was wrong.
    Only the parser's errors (aiohttp's HttpProcessingError, answered 4xx): an exception of a
    request handler (answered 500, a bug) keeps its level and traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if exc is None or record.levelno < logging.ERROR:
            return True
        from aiohttp.http_exceptions import HttpProcessingError

        code = getattr(exc, "code", 0)
        if not isinstance(exc, HttpProcessingError) or not 400 <= int(code or 0) < 500:
            return True
        remote = record.args[0] if isinstance(record.args, tuple) and record.args else "?"
        what = (str(getattr(exc, "message", "") or "").strip().splitlines() or [""])[0]
        # (without the client's bytes some messages quote: `...reading: b'aaaa...`)
        what = re.split(r": b['\"]", what)[0].rstrip(":")[:120] or type(exc).__name__
        record.msg = "malformed HTTP request from %s refused (%s %s: %s)"
        record.args = (str(remote)[:100], code, type(exc).__name__, what)
        record.levelno, record.levelname = logging.WARNING, "WARNING"
        record.exc_info, record.exc_text = None, None
        return True


_MALFORMED = _MalformedRequests()


def configure_logging(level: str | int = "INFO", stream: Any = None, plain: bool = False) -> None:
    """Route every logger through one JSON handler on stderr (idempotent); `plain`: one
    `PlainFormatter` line per record instead (a command a person reads)."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, "_rltracker", False):
            root.removeHandler(handler)
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(PlainFormatter() if plain else JsonFormatter())
    handler._rltracker = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(level)
    # aiohttp's access log is one more line per request; the delivery line says more.
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    server = logging.getLogger("aiohttp.server")  # a refused malformed request: one warning
    if _MALFORMED not in server.filters:
        server.addFilter(_MALFORMED)
    logging.getLogger("alembic").setLevel(logging.WARNING)  # revision checks at start-up


@contextlib.contextmanager
def command_logging() -> Iterator[None]:
    """A command's log (`bot.cli.main`): WARNING and above as plain lines on stderr for the
    command's run (a warning quoting GitHub's text went through Python's last-resort handler
    as written, a line of its own or a terminal control; left74), then the root logger's
    handlers and level as they were (an in-process run keeps no handler on a stream closed
    since). A command that sets its own log (`serve`, `sync`) replaces this one's handler."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    configure_logging(logging.WARNING, plain=True)
    try:
        yield
    finally:
        for handler in list(root.handlers):
            if handler not in handlers:
                root.removeHandler(handler)
        for handler in handlers:
            if handler not in root.handlers:
                root.addHandler(handler)
        root.setLevel(level)


def is_statement_error(exc: BaseException | None) -> bool:
    """A SQLAlchemy StatementError (DBAPIError and kin): its text holds the parameters."""
    return hasattr(exc, "orig") and hasattr(exc, "params")


def error_text(exc: BaseException) -> str:
    """An exception for a log line, without what a database error carries along: SQLAlchemy's
    text holds the statement and its parameters (delivery payloads, issue and comment
    bodies), asyncpg's quotes the start of a value it could not encode. A database error is
    told by its class, the first line of the driver's message without such a value, and its
    SQLSTATE; any other by its class and the first line of its text, shortened."""
    if is_statement_error(exc):
        orig = exc.orig  # type: ignore[attr-defined]
        if orig is None:
            return type(exc).__name__
        message = (str(orig).splitlines() or [""])[0]
        message = _ARGUMENT_VALUE.sub(r"\1", message)[:200]
        code = getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)
        return (f"{type(exc).__name__} ({type(orig).__name__}): {message}"
                + (f" [SQLSTATE {code}]" if code else ""))
    first = (str(exc).splitlines() or [""])[0][:200]
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def log_delivery(
    *,
    delivery_id: str,
    event: str,
    action: str | None,
    repo: str | None,
    outcome: str,
    level: int = logging.INFO,
    **fields: Any,
) -> None:
    """The one line per delivery: its id, event, action, repository and outcome."""
    logging.getLogger(DELIVERY_LOGGER).log(
        level,
        "delivery %s",
        outcome,
        extra={
            "delivery": delivery_id,
            "event": event,
            "action": action,
            "repo": repo,
            "outcome": outcome,
            **fields,
        },
    )
