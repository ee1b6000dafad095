"""All webhook routers, combined in one place. Handlers are `async def h(event, ctx)`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from gidgethub.routing import Router

from bot.webhooks import commands, events, installations, privacy

router = Router(events.router, installations.router, commands.router, privacy.router)


def handled_events() -> frozenset[str]:
    """The events a handler is registered for, and `ping` (GitHub's first delivery to a new
    hook: stored and answered, nothing to do). Any other event is stored and done with
    nothing done: `rltracker replay` refuses to send one (a folder's name taken for the
    event, `--event issue` for `issues`). gidgethub's Router keeps its routes in these two
    dicts and lists them nowhere else."""
    return frozenset((*router._shallow_routes, *router._deep_routes, "ping"))


@dataclass(frozen=True)
class BatchHandling:
    """How the worker handles several deliveries together: `handle(events, ctx)` takes a run
    of deliveries that `takes` and returns one outcome per delivery (None or
    the exception that failed it); `rest` holds the handlers of the same events that still
    run per delivery, after it (same order as `router` dispatches them)."""

    takes: Callable[[Any], bool]
    handle: Callable[[list[Any], Any], Awaitable[list[BaseException | None]]]
    rest: Router


def _thread_event_without_command(event: Any) -> bool:
    """Thread events, except comments holding a /rltracker command and opening posts holding
    `ignore` or `stop`: a command acts on what the deliveries before it did, so it runs alone,
    in its place."""
    if event.event not in events.EVENTS:
        return False
    data = event.data if isinstance(event.data, Mapping) else {}
    comment = data.get("comment") or data.get("review")  # a review's summary holds commands too
    if isinstance(comment, Mapping):
        return not commands.parse_command(comment.get("body"))
    # an opening post saying `/rltracker ignore` or `stop`, opened or edited
    # (commands.handle_opening_command; its labels, assignments... batch as any)
    if data.get("action") not in ("opened", "created", "edited"):
        return True
    opening = data.get(commands.OPENING_EVENTS.get(event.event, ""))
    return not (isinstance(opening, Mapping) and commands.opening_command(opening.get("body")))


batch_handling = BatchHandling(
    takes=_thread_event_without_command,
    handle=events.handle_batch,
    rest=Router(installations.router, commands.router, privacy.router),
)
