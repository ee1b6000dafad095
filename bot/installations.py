from __future__ import annotations

from gidgethub.routing import Router

router = Router()
