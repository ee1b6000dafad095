"""All webhook routers, combined in one place. Handlers are `async def h(event, ctx)`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from gidgethub.routing import Router

from bot.webhooks import commands, events, installations

router = Router(events.router, installations.router, commands.router)


@dataclass(frozen=True)
class BatchHandling:
    """How the worker handles several deliveries together: `handle(events, ctx)` takes a run
    of deliveries whose event is in `events` and returns one outcome per delivery (None or
    the exception that failed it); `rest` holds the handlers of the same events that still
    run per delivery, after it (same order as `router` dispatches them)."""

    events: frozenset[str]
    handle: Callable[[list[Any], Any], Awaitable[list[BaseException | None]]]
    rest: Router


batch_handling = BatchHandling(
    events=frozenset(events.EVENTS),
    handle=events.handle_batch,
    rest=Router(installations.router, commands.router),
)
