"""All webhook routers, combined in one place. Handlers are `async def h(event, ctx)`."""

from __future__ import annotations

from gidgethub.routing import Router

from bot.webhooks import commands, events, installations

router = Router(events.router, installations.router, commands.router)
