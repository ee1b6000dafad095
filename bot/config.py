"""Settings read from the environment, once, into one immutable object, and checked there.

`Settings.from_env` checks every variable it reads (`check_env`) before anything else runs:
a value the program cannot use stops the command with a `SettingError`, which `rltracker`
prints as one line (the variable, its value unless it is a secret, what is expected) and
exit status 2. `UserError` is the wider family: failures the user can act on, printed as one
line instead of a traceback.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit

PROJECT_ROOT = Path(__file__).resolve().parent.parent
TEMPLATES_DIR = PROJECT_ROOT / "templates"
MIGRATIONS_DIR = PROJECT_ROOT / "migrations"
ALEMBIC_INI = PROJECT_ROOT / "alembic.ini"

DEFAULT_DATABASE_URL = "sqlite+aiosqlite:///rltracker.db"
DEFAULT_API_URL = "https://api.github.com"
DEFAULT_PORT = 8000
DEFAULT_WORKER_LEASE = 120.0
# Seconds a statement of a web request (page, API, the webhook's inbox write) may run on
# PostgreSQL before the server cuts it (RLTRACKER_STATEMENT_TIMEOUT)
DEFAULT_STATEMENT_TIMEOUT = 30.0
WEBHOOK_BODY_LIMIT = 25 * 1024 * 1024

SQLITE_PREFIX = "sqlite+aiosqlite://"
POSTGRES_PREFIX = "postgresql+asyncpg://"
SUPPORTED_DATABASES = (
    "expected sqlite+aiosqlite:///PATH or postgresql+asyncpg://USER:PASSWORD@HOST[:PORT]/NAME "
    "(sqlite:///, postgresql:// and postgres:// are read as these)"
)
# URL scheme as written -> the driver the app runs on (SQLAlchemy's plain names pick drivers
# that are not installed: pysqlite is sync, psycopg2 is absent).
_DATABASE_SCHEMES = {
    "sqlite": "sqlite+aiosqlite",
    "sqlite+aiosqlite": "sqlite+aiosqlite",
    "postgresql": "postgresql+asyncpg",
    "postgres": "postgresql+asyncpg",
    "postgresql+asyncpg": "postgresql+asyncpg",
}
# Query parameters of a PostgreSQL URL that reach asyncpg.connect as the strings they are.
_POSTGRES_QUERY = {"ssl", "passfile", "target_session_attrs", "prepared_statement_cache_size"}
_SSL_MODES = ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}
_LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
_REPORT_ISSUE = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+#[0-9]+")
_URL_PASSWORD = re.compile(r"(://[^/?#@:]*:)[^/?#@]*@")
_SHOWN_LENGTH = 80


class UserError(Exception):
    """A failure the user can act on: `rltracker` prints `rltracker COMMAND: <message>`, one
    line and no traceback (unless --debug), and exits with `exit_code`."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


class SettingError(UserError):
    """A setting or argument whose value cannot be used. Exit status 2, as for usage errors.
    `name` is the variable (DATABASE_URL) or flag (--port); a secret's value is never shown."""

    def __init__(self, name: str, value: str | None, expected: str, *, secret: bool = False) -> None:
        super().__init__(f"{describe_value(name, value, secret=secret)}: {expected}", exit_code=2)
        self.name = name


def describe_value(name: str, value: str | None, *, secret: bool = False) -> str:
    """`NAME='value'` (or `--flag 'value'`), on one line, shortened; secrets only by name."""
    if secret:
        return f"{name} (value not shown)"
    if value is None or value == "":
        return f"{name} is not set"
    text = value if value.isprintable() else value.encode("unicode_escape").decode("ascii")
    if len(text) > _SHOWN_LENGTH:
        text = text[: _SHOWN_LENGTH - 1] + "…"
    return f"{name} {shlex.quote(text)}" if name.startswith("-") else f"{name}={shlex.quote(text)}"


def redact_url(url: str) -> str:
    """The URL with its password replaced by ***: database URLs are shown in messages."""
    return _URL_PASSWORD.sub(r"\1***@", url)


