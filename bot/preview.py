from __future__ import annotations

from aiohttp import web


def setup(app: web.Application) -> None:
    """Adds this module's routes to the app."""
