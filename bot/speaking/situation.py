"""The situation of a thread when the app decides: the stored record, its repository row
(installation, framework, pause), our existing failure-comment action, and the database
questions a decision asks (declined methods, a linked pull request, earlier proposals)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import bindparam, func, select
from sqlalchemy.exc import IntegrityError

from analyzers.catalog import framework_id
from bot.speaking.quiet import issue_ref
from bot.store.installations import silenced_installations
from bot.store.models import Action, Analysis, Repository, Thread
from bot.store.threads import get_thread, load_comments, thread_record

log = logging.getLogger(__name__)

DECLINED_STATES = ("declined", "redirected")

def failure_key(repo: str, number: int) -> str:
    return f"{repo}#{number}:failure_comment"


def rules_key(repo: str, number: int) -> str:
    return f"{repo}#{number}:rule_summary"


@dataclass
class Situation:
    repo: str
    number: int
    record: dict[str, Any]
    repo_id: int
    installation_id: int | None
    framework: str | None
    paused: bool
    paused_reason: str | None
    muted: bool
    existing: Action | None  # the failure comment action, if one owns the slot
    repository: Repository | None = None  # the row read for it (its cached config)


@dataclass
class Prefetched:
    """What the decisions of a batch (bot.pipeline.threads_changed) read, fetched once for
    all of them: the repository rows, and the failure-comment actions of its threads. An
    action is used by the first decision on its thread only: that decision may claim the
    slot, so a later one on the same thread reads it again."""

    repositories: dict[str, Repository] = field(default_factory=dict)  # lower-case name ->
    actions: dict[str, Action | None] = field(default_factory=dict)  # dedupe key -> (None: none)
    silenced: set[int] = field(default_factory=set)  # installations suspended or uninstalled


_REPOSITORIES_NAMED = select(Repository).where(
    func.lower(Repository.full_name).in_(bindparam("names", expanding=True)))
_ACTIONS_KEYED = select(Action).where(Action.dedupe_key.in_(bindparam("keys", expanding=True)))


async def prefetch(session: Any, threads: list[tuple[str, int]]) -> Prefetched:
    """The repository rows and failure-comment actions of (repo, number) threads."""
    names = sorted({repo.lower() for repo, _ in threads})
    keys = sorted({failure_key(repo, number) for repo, number in threads})
    found = Prefetched()
    if not threads:
        return found
    for row in await session.scalars(_REPOSITORIES_NAMED, {"names": names}):
        found.repositories[row.full_name.lower()] = row
    found.actions = dict.fromkeys(keys)
    for action in await session.scalars(_ACTIONS_KEYED, {"keys": keys}):
        found.actions[action.dedupe_key] = action
    found.silenced = await silenced_installations(session)
    return found


def installation_from(payload: dict[str, Any] | None) -> int | None:
    inst = (payload or {}).get("installation") or {}
    try:
        return int(inst["id"]) if inst.get("id") is not None else None
    except (TypeError, ValueError):
        return None


async def repository_row(session: Any, repo: str, installation_id: int | None) -> Repository:
    row = await session.scalar(
        select(Repository).where(func.lower(Repository.full_name) == repo.lower())
    )
    if row is None:
        row = Repository(full_name=repo, framework=framework_id(repo))
        session.add(row)
        try:
            await session.flush()
        except IntegrityError:  # created concurrently by the event handler
            await session.rollback()
            row = await session.scalar(
                select(Repository).where(func.lower(Repository.full_name) == repo.lower())
            )
            assert row is not None
    return row


def _situation(thread: Any, number: int, record: dict[str, Any], row: Repository,
               payload: dict[str, Any] | None, existing: Action | None,
               silenced: set[int]) -> Situation:
    installation_id = row.installation_id
    if installation_id is None:  # a row written before its installation was known
        installation_id = installation_from(payload)
        if installation_id == row.removed_installation_id:
            installation_id = None  # removed from it: the delivery predates the removal
    if installation_id in silenced:
        installation_id = None  # as if not installed: the app only tracks there
    return Situation(
        repo=thread.repo, number=number, record=record, repo_id=row.id,
        installation_id=installation_id, framework=row.framework or framework_id(thread.repo),
        paused=bool(row.comments_paused), paused_reason=row.paused_reason,
        muted=bool(thread.muted), existing=existing, repository=row,
    )


async def load_situation(
    ctx: Any, repo: str, number: int, payload: dict[str, Any] | None,
    loaded: tuple[Any, dict[str, Any]] | None = None, prefetched: Prefetched | None = None,
) -> Situation | None:
    """`loaded`: (Thread row, its record) when the caller has just read them; `prefetched`:
    what a batch read for all its decisions (used when it holds this thread's)."""
    if loaded is not None and prefetched is not None:
        thread, record = loaded
        row = prefetched.repositories.get(thread.repo.lower())
        key = failure_key(thread.repo, number)
        if row is not None and key in prefetched.actions:
            return _situation(thread, number, record, row, payload, prefetched.actions.pop(key),
                              prefetched.silenced)
    async with ctx.sessionmaker() as session:
        if loaded is not None:
            thread, record = loaded
        else:
            thread = await get_thread(session, repo, number)
            if thread is None:
                return None
            record = thread_record(thread, await load_comments(session, thread))
        row = await repository_row(session, thread.repo, None)
        existing = await session.scalar(
            select(Action).where(Action.dedupe_key == failure_key(thread.repo, number))
        )
        situation = _situation(thread, number, record, row, payload, existing,
                               await silenced_installations(session))
        await session.commit()
    return situation

async def declined_methods(ctx: Any, repo: str) -> set[str]:
    """Methods whose proposals this repository's maintainers declined or redirected."""
    async with ctx.sessionmaker() as session:
        rows = await session.scalars(
            select(Analysis.methods)
            .join(Thread, Thread.id == Analysis.thread_id)
            .where(
                func.lower(Thread.repo) == repo.lower(),
                Analysis.is_proposal.is_(True),
                Analysis.review_state.in_(DECLINED_STATES),
            )
        )
        return {m for methods in rows for m in (methods or [])}


async def linked_pull_request(ctx: Any, repo: str, number: int) -> int | None:
    """A stored open or merged pull request in this repository that references the issue."""
    pattern = issue_ref(number)
    async with ctx.sessionmaker() as session:
        rows = await session.execute(
            select(Thread.number, Thread.title, Thread.body).where(
                func.lower(Thread.repo) == repo.lower(),
                Thread.kind == "pull_request",
                Thread.state != "closed",
                Thread.body.contains(f"#{number}") | Thread.title.contains(f"#{number}"),
            )
        )
        for pr_number, title, body in rows:
            if pattern.search(title or "") or pattern.search((body or "")[:65536]):
                return int(pr_number)
    return None


# Methods proposals build on rather than propose: "unlike GRPO", "on top of PPO with a KL
# penalty". Matched on them, nearly every proposal was an "earlier proposal" of every other.
BASELINE_METHODS = frozenset({"ppo", "grpo", "kl-penalty", "k3-kl"})


def proposed_subjects(papers: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """(method ids, arXiv ids) a proposal is about: the papers it cites, without those of
    baseline methods when it cites anything else."""
    subjects = [p for p in papers if p.get("method") not in BASELINE_METHODS] or papers
    return (sorted({p["method"] for p in subjects if p.get("method")}),
            sorted({p["arxiv_id"] for p in subjects if p.get("arxiv_id")}))


async def earlier_proposals(ctx: Any, thread_id: int | None, methods: list[str],
                            arxiv_ids: list[str]) -> list[dict[str, Any]]:
    """Proposals of the same paper or method in all seven frameworks, opened before this
    thread, newest first (the list is cut to a few: the latest say most about where the
    method stands). Only proposals: a thread that merely cites the paper is not one."""
    if not methods and not arxiv_ids:
        return []
    from analyzers.catalog import load_catalog

    cat = load_catalog()
    wanted_m, wanted_a = set(methods), set(arxiv_ids)
    out: list[dict[str, Any]] = []
    async with ctx.sessionmaker() as session:
        query = (select(Thread.id, Thread.repo, Thread.number, Thread.kind, Thread.created_at,
                        Analysis.methods, Analysis.arxiv_ids, Analysis.review_state)
                 .join(Analysis, Analysis.thread_id == Thread.id)
                 .where(Analysis.is_proposal.is_(True)))
        if thread_id is not None:
            query = query.where(Thread.id != thread_id)
            opened = await session.scalar(select(Thread.created_at).where(Thread.id == thread_id))
            if opened is not None:  # later ones are not "earlier" (an edit, a recheck)
                query = query.where((Thread.created_at < opened) | Thread.created_at.is_(None))
        for _, repo, number, kind, created, t_methods, t_arxiv, state in await session.execute(query):
            shared_m = wanted_m & set(t_methods or [])
            shared_a = wanted_a & set(t_arxiv or [])
            if not shared_m and not shared_a:
                continue
            fw = cat.framework_for_repo(repo)
            out.append({
                "repo": repo, "number": number, "kind": kind, "framework": fw.id if fw else None,
                "state": state, "method": sorted(shared_m)[0] if shared_m else None,
                "created_at": created,
            })
    # newest first; a thread of unknown date last
    out.sort(key=lambda e: (e["created_at"] is not None, e["created_at"] or 0, e["number"]),
             reverse=True)
    return out