def normalise_database_url(url: str) -> str:
    """`sqlite:///x` and `postgresql://`/`postgres://` with the drivers the app runs on, and
    libpq's `sslmode` query parameter (in the URLs hosting platforms give) as asyncpg's `ssl`;
    anything else unchanged (check_database_url says what is wrong with it)."""
    scheme, sep, rest = url.partition("://")
    driver = _DATABASE_SCHEMES.get(scheme.lower()) if sep else None
    if not driver:
        return url
    head, question, query = rest.partition("?")
    if driver == "postgresql+asyncpg" and question and query:
        pairs = [("ssl" if k == "sslmode" else k, v) for k, v in parse_qsl(query, keep_blank_values=True)]
        rest = f"{head}?{urlencode(pairs)}"
    return f"{driver}://{rest}"


def sqlite_path(url: str) -> Path | None:
    """The file of a SQLite URL, or None (in-memory, or not SQLite)."""
    url = normalise_database_url(url)
    if not url.startswith(SQLITE_PREFIX):
        return None
    path = url[len(SQLITE_PREFIX):].partition("?")[0]
    if not path.startswith("/") or path in ("/", "/:memory:"):
        return None  # sqlite+aiosqlite:// or :memory:
    return Path(path[1:])


def unescape_pem(key: str) -> str:
    """Keys pasted into one-line environment variables arrive with literal "\\n"."""
    if "\\n" in key and "\n" not in key.strip():
        return key.replace("\\n", "\n")
    return key


def webhook_secret(value: str | None) -> str | None:
    """GITHUB_WEBHOOK_SECRET(_PREVIOUS) as deliveries are signed with it, None when unset.
    GitHub's secret field is one line: a newline at the end came from the file the variable
    was filled from (`echo secret > file`) and would refuse every delivery. `serve` verifies
    and `rltracker replay` signs with the same value. A value of blanks only is no secret
    (None: `serve` says it is not set): a line `GITHUB_WEBHOOK_SECRET= ` in an env file set
    one that anyone could sign with. Spaces around a secret are kept (GitHub's field may hold
    them); `webhook_secrets` verifies with the value without them too."""
    secret = (value or "").rstrip("\r\n")
    return secret if secret.strip() else None


def webhook_secrets(*values: str | None) -> tuple[str, ...]:
    """The secrets a delivery's signature is checked against: each of `values` (the current
    secret, the previous one during a rotation) as it is and, when blanks stand around it
    (pasted with it, or written so in an env file), without them too: which of the two
    GitHub's field holds cannot be told from here, and both are the operator's."""
    out: list[str] = []
    for value in values:
        for secret in (value, (value or "").strip()):
            if secret and secret not in out:
                out.append(secret)
    return tuple(out)


def parse_port(text: str | int) -> int:
    """A TCP port number; ValueError saying what is expected otherwise."""
    try:
        port = int(str(text).strip())
    except ValueError:
        port = 0
    if not 1 <= port <= 65535:
        raise ValueError("expected a port number from 1 to 65535")
    return port


def _truthy(value: str | None) -> bool:
    """A yes/no setting's value, read one way for every such variable (the check accepts
    _TRUE and _FALSE, spaces and case aside): RLTRACKER_FETCH_PAPERS=" 1" passed the check
    and then read as off where it was compared with "1"."""
    return (value or "").strip().lower() in _TRUE


