"""The situation of a thread when the app decides: the stored record, its repository row
(installation, framework, pause), our existing failure-comment action, and the database
questions a decision asks (declined methods, a linked pull request, earlier proposals)."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import bindparam, func, select
from sqlalchemy.exc import IntegrityError

from analyzers.catalog import framework_id
from bot.command_syntax import opening_command
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
    muted: bool  # /rltracker ignore, stop or not-a-failure, or ignore/stop in the opening post
    existing: Action | None  # the failure comment action, if one owns the slot
    repository: Repository | None = None  # the row read for it (its cached config)
    # Read with `existing`, in the same query (`claims_of`): an attempt at the failure comment
    # failed after recording the text it was about to post (GitHub may have created it), and
    # the rule summary's claim (a pending one with its text recorded: its run may have died
    # as it posted). What a quiet decision asks before it records a skip.
    failed_with_text: bool = False
    rules_claim: Action | None = None
    # Its installation is suspended or uninstalled (installation_id is None then): the app
    # tracks the thread and says nothing there.
    silenced: bool = False

    @property
    def rules_may_have_posted(self) -> bool:
        """The rule summary's slot holds a pending claim whose run recorded the text it was
        about to post (`renew`): that run may have died after GitHub created the reply."""
        claim = self.rules_claim
        return claim is not None and claim.status == "pending" and claim.body is not None


@dataclass
class Prefetched:
    """What the decisions of a batch (bot.pipeline.threads_changed) read, fetched once for
    all of them: the repository rows, and the failure-comment actions of its threads. An
    action is used by the first decision on its thread only: that decision may claim the
    slot, so a later one on the same thread reads it again."""

    repositories: dict[str, Repository] = field(default_factory=dict)  # lower-case name ->
    # dedupe key (failure comment's, rule summary's) -> (None: none)
    actions: dict[str, Action | None] = field(default_factory=dict)
    failed: set[str] = field(default_factory=set)  # failure keys with a failed attempt's text
    silenced: set[int] = field(default_factory=set)  # installations suspended or uninstalled


_REPOSITORIES_NAMED = select(Repository).where(
    func.lower(Repository.full_name).in_(bindparam("names", expanding=True)))
# The claims of a decision, in one query: the failure comment's and rule summary's slots
# (`keys`), and the failure comment's attempts that failed after recording the text they were
# about to post (on threads whose repository is in `repos` and number in `numbers`: the
# index on (repo, number); the pairs asked for are picked out by the caller). Folded into
# the claim read (review 59): asked apart, the two crash-window look-ups cost two more
# sessions on every quiet decision.
_CLAIMS = select(Action).where(
    Action.dedupe_key.in_(bindparam("keys", expanding=True))
    | (Action.repo.in_(bindparam("repos", expanding=True))
       & Action.number.in_(bindparam("numbers", expanding=True))
       & (Action.kind == "failure_comment") & (Action.status == "failed")
       & Action.body.is_not(None)))


async def claims_of(session: Any, threads: list[tuple[str, int]]
                    ) -> tuple[dict[str, Action | None], set[str]]:
    """({dedupe key: action or None} of the failure comment's and rule summary's slots,
    {failure keys with a failed attempt's recorded text}) of (repo, number) threads."""
    keys = sorted({key(repo, number) for repo, number in threads
                   for key in (failure_key, rules_key)})
    wanted = {(repo, number) for repo, number in threads}
    actions: dict[str, Action | None] = dict.fromkeys(keys)
    failed: set[str] = set()
    rows = await session.scalars(_CLAIMS, {
        "keys": keys, "repos": sorted({repo for repo, _ in threads}),
        "numbers": sorted({number for _, number in threads})})
    for action in rows:
        if action.dedupe_key is not None and action.dedupe_key in actions:
            actions[action.dedupe_key] = action
        elif action.status == "failed" and (action.repo, action.number) in wanted:
            failed.add(failure_key(action.repo, action.number or 0))
    return actions, failed


async def prefetch(session: Any, threads: list[tuple[str, int]]) -> Prefetched:
    """The repository rows and the claims (`claims_of`) of (repo, number) threads."""
    names = sorted({repo.lower() for repo, _ in threads})
    found = Prefetched()
    if not threads:
        return found
    for row in await session.scalars(_REPOSITORIES_NAMED, {"names": names}):
        found.repositories[row.full_name.lower()] = row
    found.actions, found.failed = await claims_of(session, threads)
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
               silenced: set[int], *, failed_with_text: bool = False,
               rules_claim: Action | None = None) -> Situation:
    installation_id = row.installation_id
    if installation_id is None:  # a row written before its installation was known
        installation_id = installation_from(payload)
        if installation_id == row.removed_installation_id:
            installation_id = None  # removed from it: the delivery predates the removal
    is_silenced = installation_id in silenced
    if is_silenced:
        installation_id = None  # as if not installed: the app only tracks there
    return Situation(
        repo=thread.repo, number=number, record=record, repo_id=row.id,
        installation_id=installation_id, framework=row.framework or framework_id(thread.repo),
        paused=bool(row.comments_paused), paused_reason=row.paused_reason,
        # `/rltracker ignore` or `stop` in the opening post mutes it as in a comment (the
        # command's handler records it; the decision, which may run first, reads it here)
        muted=bool(thread.muted) or opening_command(record.get("body")) is not None,
        existing=existing, repository=row,
        failed_with_text=failed_with_text, rules_claim=rules_claim, silenced=is_silenced,
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
        key, rules = failure_key(thread.repo, number), rules_key(thread.repo, number)
        if row is not None and key in prefetched.actions and rules in prefetched.actions:
            failed = key in prefetched.failed
            prefetched.failed.discard(key)
            return _situation(thread, number, record, row, payload, prefetched.actions.pop(key),
                              prefetched.silenced, failed_with_text=failed,
                              rules_claim=prefetched.actions.pop(rules))
    async with ctx.sessionmaker() as session:
        if loaded is not None:
            thread, record = loaded
        else:
            thread = await get_thread(session, repo, number)
            if thread is None:
                return None
            record = thread_record(thread, await load_comments(session, thread))
        row = await repository_row(session, thread.repo, None)
        actions, failed = await claims_of(session, [(thread.repo, number)])
        key = failure_key(thread.repo, number)
        situation = _situation(thread, number, record, row, payload, actions[key],
                               await silenced_installations(session),
                               failed_with_text=key in failed,
                               rules_claim=actions[rules_key(thread.repo, number)])
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


def full_issue_ref(repo: str, number: int) -> re.Pattern[str]:
    """The issue named in full, as GitHub links it too: `owner/repo#12` or its URL
    (`https://github.com/owner/repo/issues/12`), under the repository's name or a former one
    its framework had (a rename redirects), any case; not another repository's (`a/owner/repo`,
    `owner/repo-x`), nor a pull request's URL or another number."""
    from analyzers.catalog import load_catalog

    names = sorted({n.lower() for n in load_catalog().names_of(repo)})
    alternatives = "|".join(re.escape(n) for n in names)
    return re.compile(rf"(?:(?<![\w./-])|(?<=github\.com/))(?:{alternatives})(?:#|/issues/){number}(?!\d)",
                      re.IGNORECASE)


async def linked_pull_request(ctx: Any, repo: str, number: int) -> int | None:
    """A stored open or merged pull request in this repository that references the issue
    (`#12`, `owner/repo#12` or the issue's URL)."""
    short, full = issue_ref(number), full_issue_ref(repo, number)
    async with ctx.sessionmaker() as session:
        rows = await session.execute(
            select(Thread.number, Thread.title, Thread.body).where(
                func.lower(Thread.repo) == repo.lower(),
                Thread.kind == "pull_request",
                Thread.state != "closed",
                Thread.body.contains(f"#{number}") | Thread.title.contains(f"#{number}")
                | Thread.body.contains(f"/issues/{number}"),
            )
        )
        for pr_number, title, body in rows:
            text = (body or "")[:65536]
            if (short.search(title or "") or short.search(text) or full.search(title or "")
                    or full.search(text)):
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
