"""Who wrote something: the one judgement of a bot account, for the analyzers and the app.

Pure (no I/O, no imports of the app), so the analyzers and bot/ both read it here: a record
or comment counts as a bot's exactly when GitHub typed its account "Bot" (REST `type`,
GraphQL `__typename`, a record's `author_is_bot`) or its login ends in `[bot]`, in any case.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def is_bot_login(login: str | None, typename: str | None = None) -> bool:
    """A bot account: GitHub's type "Bot" (REST `type`, GraphQL `__typename`) or a `[bot]` login."""
    if typename == "Bot":
        return True
    return bool(login) and str(login).lower().endswith("[bot]")


def by_bot(item: Mapping[str, Any]) -> bool:
    """A thread record or comment (the contract's `author`, optional `author_is_bot`) a bot wrote."""
    return is_bot_login(item.get("author"), "Bot" if item.get("author_is_bot") else None)
