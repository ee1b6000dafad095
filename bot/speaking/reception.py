"""How the app's comments were received, and pausing a repository that does not want them.

Nightly, for every comment the app posted in other people's repositories (Action rows with a
comment_node_id), one GraphQL `nodes(ids: [...])` request per hundred comments reads 👍 and 👎
counts and whether the comment was minimised (and why); a node that no longer resolves is a
deleted comment. The counts are stored on the Action rows (the tracker site shows them).

A repository is paused (Repository.comments_paused, with the reason) when, among its last
PAUSE_WINDOW comments, PAUSE_HIDDEN or more were hidden or deleted, or 👎 outnumber 👍. A
comment the app minimised itself on a command (`stop`, `not-a-failure`) is not one hidden,
nor one a person hid as resolved, outdated or a duplicate (tidying the thread: `TIDIED`).
Pausing is sticky: the numbers that caused it do not go away by themselves, so un-pausing is
a maintainer's decision, not the job's: `/rltracker resume` by a maintainer of the repository
(bot/webhooks/commands.py), or an operator's `rltracker repos resume OWNER/REPO`, both through
`resume_comments`. A resume is sticky too: the check then judges only the comments posted
after it (Repository.resumed_at), so the hidden comments that caused the pause do not pause
the repository again the next night; new ones can.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select

from bot.github.queries import RECEPTION_QUERY
from bot.store.installations import silenced_installations
from bot.store.models import Action, Repository
from bot.store.types import utcnow

log = logging.getLogger(__name__)

PAUSE_WINDOW = 10
PAUSE_HIDDEN = 2
CHUNK = 100  # ids per nodes() request: GitHub's maximum
OWN_KINDS = ("failure_comment", "rule_summary")  # comments in other people's repositories


@dataclass
class ReceptionStats:
    comments: int = 0
    requests: int = 0
    minimized: int = 0
    deleted: int = 0
    unread: int = 0  # comments GitHub would not read (their group refused; null, not NOT_FOUND)
    paused: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"comments": self.comments, "requests": self.requests, "minimized": self.minimized,
                "deleted": self.deleted, "unread": self.unread, "paused": list(self.paused)}


def hidden_on_request(action: Action) -> bool:
    """The app minimised this comment itself, as a `/rltracker stop` or `not-a-failure` on
    its thread asked (bot.speaking.verdict: `minimized_by`), which the thread's author may
    give: not the repository's maintainers hiding it on GitHub, which takes write access."""
    return bool((action.details or {}).get("minimized_by"))


# Why a person hides a comment that was no refusal of it (GitHub's Hide menu): the problem
# it answered was fixed, the thread moved on, it repeats another. As the analyzers read a
# comment hidden so as part of the discussion (bot.analysis.HIDDEN_FROM_ANALYSIS names the
# others: spam, abuse, off-topic), a maintainer tidying a thread does not pause the app.
TIDIED = frozenset({"resolved", "outdated", "duplicate"})


# An action's details[THREAD_DELETED]: its comment went with the issue or pull request, deleted
# (its `deleted` delivery buried it): no comment the maintainers deleted (speak62: deleting
# two test or spam issues the app had commented on paused it in the repository).
THREAD_DELETED = "thread_deleted"


def hidden_by_people(action: Action) -> bool:
    """The comment was hidden by the repository's people as unwanted: deleted, or minimised
    (not by the app on request, not as resolved, outdated or a duplicate; for no reason
    GitHub gives, it counts)."""
    if action.comment_deleted:
        # (gone with its issue, which a person with admin rights deleted: no answer to it)
        return not (action.details or {}).get(THREAD_DELETED)
    if not action.is_minimized or hidden_on_request(action):
        return False
    return str(action.minimized_reason or "").strip().lower().replace("_", "-") not in TIDIED


def pause_reason(actions: list[Action]) -> str | None:
    """Why a repository's recent reception calls for a pause, or None. Newest first."""
    recent = actions[:PAUSE_WINDOW]
    hidden = sum(1 for a in recent if hidden_by_people(a))
    up = sum(a.reactions_up or 0 for a in recent)
    down = sum(a.reactions_down or 0 for a in recent)
    if hidden >= PAUSE_HIDDEN:
        return f"{hidden} of the app's last {len(recent)} comments were hidden or deleted"
    if down > up:
        return f"👎 outnumber 👍 on the app's last {len(recent)} comments ({down} to {up})"
    return None


UNREAD = object()  # a node of the answer GitHub did not read (`_read_nodes`)