# ---------------------------------------------------------------------------- checks
def check_database_url(url: str, *, may_be_absent: bool = False) -> None:
    """DATABASE_URL names a supported database and a SQLite file can be opened. With
    `may_be_absent` (`migrate` creates the database, `rules` skips a missing one) a missing
    folder is accepted when it can be created."""
    shown = redact_url(url)
    normal = normalise_database_url(url)
    if normal.startswith(POSTGRES_PREFIX):
        try:
            urlsplit(normal)
        except ValueError as exc:  # an unclosed IPv6 bracket
            raise SettingError("DATABASE_URL", shown, f"not a URL ({exc}); "
                               + SUPPORTED_DATABASES) from None
        try:
            urlsplit(normal).port  # noqa: B018 - parsing it raises on a bad port
        except ValueError:
            raise SettingError("DATABASE_URL", shown,
                               "the port is not a number; " + SUPPORTED_DATABASES) from None
        for key, value in parse_qsl(urlsplit(normal).query, keep_blank_values=True):
            if key not in _POSTGRES_QUERY:  # asyncpg.connect would refuse it (a TypeError)
                raise SettingError("DATABASE_URL", shown, f"the query parameter {key} is not one the "
                                   "PostgreSQL driver (asyncpg) reads; it reads "
                                   + ", ".join(sorted(_POSTGRES_QUERY)) + " (sslmode is read as ssl)")
            if key == "ssl" and value not in _SSL_MODES:
                raise SettingError("DATABASE_URL", shown, "sslmode (or ssl) must be one of "
                                   + ", ".join(_SSL_MODES))
            if key == "prepared_statement_cache_size":  # the driver takes int(value)
                try:
                    int(value)
                except ValueError:
                    raise SettingError("DATABASE_URL", shown, "prepared_statement_cache_size "
                                       "must be a whole number (0 turns the cache off)") from None
        return
    if not normal.startswith(SQLITE_PREFIX):
        raise SettingError("DATABASE_URL", shown, SUPPORTED_DATABASES)
    rest = normal[len(SQLITE_PREFIX):].partition("?")[0]
    if rest and not rest.startswith("/"):  # SQLAlchemy reads it as a host, and refuses it
        raise SettingError("DATABASE_URL", shown, f"{rest} would be read as a host, not a file: a "
                           "SQLite URL has three slashes before a relative path "
                           "(sqlite+aiosqlite:///rltracker.db), four before an absolute one")
    path = sqlite_path(normal)
    if path is None:
        # in memory: each command (and each connection) had a new, empty database; `migrate`
        # said it migrated one that was gone at exit, and `serve` sent the operator back to it
        raise SettingError("DATABASE_URL", shown, "names no file (an unset shell variable? "
                           "`:memory:` is gone when the command ends); expected a SQLite file, "
                           "e.g. sqlite+aiosqlite:///rltracker.db")
    where = os.path.abspath(path)
    if path.is_dir():
        raise SettingError("DATABASE_URL", shown, f"{where} is a folder; expected a SQLite file path")
    if path.exists():
        if not os.access(path, os.R_OK | os.W_OK):
            raise SettingError("DATABASE_URL", shown, f"{where} cannot be read and written by this user")
        return
    folder = ancestor = path.parent
    if not may_be_absent and not folder.is_dir():
        raise SettingError("DATABASE_URL", shown, f"the folder {os.path.abspath(folder)} does not "
                           "exist; `rltracker migrate` creates it and the database")
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise SettingError("DATABASE_URL", shown, f"the folder {os.path.abspath(folder)} cannot be "
                           f"created: {os.path.abspath(ancestor)} is a file")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        missing = "" if ancestor == folder else f" does not exist and {os.path.abspath(ancestor)}"
        raise SettingError("DATABASE_URL", shown, f"the folder {os.path.abspath(folder)}{missing} "
                           "is not writable by this user (SQLite creates its file there)")


def require_database(env: Mapping[str, str]) -> None:
    """SettingError when DATABASE_URL names a SQLite file that does not exist (in a folder that
    does: a missing folder is check_database_url's), before anything opens it (SQLite would
    create it empty). For the commands that read the database; `migrate` creates it.
    A file of 0 bytes (`touch`, a copy cut short, a volume mounted empty) is said to be empty:
    it was called "at no revision", and opening it wrote SQLite's header and WAL files into it
    before the refusal (left80)."""
    raw = env.get("DATABASE_URL") or None
    path = sqlite_path(raw or DEFAULT_DATABASE_URL)
    if path is not None and path.is_file() and path.stat().st_size == 0:
        raise SettingError("DATABASE_URL", redact_url(raw) if raw else None,
                           f"{os.path.abspath(path)} is an empty file (0 bytes), not a tracker "
                           "database (nothing was written to it); `rltracker migrate` makes it "
                           "one, or set DATABASE_URL to the database")
    if path is None or path.exists() or not path.parent.is_dir():
        return
    raise SettingError("DATABASE_URL", redact_url(raw) if raw else None,
                       f"the SQLite database {os.path.abspath(path)} does not exist (nothing was "
                       "created); create it with `rltracker migrate` (`make run` migrates, then "
                       "serves), or set DATABASE_URL to the database")


