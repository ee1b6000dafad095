"""What every handler, job and command is given: settings, database and the GitHub client."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from bot.config import Settings
from bot.store.db import make_engine, make_sessionmaker

if TYPE_CHECKING:
    from bot.github import GitHubClient


@dataclass
class AppContext:
    settings: Settings
    engine: AsyncEngine
    sessionmaker: async_sessionmaker[AsyncSession]
    github: GitHubClient | None = None
    extras: dict[str, Any] = field(default_factory=dict)  # per-process caches (config, rules)

    @classmethod
    def create(cls, settings: Settings) -> AppContext:
        engine = make_engine(settings.database_url)
        return cls(settings=settings, engine=engine, sessionmaker=make_sessionmaker(engine))

    async def close(self) -> None:
        if self.github is not None:
            await self.github.close()
        await self.engine.dispose()