async def _read_nodes(ctx: Any, ids: list[str], installation_id: int | None) -> list[Any]:
    """The comments' nodes, in the order of `ids`: None for a deleted one (GitHub answers
    null and a NOT_FOUND error pointing at it), UNREAD for one null under another error
    (FORBIDDEN: not the app's to read now; GitHub's own failure on that node): that was taken
    for deleted, for good, and counted as hidden by the repository's people."""
    import gidgethub

    errors: list[Any] = []
    try:
        data = await ctx.github.graphql(RECEPTION_QUERY, installation_id=installation_id, ids=ids)
    except gidgethub.GraphQLException as exc:
        # The other nodes of a partial answer are still in `data`.
        response = exc.response if isinstance(exc.response, dict) else {}
        data = response.get("data")
        if not data:
            raise
        errors = [e for e in response.get("errors") or [] if isinstance(e, dict)]
    nodes = list(data.get("nodes") or [None] * len(ids))
    if not errors:
        return nodes
    gone = {e["path"][1] for e in errors if e.get("type") == "NOT_FOUND"
            and isinstance(e.get("path"), list) and len(e["path"]) == 2 and e["path"][0] == "nodes"}
    return [UNREAD if node is None and k not in gone else node for k, node in enumerate(nodes)]


async def _with_their_threads(session: Any, gone: list[Action]) -> None:
    """Mark the deleted comments whose issue or pull request was deleted (buried: the
    thread's Deletion key) as gone with it (THREAD_DELETED)."""
    from bot.store.threads import graves, thread_grave

    if not gone:
        return
    keys = {a.id: thread_grave(a.repo, a.number or 0, "issue") for a in gone}
    buried = await graves(session, set(keys.values()))
    for action in gone:
        if keys[action.id] in buried:
            action.details = {**(action.details or {}), THREAD_DELETED: True}


async def _issue_gone(ctx: Any, installation_id: int | None, repo: str, number: int) -> str | None:
    """GitHub's 410 Gone for the comment's issue, asked of a comment read deleted whose thread
    has no grave yet (its `deleted` delivery not handled): "deleted" (REST's answer for a
    deleted issue), or "disabled" (the repository's issues turned off: the issue and the
    comment are there, unserved while they are; `gone_answer`). Anything else (it is there,
    404, a refusal, GitHub failing, the installation gone) tells nothing: None, and the
    comment counts, as before; a grave its delivery leaves later stops it counting
    (`_with_their_threads` at each check)."""
    import gidgethub

    from bot.github.client import gone_answer

    try:
        gh = await ctx.github.api(installation_id)
        await gh.getitem(f"/repos/{repo}/issues/{number}")
    except gidgethub.BadRequest as exc:
        if (answer := gone_answer(exc)) is not None:
            return answer
        log.info("reception: %s#%s answered %s: its comment counts as deleted",
                 repo, number, exc.status_code)
    except Exception as exc:  # noqa: BLE001 - one thread unread, the check goes on
        log.warning("reception: could not ask GitHub about %s#%s: %s", repo, number, exc)
    return None


