"""The installations the app must not act through: suspended (GitHub refuses their tokens)
or uninstalled. Deliveries queued before the event still arrive: their threads are tracked,
not answered, and their repositories are read as any other (with GITHUB_TOKEN)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from bot.store.models import Installation

_SILENCED = select(Installation.id).where(Installation.suspended.is_(True) | Installation.deleted.is_(True))


async def silenced_installations(session: Any) -> set[int]:
    return set(await session.scalars(_SILENCED))
