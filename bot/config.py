"""Settings read from the environment, once, into one immutable object."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
TEMPLATES_DIR = PROJECT_ROOT / "templates"
MIGRATIONS_DIR = PROJECT_ROOT / "migrations"
ALEMBIC_INI = PROJECT_ROOT / "alembic.ini"

DEFAULT_DATABASE_URL = "sqlite+aiosqlite:///rltracker.db"
DEFAULT_API_URL = "https://api.github.com"
WEBHOOK_BODY_LIMIT = 25 * 1024 * 1024


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in {"1", "true", "yes", "on"}


@dataclass(frozen=True)
class Settings:
    database_url: str = DEFAULT_DATABASE_URL
    webhook_secret: str | None = None
    app_id: str | None = None
    private_key: str | None = field(default=None, repr=False)
    token: str | None = field(default=None, repr=False)
    api_url: str = DEFAULT_API_URL
    dry_run: bool = True
    public_url: str = "http://localhost:8000"
    nightly_cron: str = "0 3 * * *"
    report_issue: str | None = None  # "owner/repo#N": where the nightly report is posted

    @property
    def graphql_url(self) -> str:
        return self.api_url.rstrip("/") + "/graphql"

    @property
    def has_app_credentials(self) -> bool:
        return bool(self.app_id and self.private_key)

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None, **overrides: object) -> Settings:
        env = dict(os.environ if env is None else env)
        key = env.get("GITHUB_PRIVATE_KEY")
        key_path = env.get("GITHUB_PRIVATE_KEY_PATH")
        if not key and key_path:
            key = Path(key_path).read_text()
        app_id = env.get("GITHUB_APP_ID") or None
        # Without app credentials nothing can be posted: dry-run is forced.
        dry_run = _truthy(env.get("RLTRACKER_DRY_RUN")) or not (app_id and key)
        values: dict[str, object] = dict(
            database_url=env.get("DATABASE_URL") or DEFAULT_DATABASE_URL,
            webhook_secret=env.get("GITHUB_WEBHOOK_SECRET") or None,
            app_id=app_id,
            private_key=key or None,
            token=env.get("GITHUB_TOKEN") or None,
            api_url=(env.get("GITHUB_API_URL") or DEFAULT_API_URL).rstrip("/"),
            dry_run=dry_run,
            public_url=(env.get("RLTRACKER_PUBLIC_URL") or "http://localhost:8000").rstrip("/"),
            nightly_cron=env.get("RLTRACKER_NIGHTLY_CRON") or "0 3 * * *",
            report_issue=env.get("RLTRACKER_REPORT_ISSUE") or None,
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