def _check_pem(name: str, value: str | None, pem: str) -> None:
    """`value` is the path for GITHUB_PRIVATE_KEY_PATH, None for the key text (never shown)."""
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    expected = (("the file holds no" if value else "expected the") + " GitHub App's RSA private "
                "key in PEM form (-----BEGIN RSA PRIVATE KEY----- ...), unencrypted")
    secret = value is None
    try:
        key = load_pem_private_key(unescape_pem(pem).strip().encode("utf-8"), password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        path = pem.strip()
        if secret and "-----" not in path and "\n" not in path and _is_file(path):
            # the path where the key text goes: no secret, and it has a variable of its own
            raise SettingError(name, path, "a file's path, not the key; set "
                               "GITHUB_PRIVATE_KEY_PATH to the .pem file's path, or "
                               "GITHUB_PRIVATE_KEY to its text") from None
        raise SettingError(name, value, expected, secret=secret) from None
    if not isinstance(key, RSAPrivateKey):
        kind = type(key).__name__.removesuffix("PrivateKey").lstrip("_")
        raise SettingError(name, value, f"{expected}; this key is {kind}", secret=secret)


def _is_file(path: str) -> bool:
    try:
        return len(path) < 4096 and Path(path).is_file()
    except (OSError, ValueError):  # a name too long, a NUL
        return False


def read_private_key(env: Mapping[str, str]) -> str | None:
    """GITHUB_PRIVATE_KEY, else the file at GITHUB_PRIVATE_KEY_PATH (SettingError if unreadable)."""
    key = env.get("GITHUB_PRIVATE_KEY")
    key_path = env.get("GITHUB_PRIVATE_KEY_PATH")
    if key or not key_path:
        return key or None
    try:
        text = Path(key_path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or "not a text file"
        raise SettingError("GITHUB_PRIVATE_KEY_PATH", key_path,
                           f"cannot read it ({reason}); expected the path of the app's .pem file") from None
    if not text.strip():  # (a download cut short): not "no key", which means no app
        raise SettingError("GITHUB_PRIVATE_KEY_PATH", key_path, "the file is empty; expected the "
                           "app's .pem file (App settings, Private keys, Generate a private key)")
    return text


def _check_app_credentials(env: Mapping[str, str]) -> None:
    key = read_private_key(env)
    app_id = (env.get("GITHUB_APP_ID") or "").strip()
    if key:
        if env.get("GITHUB_PRIVATE_KEY"):
            _check_pem("GITHUB_PRIVATE_KEY", None, key)
        else:
            _check_pem("GITHUB_PRIVATE_KEY_PATH", env.get("GITHUB_PRIVATE_KEY_PATH"), key)
        if not app_id:
            raise SettingError("GITHUB_APP_ID", None, "the app's numeric id is needed with its "
                               "private key (GITHUB_PRIVATE_KEY or GITHUB_PRIVATE_KEY_PATH)")
    elif app_id:
        raise SettingError("GITHUB_PRIVATE_KEY", None, f"the app's private key is needed with "
                           f"GITHUB_APP_ID={app_id}: set GITHUB_PRIVATE_KEY (PEM text) or "
                           "GITHUB_PRIVATE_KEY_PATH (a .pem file)")
    if app_id and not (app_id.isascii() and app_id.isdigit()):
        raise SettingError("GITHUB_APP_ID", app_id, "expected the app's numeric id (App settings, About)")


# URL variables Settings reads without the spaces and newlines around them (a `.env` line, a
# file), and that paths are appended to (API routes, the tracker's pages in posted links).
_BASE_URLS = ("GITHUB_API_URL", "RLTRACKER_PUBLIC_URL")


def _base_url(env: Mapping[str, str], name: str) -> str | None:
    """A _BASE_URLS variable's value as Settings reads it: stripped, None when empty."""
    return (env.get(name) or "").strip() or None


def public_url_set(env: Mapping[str, str] | None = None) -> bool:
    """Whether RLTRACKER_PUBLIC_URL is set: without it every tracker link leads to this
    machine's default (`local_url`), which `serve` and `report` refuse to post and `preview`
    does not store."""
    return _base_url(os.environ if env is None else env, "RLTRACKER_PUBLIC_URL") is not None


def _check_http_url(env: Mapping[str, str], name: str) -> None:
    raw = env.get(name)
    value = _base_url(env, name) if name in _BASE_URLS else raw
    if not value:
        return
    if any(c.isspace() or not c.isprintable() for c in value):
        raise SettingError(name, raw, "expected an http:// or https:// URL, without spaces in it")
    try:
        parts = urlsplit(value)  # raises on an unclosed IPv6 bracket (http://[::1)
        parts.port  # noqa: B018 - parsing it raises on a bad port
    except ValueError:
        raise SettingError(name, raw, "expected an http:// or https:// URL") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SettingError(name, raw, "expected an http:// or https:// URL")
    if name in _BASE_URLS and ("?" in value or "#" in value):
        # gidgethub joins "https://ghe.example/api/v3?x=1" and "repos/o/r" into
        # https://ghe.example/api/repos/o/r; a posted link would end in the fragment
        raise SettingError(name, raw, "expected the base URL, without a ?query or #fragment: "
                           "paths are appended to it")


_CRONTAB_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")


def _crontab_weekdays(field: str) -> str:
    """crontab's day-of-week field (0 and 7: Sunday) as day names, which APScheduler 3 reads
    as crontab does: its from_crontab takes numbers as 0 = Monday. Names, `*` and `?` as given."""
    if field == "*" or not re.fullmatch(r"[0-9*/,-]+", field):
        return field
    days: set[int] = set()
    for item in field.split(","):
        part, slash, step_text = item.partition("/")
        try:
            step = int(step_text) if slash else 1
            if part == "*":
                low, high = 0, 6
            elif "-" in part:
                low, high = (int(n) for n in part.split("-", 1))
            else:
                low = int(part)
                high = 7 if slash else low
        except ValueError:
            raise ValueError(f"day of week {item!r} is not a crontab day list") from None
        if not 0 <= low <= high <= 7 or step < 1:
            raise ValueError(f"day of week {item!r}: expected days 0-7 (0 and 7: Sunday)")
        days.update(d % 7 for d in range(low, high + 1, step))
    return ",".join(_CRONTAB_DAYS[d] for d in sorted(days))


def crontab_trigger(expr: str, timezone: object) -> object:
    """APScheduler's trigger for a crontab line, read as crontab reads it: weekday numbers
    from Sunday = 0, and a line that restricts both the day of the month and the day of the
    week runs on either (APScheduler's CronTrigger wants both)."""
    from apscheduler.triggers.combining import OrTrigger
    from apscheduler.triggers.cron import CronTrigger

    values = expr.split()
    if len(values) != 5:
        return CronTrigger.from_crontab(expr, timezone=timezone)  # its error says why
    minute, hour, day, month, weekday = values
    weekday = _crontab_weekdays(weekday)
    if day.startswith("*") or weekday.startswith("*"):
        return CronTrigger.from_crontab(" ".join((minute, hour, day, month, weekday)), timezone=timezone)
    return OrTrigger([
        CronTrigger.from_crontab(" ".join((minute, hour, day, month, "*")), timezone=timezone),
        CronTrigger.from_crontab(" ".join((minute, hour, "*", month, weekday)), timezone=timezone),
    ])


def _check_cron(env: Mapping[str, str]) -> None:
    value = env.get("RLTRACKER_NIGHTLY_CRON")
    if not value:
        return
    from datetime import UTC

    try:
        crontab_trigger(value, timezone=UTC)
    except ValueError as exc:
        raise SettingError("RLTRACKER_NIGHTLY_CRON", value,
                           f"not a crontab line ({exc}); expected 5 fields, minute hour day "
                           "month weekday, e.g. '0 3 * * *'") from None


# The largest values the run can use: PostgreSQL's statement_timeout is an int of
# milliseconds (SET LOCAL refuses more, in every bounded transaction); a lease end is now +
# the lease (past year 9999 a claim overflows), and a lease of more than a day leaves a dead
# process's deliveries unhandled for longer than anyone waits.
MAX_STATEMENT_TIMEOUT = 2147483.0  # seconds
MAX_WORKER_LEASE = 86400.0  # seconds
# The shortest lease: the heartbeat renews a claimed delivery every third of it, and a worker
# whose loop is busy longer (an analysis of a long thread, a slow database) loses its
# deliveries to another worker mid-handling. Under a second is a unit slip (milliseconds).
MIN_WORKER_LEASE = 1.0  # seconds


def _check_number(env: Mapping[str, str], name: str, maximum: float,
                  minimum: float | None = None) -> None:
    value = env.get(name)
    if not value:
        return
    try:
        number = float(value)
    except ValueError:
        number = float("nan")
    if minimum is not None and not minimum <= number <= maximum:
        raise SettingError(name, value, f"expected a number of seconds at least {minimum:.0f} "
                           f"and at most {maximum:.0f}")
    if not 0 < number <= maximum:
        raise SettingError(name, value, f"expected a number of seconds greater than 0 and at "
                           f"most {maximum:.0f}")


def _check_choice(env: Mapping[str, str], name: str, allowed: set[str] | tuple[str, ...],
                  expected: str) -> None:
    value = env.get(name)
    if value is not None and value.strip().lower() not in {a.lower() for a in allowed}:
        raise SettingError(name, value, expected)


def check_env(env: Mapping[str, str], *, database_may_be_absent: bool = False) -> None:
    """Raise a SettingError for the first variable whose value cannot be used."""
    check_database_url(env.get("DATABASE_URL") or DEFAULT_DATABASE_URL,
                       may_be_absent=database_may_be_absent)
    _check_app_credentials(env)
    for name in ("GITHUB_API_URL", "RLTRACKER_PUBLIC_URL", "RLTRACKER_ARXIV_API_URL"):
        _check_http_url(env, name)
    _check_cron(env)
    if env.get("PORT"):
        try:
            parse_port(env["PORT"])
        except ValueError as exc:
            raise SettingError("PORT", env["PORT"], str(exc)) from None
    _check_number(env, "RLTRACKER_WORKER_LEASE", MAX_WORKER_LEASE, MIN_WORKER_LEASE)
    _check_number(env, "RLTRACKER_STATEMENT_TIMEOUT", MAX_STATEMENT_TIMEOUT)
    report_issue = env.get("RLTRACKER_REPORT_ISSUE")
    if report_issue and not _REPORT_ISSUE.fullmatch(report_issue.strip()):
        raise SettingError("RLTRACKER_REPORT_ISSUE", report_issue,
                           "expected OWNER/REPO#NUMBER, the issue the nightly report is posted on")
    _check_choice(env, "RLTRACKER_DRY_RUN", _TRUE | _FALSE, "expected 1 or 0 (or true/false, yes/no, on/off)")
    _check_choice(env, "RLTRACKER_FETCH_PAPERS", _TRUE | _FALSE,
                  "expected 1 (fetch arXiv listings nightly) or 0 (or true/false, yes/no, on/off)")
    level = env.get("RLTRACKER_LOG_LEVEL")
    if log_level(env) not in _LOG_LEVELS:
        raise SettingError("RLTRACKER_LOG_LEVEL", level, "expected " + ", ".join(_LOG_LEVELS[:-1])
                           + " or " + _LOG_LEVELS[-1] + " (any case)")


def log_level(env: Mapping[str, str]) -> str:
    """RLTRACKER_LOG_LEVEL as the logging module names it: any case, spaces around it
    dropped; empty or unset is INFO, as every variable's empty value is its default
    (check_env refuses a name that is no level)."""
    return (env.get("RLTRACKER_LOG_LEVEL") or "").strip().upper() or "INFO"


def graphql_url(api_url: str) -> str:
    """The GraphQL endpoint beside a REST base URL: `{base}/graphql` (github.com, GHE.com, the
    test suite's fake), except GitHub Enterprise Server's `https://host/api/v3`, whose GraphQL
    is `https://host/api/graphql` (`/api/v3/graphql` is a 404 there)."""
    base = api_url.rstrip("/")
    if base.endswith("/api/v3"):
        base = base[: -len("/v3")]
    return base + "/graphql"


def local_url(port: int) -> str:
    """RLTRACKER_PUBLIC_URL's default: the tracker served on this machine, on `port`."""
    return f"http://localhost:{port}"


@dataclass(frozen=True)
class Settings:
    database_url: str = DEFAULT_DATABASE_URL
    webhook_secret: str | None = field(default=None, repr=False)
    # GITHUB_WEBHOOK_SECRET_PREVIOUS: during a rotation, deliveries signed with it are accepted too
    webhook_secret_previous: str | None = field(default=None, repr=False)
    app_id: str | None = None
    private_key: str | None = field(default=None, repr=False)
    token: str | None = field(default=None, repr=False)
    api_url: str = DEFAULT_API_URL
    dry_run: bool = True
    public_url: str = "http://localhost:8000"
    nightly_cron: str = "0 3 * * *"
    report_issue: str | None = None  # "owner/repo#N": where the nightly report is posted
    port: int = DEFAULT_PORT  # of `rltracker serve`; --port wins
    worker_lease: float = DEFAULT_WORKER_LEASE  # seconds an inbox row stays claimed without a heartbeat
    fetch_papers: bool = False  # RLTRACKER_FETCH_PAPERS: the nightly job reads new arXiv listings
    # seconds a web request's statement may run on PostgreSQL (RLTRACKER_STATEMENT_TIMEOUT)
    statement_timeout: float = DEFAULT_STATEMENT_TIMEOUT

    @property
    def graphql_url(self) -> str:
        return graphql_url(self.api_url)

    @property
    def has_app_credentials(self) -> bool:
        return bool(self.app_id and self.private_key)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, *, database_may_be_absent: bool = False,
                 **overrides: object) -> Settings:
        """Settings from `env` (default os.environ), checked first (`check_env`): a bad value
        raises SettingError. `overrides` (tests, --dev) are taken as given."""
        env = dict(os.environ if env is None else env)
        check_env(env, database_may_be_absent=database_may_be_absent)
        key = read_private_key(env)
        app_id = (env.get("GITHUB_APP_ID") or "").strip() or None
        # Without app credentials nothing can be posted: dry-run is forced.
        dry_run = _truthy(env.get("RLTRACKER_DRY_RUN")) or not (app_id and key)
        port = parse_port(env["PORT"]) if env.get("PORT") else DEFAULT_PORT
        values: dict[str, object] = dict(
            database_url=normalise_database_url(env.get("DATABASE_URL") or DEFAULT_DATABASE_URL),
            webhook_secret=webhook_secret(env.get("GITHUB_WEBHOOK_SECRET")),
            webhook_secret_previous=webhook_secret(env.get("GITHUB_WEBHOOK_SECRET_PREVIOUS")),
            app_id=app_id,
            private_key=key or None,
            token=(env.get("GITHUB_TOKEN") or "").strip() or None,  # no token holds a space
            api_url=(_base_url(env, "GITHUB_API_URL") or DEFAULT_API_URL).rstrip("/"),
            dry_run=dry_run,
            public_url=(_base_url(env, "RLTRACKER_PUBLIC_URL") or local_url(port)).rstrip("/"),
            nightly_cron=env.get("RLTRACKER_NIGHTLY_CRON") or "0 3 * * *",
            report_issue=(env.get("RLTRACKER_REPORT_ISSUE") or "").strip() or None,
            port=port,
            worker_lease=float(env.get("RLTRACKER_WORKER_LEASE") or DEFAULT_WORKER_LEASE),
            fetch_papers=_truthy(env.get("RLTRACKER_FETCH_PAPERS")),
            statement_timeout=float(env.get("RLTRACKER_STATEMENT_TIMEOUT") or DEFAULT_STATEMENT_TIMEOUT),
        )
        values.update(overrides)
        return cls(**values)  # type: ignore[arg-type]


def cache_dir(env: dict[str, str] | None = None) -> Path:
    """Where saved paper indexes live: $RLTRACKER_CACHE_DIR, else $XDG_CACHE_HOME/rltracker,
    else ~/.cache/rltracker. Read at each call, so a test or a command can point it elsewhere."""
    env = os.environ if env is None else env
    if env.get("RLTRACKER_CACHE_DIR"):
        return Path(env["RLTRACKER_CACHE_DIR"])
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "rltracker"
