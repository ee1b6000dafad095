"""What a person's verdict does to the app's failure comment on the thread.

`/rltracker kind <failure>` (bot/webhooks/commands.py) stores the verdict, then calls
`comment_after_kind`: the failure comment, if the app has one there, is recomposed for that
kind (the methods this framework has for it, said as the kind a person set: no runner-up, no
confidence) through the same update path an edit of the issue takes. A maintainer's reply
does not stop it (someone asked), but a comment a person edited on GitHub, deleted or
minimised is left as it is, and so is one on a muted thread. `/rltracker not-a-failure`
minimises the comment and mutes the thread instead (as `/rltracker stop`). Later edits and
rechecks read the verdict in `decide.act`, so the analyzer's kind never comes back.
"""

from __future__ import annotations

from typing import Any

from bot.speaking.failure_comment import update_failure_comment, with_verdict
from bot.speaking.repo_config import get_repo_config
from bot.speaking.situation import load_situation
from bot.store.verdicts import as_failure, verdict_of


async def comment_after_kind(ctx: Any, repo: str, number: int, installation_id: int | None) -> str:
    """Rewrite the failure comment for the kind the thread's verdict names; returns what
    happened ("no_comment", "updated", "unchanged", "muted", "frozen", ...)."""
    payload = {"installation": {"id": installation_id}} if installation_id is not None else None
    sit = await load_situation(ctx, repo, number, payload)
    if sit is None or sit.existing is None or sit.installation_id is None:
        return "no_comment"
    async with ctx.sessionmaker() as session:
        verdict = await verdict_of(session, sit.repo, number)
    if verdict is None or not verdict.is_failure_report:
        return "no_verdict"
    config = await get_repo_config(ctx, sit.repo, sit.installation_id, row=sit.repository)
    analysis = with_verdict({}, as_failure(verdict))
    return await update_failure_comment(ctx, sit, analysis, config, asked=True)
