"""Alembic from code: upgrade to head, and tell whether a database is behind."""

from __future__ import annotations

import warnings

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.exc import SAWarning
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.config import ALEMBIC_INI, MIGRATIONS_DIR


def alembic_config(database_url: str) -> Config:
    cfg = Config(str(ALEMBIC_INI))
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.attributes["database_url"] = database_url
    cfg.attributes["configure_logging"] = False
    return cfg


def upgrade(database_url: str, revision: str = "head") -> None:
    """Run `alembic upgrade` (blocking: call from a thread inside an event loop)."""
    with warnings.catch_warnings():
        # On SQLite alembic's batch copy of a table (0013's `comments`) reflects the tables it
        # refers to, and SQLAlchemy warns that it skips `threads`' expression index, which
        # the copy leaves alone: two lines of stderr at every first `make run`, nothing to do.
        warnings.filterwarnings("ignore", category=SAWarning,
                                message="Skipped unsupported reflection of expression-based index")
        command.upgrade(alembic_config(database_url), revision)


def head_revision() -> str | None:
    script = ScriptDirectory.from_config(alembic_config("sqlite://"))
    return script.get_current_head()


async def current_revision(engine: AsyncEngine) -> str | None:
    async with engine.connect() as conn:
        return await conn.run_sync(
            lambda sync_conn: MigrationContext.configure(sync_conn).get_current_revision()
        )


async def is_up_to_date(engine: AsyncEngine) -> bool:
    return await current_revision(engine) == head_revision()


def migrate_command(args: object) -> int:
    from bot.config import Settings, sqlite_path

    settings = Settings.from_env(database_may_be_absent=True)
    path = sqlite_path(settings.database_url)
    if path is not None:  # checked: it can be created (SQLite itself creates only the file)
        path.parent.mkdir(parents=True, exist_ok=True)
    upgrade(settings.database_url)
    print(f"database at {head_revision()}")
    return 0