async def refresh_reception(ctx: Any) -> ReceptionStats:
    stats = ReceptionStats()
    if ctx.github is None:
        return stats
    async with ctx.sessionmaker() as session:
        actions = list(await session.scalars(
            select(Action).where(Action.comment_node_id.is_not(None), Action.status == "posted",
                                 Action.kind.in_(OWN_KINDS), Action.comment_deleted.is_(False))))
        repos = {r.full_name.lower(): r for r in await session.scalars(select(Repository))}
        # A suspended or uninstalled installation's token is refused: read those with the rest.
        silenced = await silenced_installations(session)
        gone: list[Action] = []  # read as deleted tonight
        read_with: dict[int, int | None] = {}  # action id: the installation it was read with
        by_installation: dict[int | None, list[Action]] = defaultdict(list)
        for action in actions:
            repo = repos.get(action.repo.lower())
            installation = repo.installation_id if repo is not None and ctx.settings.has_app_credentials else None
            by_installation[None if installation in silenced else installation].append(action)
        for installation_id, group in by_installation.items():
            for i in range(0, len(group), CHUNK):
                chunk = group[i:i + CHUNK]
                try:
                    nodes = await _read_nodes(ctx, [a.comment_node_id or "" for a in chunk],
                                              installation_id)
                except Exception as exc:  # noqa: BLE001 - one group's credentials, not the job
                    # An installation deleted or suspended since (no token, 403/404), or no
                    # GITHUB_TOKEN for repositories it left: the other groups and the pause
                    # check still run (one such group failed the whole step, every night).
                    log.warning("reception: cannot read %d comments (installation %s): %s",
                                len(group) - i, installation_id, exc)
                    stats.unread += len(group) - i
                    break
                stats.requests += 1
                for action, node in zip(chunk, nodes, strict=False):
                    if node is UNREAD:  # read again the next night
                        stats.unread += 1
                        continue
                    stats.comments += 1
                    if node is None:
                        action.comment_deleted = True
                        stats.deleted += 1
                        gone.append(action)
                        read_with[action.id] = installation_id
                        continue
                    action.is_minimized = bool(node.get("isMinimized"))
                    action.minimized_reason = (node.get("minimizedReason") or None) if action.is_minimized else None
                    action.reactions_up = int((node.get("up") or {}).get("totalCount") or 0)
                    action.reactions_down = int((node.get("down") or {}).get("totalCount") or 0)
                    stats.minimized += int(action.is_minimized)
        # Nothing written yet (no flush): the graves read and the GitHub requests below hold
        # no row lock. Flushed before them (left63's requests in locks63's transaction), the
        # actions' rows stayed locked on PostgreSQL for the length of the GitHub calls, and
        # a webhook batch writing one of them waited that long.
        with session.no_autoflush:
            await _with_their_threads(session, gone)
            # Its issue's `deleted` delivery not handled yet (no grave): GitHub asked about the
            # issue (speak62 looked only at graves, the night a comment was read deleted: read
            # before the delivery, it counted as one the maintainers deleted, for good).
            asked: dict[tuple[str, int], str | None] = {}
            for action in gone:
                if (action.details or {}).get(THREAD_DELETED) or not action.number:
                    continue
                key = (action.repo, int(action.number))
                if key not in asked:
                    asked[key] = await _issue_gone(
                        ctx, read_with.get(action.id), action.repo, int(action.number))
                if asked[key] == "deleted":
                    action.details = {**(action.details or {}), THREAD_DELETED: True}
                elif asked[key] == "disabled":
                    # The repository's issues turned off (410 "Issues are disabled"), not the
                    # comment deleted: unread, and read again the next night (marked deleted,
                    # it was never read again once they were turned back on).
                    action.comment_deleted = False
                    stats.deleted -= 1
                    stats.unread += 1
        # What was read committed before any repository is paused: a rename or a batch
        # takes a repository's row before its actions, and this transaction, holding the
        # actions and then waiting for the row, met one holding the row and waiting for an
        # action (a deadlock on PostgreSQL).
        await session.commit()
        # The pause check over every repository the app has commented in.
        recent: dict[str, list[Action]] = defaultdict(list)
        pause: list[tuple[Repository, str]] = []
        for action in await session.scalars(
                select(Action).where(Action.comment_node_id.is_not(None), Action.status == "posted",
                                     Action.kind.in_(OWN_KINDS))
                .order_by(Action.created_at.desc(), Action.id.desc())):
            recent[action.repo.lower()].append(action)
        for key, repo_actions in recent.items():
            repo = repos.get(key)
            if repo is None or repo.comments_paused:
                continue
            if repo.resumed_at is not None:  # judged on what was posted after the resume
                repo_actions = [a for a in repo_actions if a.created_at > repo.resumed_at]
            # A comment counted as deleted whose thread's deletion was handled since (its
            # grave): gone with it, whichever came first.
            await _with_their_threads(session, [
                a for a in repo_actions[:PAUSE_WINDOW]
                if a.comment_deleted and not (a.details or {}).get(THREAD_DELETED)])
            reason = pause_reason(repo_actions)
            if reason is not None:
                pause.append((repo, reason))
        # The actions marked gone with their threads committed before any repository's row
        # is written, as above (written in one transaction with the pause, they met a
        # rename holding the row and waiting for them: a deadlock on PostgreSQL).
        await session.commit()
        for repo, reason in pause:
            repo.comments_paused = True
            repo.paused_reason = f"{reason} (paused {utcnow().date().isoformat()})"
            stats.paused.append(repo.full_name)
            log.warning("reception: pausing comments in %s: %s", repo.full_name, reason)
        await session.commit()
    return stats


async def resume_comments(ctx: Any, repo: str, *,
                          by: str) -> tuple[bool, str | None, str] | None:
    """Lift the pause of the app's comments in `repo` (`by`: "@login" or "operator"), and
    record who and when; the next reception checks judge only comments posted after now.
    Returns (whether it was paused, the reason it was paused for, the name as stored), or
    None when the repository is not stored. Idempotent: resuming a repository that is not paused changes
    nothing (it does not move the time the check counts from)."""
    from sqlalchemy import func

    async with ctx.sessionmaker() as session:
        row = await session.scalar(
            select(Repository).where(func.lower(Repository.full_name) == repo.lower()))
        if row is None:
            return None
        was = bool(row.comments_paused)
        if was:
            row.comments_paused = False
            row.resumed_at = utcnow()
            row.resumed_by = by[:255]
            await session.commit()
            log.warning("reception: comments in %s resumed by %s (paused: %s)",
                        row.full_name, by, row.paused_reason)
        return was, row.paused_reason, row.full_name
