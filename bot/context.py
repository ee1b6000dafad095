"""What every handler, job and command is given: settings, database and the GitHub client;
and the keys under which the web application holds them (one low module, so that a page
module never imports the module that mounts it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiohttp import web
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from bot.config import Settings
from bot.metrics import Metrics
from bot.store.db import make_engine, make_sessionmaker

if TYPE_CHECKING:
    from bot.github.client import GitHubClient


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


# The web application's keys (aiohttp AppKey): the context, and the parts create_app starts.
CTX = web.AppKey("ctx", AppContext)
INBOX = web.AppKey("inbox", Any)  # bot.webhooks.inbox.Inbox
WORKER = web.AppKey("worker", Any)  # bot.webhooks.worker.Worker, when it runs in the process
METRICS = web.AppKey("metrics", Metrics)
# ctx.extras: the outcome counts of `serve --workers N`'s worker processes (bot.metrics.SharedCounts)
WORKER_PROCESS_COUNTS = "worker_process_counts"


def app_context(request: web.Request) -> AppContext:
    """The context of the application serving `request`."""
    return request.app[CTX]
