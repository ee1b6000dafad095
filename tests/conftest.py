"""Shared fixtures: every database test runs on SQLite and on each PostgreSQL URL in
TEST_DATABASE_URLS (a comma-separated list of admin URLs; .ci/run sets one).

Each test gets a fresh database, copied from a template migrated once per session with the
project's own Alembic migrations, so the schema under test is the one production gets.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest

from bot.config import Settings
from bot.context import AppContext
from bot.store import migrate

pytest_plugins = ["tests.fakegithub"]

SHARED = Path(__file__).resolve().parent.parent.parent / "shared"
REQUIRE_POSTGRES = os.environ.get("RLTRACKER_REQUIRE_POSTGRES") == "1"


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Saved paper indexes go to a folder of the test's own, never the user's cache."""
    path = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv("RLTRACKER_CACHE_DIR", str(path))
    return path


def postgres_admin_urls() -> list[str]:
    return [u.strip() for u in os.environ.get("TEST_DATABASE_URLS", "").split(",") if u.strip()]


def _with_database(url: str, name: str) -> str:
    base, _, _ = url.rpartition("/")
    return f"{base}/{name}"


def _asyncpg_dsn(url: str) -> str:
    return url.replace("postgresql+asyncpg://", "postgresql://")


async def _pg_execute(admin_url: str, *statements: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(_asyncpg_dsn(admin_url))
    try:
        for statement in statements:
            await conn.execute(statement)
    finally:
        await conn.close()


def no_postgres() -> NoReturn:
    """A PostgreSQL case with no server to run on: a failure under RLTRACKER_REQUIRE_POSTGRES=1
    (CI must run it), else a skip saying what to set."""
    if REQUIRE_POSTGRES:
        pytest.fail("RLTRACKER_REQUIRE_POSTGRES=1 but TEST_DATABASE_URLS is not set")
    pytest.skip("no PostgreSQL: set TEST_DATABASE_URLS")


def database_backends() -> list[object]:
    params: list[object] = [pytest.param("sqlite", id="sqlite")]
    urls = postgres_admin_urls()
    if urls:
        params += [pytest.param(u, id="postgres", marks=pytest.mark.postgres) for u in urls[:1]]
    else:
        params.append(pytest.param(None, id="postgres", marks=pytest.mark.postgres))
    return params


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("template") / "template.db"
    migrate.upgrade(f"sqlite+aiosqlite:///{path}")
    return path


@pytest.fixture(scope="session")
def postgres_template() -> Iterator[str | None]:
    urls = postgres_admin_urls()
    if not urls:
        yield None
        return
    admin = urls[0]
    name = f"rlt_template_{uuid.uuid4().hex[:10]}"
    asyncio.run(_pg_execute(admin, f'CREATE DATABASE "{name}"'))
    migrate.upgrade(_with_database(admin, name))
    yield name
    asyncio.run(_pg_execute(admin, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture
def sqlite_db_url(tmp_path: Path, sqlite_template: Path) -> str:
    """A freshly migrated SQLite database URL only (browser tests: the data paths they show
    run on both backends in their own modules)."""
    target = tmp_path / "sqlite-only.db"
    shutil.copy(sqlite_template, target)
    return f"sqlite+aiosqlite:///{target}"


@pytest.fixture
async def sqlite_ctx(sqlite_db_url: str) -> AsyncIterator[AppContext]:
    """An app context on a freshly migrated SQLite database only (browser tests)."""
    context = AppContext.create(Settings.from_env({}, database_url=sqlite_db_url))
    yield context
    await context.close()


@pytest.fixture(params=database_backends())
def db_url(
    request: pytest.FixtureRequest, tmp_path: Path, sqlite_template: Path
) -> Iterator[str]:
    """A freshly migrated, empty database URL: SQLite, then PostgreSQL."""
    if request.param == "sqlite":
        target = tmp_path / "test.db"
        shutil.copy(sqlite_template, target)
        yield f"sqlite+aiosqlite:///{target}"
        return
    if request.param is None:
        no_postgres()
    template = request.getfixturevalue("postgres_template")
    admin = request.param
    name = f"rlt_{uuid.uuid4().hex[:12]}"
    asyncio.run(_pg_execute(admin, f'CREATE DATABASE "{name}" TEMPLATE "{template}"'))
    yield _with_database(admin, name)
    asyncio.run(_pg_execute(admin, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture
def settings(db_url: str) -> Settings:
    """Dry-run settings on the test database, with a known webhook secret."""
    return Settings.from_env(
        {}, database_url=db_url, webhook_secret="test-secret", dry_run=True
    )


@pytest.fixture
async def ctx(settings: Settings) -> AsyncIterator[AppContext]:
    context = AppContext.create(settings)
    yield context
    await context.close()


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """../shared, or a clean skip when this checkout has none."""
    if not SHARED.is_dir():
        pytest.skip("../shared is not present")
    return SHARED


@pytest.fixture
def schema_path(shared_dir: Path) -> Path:
    """GitHub's GraphQL schema in ../shared (the sync's queries are checked against it)."""
    return shared_dir / "fixtures" / "github-api" / "schema.graphql"


@pytest.fixture
async def sync_ctx(settings: Settings, fake_github: Any) -> AsyncIterator[AppContext]:
    """An AppContext that reads the fake GitHub with a plain token, as `rltracker sync` does."""
    from tests.fakegithub import token_context

    async with token_context(settings, fake_github) as ctx:
        yield ctx
