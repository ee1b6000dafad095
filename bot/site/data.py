"""What the tracker pages and their JSON twins show, assembled from the catalog and the
Thread / Analysis / Action / Repository / ContributionRules tables.

Every function returns plain dicts and lists (JSON-ready); bot/site.py renders them as HTML or
JSON, bot/site/exports.py writes them as files. Thread text never goes further than its title, and
the HTML templates escape it.

The failure finding of a thread (is it a failure report, which kind) is the one rule of
`bot.store.verdicts.shown_failure`: a person's verdict where there is one, else the analysis;
filters and counts use its SQL twin. A summary marks a verdict's finding (`failure_set_by`)
and keeps the analyzer's own beside it (`analyzer_failure`).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from sqlalchemy import Text, case, cast, exists, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from analyzers.catalog import framework_id
from analyzers.study import lands
from bot.analysis import on_analysis_thread
from bot.speaking.contribution import snapshot_rules
from bot.store.models import (
    Action,
    Analysis,
    ContributionRules,
    Deletion,
    Repository,
    Thread,
    Verdict,
)
from bot.store.threads import thread_grave
from bot.store.types import Position, beyond, format_datetime
from bot.store.verdicts import shown_columns, shown_failure

REVIEW_STATES = ("merged", "open_no_reply", "open_replied", "declined", "redirected", "lapsed",
                 "closed_by_author", "closed_other")
COMMENT_KINDS = ("failure_comment", "rule_summary")
MAX_ROWS = 2000
LIST_ROWS = 100  # threads listed per section of a page (the newest; counts are of all)


def catalog() -> Any:
    from analyzers.catalog import load_catalog

    return load_catalog()


def kind_title(key: str | None) -> str | None:
    """A failure kind's title in the catalog; an unknown key as it is."""
    failures = catalog().failures
    return failures[key].title if key in failures else key


def concern_title(key: str) -> str:
    """A review concern's title (analyzers/catalog/concerns.yaml); an unknown key as it is."""
    from analyzers.catalog import concern_kinds

    kinds = concern_kinds()
    return kinds[key].title if key in kinds else key


def concern_meaning(key: str) -> str:
    """What a review concern means, in one line (concerns.yaml); "" for an unknown key."""
    from analyzers.catalog import concern_kinds

    kinds = concern_kinds()
    return kinds[key].description if key in kinds else ""


def _like_json(column: Any, value: str) -> Any:
    """`value` is one element of a JSON list column: a text match on the serialised list
    (the same on SQLite and PostgreSQL), with LIKE wildcards escaped."""
    safe = value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return cast(column, Text).like(f'%"{safe}"%', escape="\\")


def thread_columns() -> list[Any]:
    return [Thread.repo, Thread.number, Thread.kind, Thread.title, Thread.state,
            Thread.created_at, Thread.closed_at, Analysis.is_failure_report,
            Analysis.failure_category, Analysis.is_proposal, Analysis.review_state,
            Analysis.methods, Analysis.arxiv_ids, Analysis.result,
            Verdict.id.label("verdict_id"), Verdict.is_failure_report.label("verdict_is_failure"),
            Verdict.category.label("verdict_category"), Verdict.role.label("verdict_role")]


def tracked_only(query: Any) -> Any:
    """`query` over Thread with its Analysis and Verdict (either may be missing): the threads
    that have an analysis or a person's verdict."""
    return (query.outerjoin(Analysis, Analysis.thread_id == Thread.id)
            .outerjoin(Verdict, Verdict.thread_id == Thread.id)
            .where(or_(Analysis.id.is_not(None), Verdict.id.is_not(None))))


def summary_row(r: Any) -> dict[str, Any]:
    result = r.result or {}
    failure = result.get("failure") or {}
    shown = shown_failure(r.is_failure_report, r.failure_category,
                          SimpleNamespace(is_failure_report=r.verdict_is_failure, category=r.verdict_category,
                                          role=r.verdict_role) if r.verdict_id is not None else None)
    return {
        "repo": r.repo,
        "number": r.number,
        "kind": r.kind,
        "title": r.title or "",
        "state": r.state,
        "url": thread_url(r.repo, r.number, r.kind),
        "created_at": format_datetime(r.created_at),
        "closed_at": format_datetime(r.closed_at),
        "framework": framework_id(r.repo),
        # the finding shown: a person's verdict where there is one (`failure_set_by`: their
        # role; no model confidence then), else the analyzer's
        "is_failure_report": shown["is_failure_report"],
        "failure_category": shown["category"],
        "failure_confidence": None if shown["set_by"] else failure.get("confidence"),
        "failure_set_by": shown["set_by"],
        # the analyzer's own finding, whatever a person said (None: not analysed yet)
        "analyzer_failure": None if r.result is None else {
            "is_failure_report": bool(r.is_failure_report), "category": r.failure_category,
            "confidence": failure.get("confidence")},
        "is_proposal": bool(r.is_proposal),
        "review_state": r.review_state,
        "methods": list(r.methods or []),
        "arxiv_ids": list(r.arxiv_ids or []),
    }


async def find_thread(session: AsyncSession, repo: str, number: int) -> Thread | None:
    """The stored thread `repo#number` under the name asked for, else under any other name of
    its framework's repository, the current one first (a thread delivered before a rename
    stays under the former name until a rename event moves it), else the one first stored
    under that name and number (its feed entry's id: renamed since, to a name the catalog may
    not know, or transferred to another repository and number)."""
    from bot.store.threads import get_thread

    thread = await get_thread(session, repo, number)
    for name in catalog().names_of(repo)[1:]:
        if thread is not None:
            break
        thread = await get_thread(session, name, number)
    if thread is None:
        thread = await session.scalar(select(Thread).where(
            Thread.first_repo == repo, Thread.first_number == number).order_by(Thread.id).limit(1))
    return thread


def thread_url(repo: str, number: int, kind: str) -> str:
    """Built from the stored name and number, never taken from a payload."""
    path = {"pull_request": "pull", "discussion": "discussions"}.get(kind, "issues")
    return f"https://github.com/{repo}/{path}/{int(number)}"


def _framework_repos(framework: str) -> list[str]:
    fw = catalog().frameworks.get(framework)
    return [r.lower() for r in fw.repos] if fw else []


def thread_filters(query: Any, *, proposals: bool | None = None, failures: bool | None = None,
                    framework: str | None = None, state: str | None = None,
                    paper: str | None = None, method: str | None = None,
                    category: str | None = None) -> Any:
    """`query` (over Thread joined with Analysis and Verdict, `tracked_only`) narrowed to the
    threads the filters name; `failures` and `category` by the failure finding shown."""
    shown_is_failure, shown_category = shown_columns()
    if proposals is not None:
        query = query.where(Analysis.is_proposal.is_(True) if proposals
                            else func.coalesce(Analysis.is_proposal, False).is_(False))
    if failures is not None:
        query = query.where(shown_is_failure.is_(True) if failures
                            else func.coalesce(shown_is_failure, False).is_(False))
    if framework:
        query = query.where(func.lower(Thread.repo).in_(_framework_repos(framework) or ["-"]))
    if state:
        query = query.where(Analysis.review_state == state)
    if category:
        query = query.where(shown_category == category)
    if method:
        query = query.where(_like_json(Analysis.methods, method))
    if paper:
        # An arXiv id, or a catalog method id (its papers count too).
        terms = [_like_json(Analysis.arxiv_ids, paper), _like_json(Analysis.methods, paper)]
        for m in catalog().method_for_arxiv(paper):
            terms.append(_like_json(Analysis.methods, m.id))
        query = query.where(or_(*terms))
    return query


async def thread_rows(session: AsyncSession, *, limit: int = MAX_ROWS, offset: int = 0,
                      **filters: Any) -> list[dict[str, Any]]:
    """Summaries of the threads `filters` (see `thread_filters`) name, newest first (ties by
    id, threads of no known date last), the `limit` after the first `offset`."""
    return (await thread_page(session, limit=limit, offset=offset, **filters)).rows


@dataclass(frozen=True)
class ThreadPage:
    """A page of a thread list: its summaries, and where the pages beside it start (keyset
    paging): `newer`, the position of its first row when newer rows come before it (the
    previous page ends there), `older`, that of its last row when more follow (the next
    page starts after it); None when there is no such page."""

    rows: list[dict[str, Any]]
    newer: Position | None
    older: Position | None


async def thread_page(session: AsyncSession, *, limit: int, offset: int = 0,
                      after: Position | None = None, before: Position | None = None,
                      **filters: Any) -> ThreadPage:
    """`thread_rows`, the `limit` after the first `offset`, after the thread at `after` or
    before the thread at `before` (keyset paging: the date index of migration 0020 is read
    from there, where an offset reads and joins every row before it: 72 ms for 50 rows at
    offset 9,900 of 20,000 threads on PostgreSQL). A page `before` a thread near the top,
    with fewer than `limit` rows before it, is the first page (the pages keep their size)."""
    query = thread_filters(tracked_only(
        select(*thread_columns(), Thread.id.label("thread_id")).select_from(Thread)), **filters)
    # A thread of unknown date last, on both databases (PostgreSQL sorted NULLs first in a
    # descending order, SQLite last).
    newest_first = (Thread.created_at.desc().nulls_last(), Thread.id.desc())
    # newest_first read backwards, the date index's order backwards (0020: created_at DESC
    # NULLS LAST, id DESC) to the NULLS: PostgreSQL's plain ASC is NULLS LAST, which that
    # index does not give, and near the end of a long list it read, joined and sorted every
    # newer row (site71: 31-63 -> 2 ms). The rows read are dated, so the order is the same.
    oldest_last = (Thread.created_at.asc().nulls_first(), Thread.id.asc())
    dated_rows = query.where(Thread.created_at.is_not(None))
    undated = query.where(Thread.created_at.is_(None))
    wanted = limit + 1  # one more than shown: whether a page beyond this one exists
    if before is not None:
        # Backwards from the cursor, by the same index, then turned: the undated ones first
        # (they end the order), then the dated from the oldest.
        if before[0] is None:
            rows = (await session.execute(undated.where(Thread.id > before[1])
                                          .order_by(Thread.id).limit(wanted))).all()
            if len(rows) < wanted:
                rows += (await session.execute(dated_rows.order_by(*oldest_last)
                                               .limit(wanted - len(rows)))).all()
        else:
            rows = (await session.execute(
                query.where(beyond(Thread.created_at, Thread.id, before, descending=False))
                .order_by(*oldest_last).limit(wanted))).all()
        if len(rows) < wanted:
            return await thread_page(session, limit=limit, **filters)
        rows = rows[:limit][::-1]
        return ThreadPage([summary_row(r) for r in rows], _position(rows[0]),
                          _position(rows[-1]))
    undated = undated.order_by(Thread.id.desc())
    if after is None:
        rows = (await session.execute(query.order_by(*newest_first).offset(offset)
                                      .limit(wanted))).all()
    elif after[0] is None:
        rows = (await session.execute(undated.where(Thread.id < after[1]).limit(wanted))).all()
    else:
        # The dated ones by the index, then (on the last pages only) those of no date: one
        # statement with `OR created_at IS NULL` was read by PostgreSQL as a filter on the
        # whole index (8 ms at 20,000 threads, against 0.3 ms for the seek alone).
        dated = query.where(beyond(Thread.created_at, Thread.id, after, descending=True))
        rows = (await session.execute(dated.order_by(*newest_first).limit(wanted))).all()
        if len(rows) < wanted:
            rows += (await session.execute(undated.limit(wanted - len(rows)))).all()
    more = len(rows) > limit
    rows = rows[:limit]
    return ThreadPage([summary_row(r) for r in rows],
                      _position(rows[0]) if rows and (offset or after) else None,
                      _position(rows[-1]) if more else None)


def _position(row: Any) -> Position:
    return row.created_at, row.thread_id


async def newest_by_state(session: AsyncSession, *, limit: int, **filters: Any
                          ) -> dict[str | None, list[dict[str, Any]]]:
    """`thread_rows` of each review state at once: per state, the `limit` newest (ties by id,
    threads of no known date last) of the threads `filters` names. One statement ranking
    them per state (a window), not one per state: each of those, asked for a rare framework
    and state, walked the threads' date index (migration 0020) through most of the table."""
    order = (Thread.created_at.desc().nulls_last(), Thread.id.desc())
    rank = func.row_number().over(partition_by=Analysis.review_state, order_by=order).label("rank")
    ranked = thread_filters(tracked_only(select(*thread_columns(), rank).select_from(Thread)),
                             **filters).subquery()
    rows = await session.execute(select(ranked).where(ranked.c.rank <= limit)
                                 .order_by(ranked.c.review_state, ranked.c.rank))
    out: dict[str | None, list[dict[str, Any]]] = {}
    for r in rows.all():
        out.setdefault(r.review_state, []).append(summary_row(r))
    return out


def oldest_first() -> list[Any]:
    """The export's order, the same on SQLite and PostgreSQL: oldest first, threads of no
    known date last (SQLite put them first and PostgreSQL last), ties in the order stored."""
    return [case((Thread.created_at.is_(None), 1), else_=0), Thread.created_at, Thread.id]


async def tracked_ids(session: AsyncSession, *, limit: int | None = None, offset: int = 0
                      ) -> list[int]:
    """The ids of the tracked threads (`tracked_only`), `oldest_first`: the `limit` after `offset`."""
    query = tracked_only(select(Thread.id).select_from(Thread)).order_by(*oldest_first())
    return list(await session.scalars(query.offset(offset).limit(limit)))


async def rows_by_id(session: AsyncSession, ids: list[int]) -> list[dict[str, Any]]:
    """Summaries of the tracked threads `ids` names, in that order; a thread deleted (or no
    longer tracked) since the ids were read is left out."""
    query = tracked_only(select(Thread.id.label("thread_id"), *thread_columns()).select_from(Thread))
    found = {r.thread_id: summary_row(r) for r in (await session.execute(query.where(Thread.id.in_(ids)))).all()}
    return [found[i] for i in ids if i in found]


async def count_threads(session: AsyncSession, **filters: Any) -> int:
    """How many threads `thread_rows` with the same filters would list without a limit."""
    if filters.get("proposals") and not (filters.get("failures") is not None
                                          or filters.get("category")):
        # A proposal has an analysis (so it is tracked) and no filter here reads a verdict:
        # the analyses alone, by their is_proposal index, joined to the threads only for a
        # framework's repositories. (The outer joins of every thread with its analysis and
        # verdict took 46 ms for /proposals' total at 20,000 threads on PostgreSQL.)
        query = select(func.count()).select_from(Analysis)
        if filters.get("framework"):
            query = query.join(Thread, Thread.id == Analysis.thread_id)
        query = thread_filters(query, **filters)
    else:
        query = thread_filters(tracked_only(select(func.count()).select_from(Thread)), **filters)
    return int(await session.scalar(query) or 0)


async def proposal_counts(session: AsyncSession, framework: str | None = None
                          ) -> dict[str, dict[str, int]]:
    """framework id -> review state -> number of tracked proposals; of one `framework`'s
    repositories alone when given (a framework's page: read by the repository index, it
    joins a ninth of the threads, not all of them: 55 -> 30 ms at 20,000 threads on
    PostgreSQL under load, site66)."""
    query = (select(Thread.repo, Analysis.review_state, func.count())
             .join(Analysis, Analysis.thread_id == Thread.id)
             .where(Analysis.is_proposal.is_(True))
             .group_by(Thread.repo, Analysis.review_state))
    if framework is not None:
        query = query.where(func.lower(Thread.repo).in_(_framework_repos(framework) or ["-"]))
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for repo, state, n in (await session.execute(query)).all():
        counts[framework_id(repo) or "other"][state or "unknown"] += int(n)
    return {fid: dict(c) for fid, c in counts.items()}


async def reception(session: AsyncSession, repos: list[str] | None = None) -> list[dict[str, Any]]:
    """Per installed repository: the app's comments and how they were received."""
    # Whether a thread of it is stored: its install preview has something to show (the
    # preview answers 404 without one), so the pages link it. One probe of the threads'
    # lower(repo) index per repository, in the same statement.
    threads_stored = exists().where(func.lower(Thread.repo) == func.lower(Repository.full_name))
    query = select(Repository, threads_stored).where(
        Repository.installation_id.is_not(None),
        Repository.private.is_(False))  # never named publicly
    if repos is not None:
        query = query.where(func.lower(Repository.full_name).in_([r.lower() for r in repos] or ["-"]))
    found = (await session.execute(query.order_by(Repository.full_name))).all()
    repositories = [r for r, _ in found]
    with_threads = {r.full_name for r, stored in found if stored}
    if not repositories:
        return []
    from bot.store.installations import silenced_installations

    silenced = await silenced_installations(session)  # suspended (or uninstalled): no comment
    rows = await session.execute(
        select(func.lower(Action.repo), func.count(), func.coalesce(func.sum(Action.reactions_up), 0),
               func.coalesce(func.sum(Action.reactions_down), 0))
        .where(Action.status == "posted", Action.kind.in_(COMMENT_KINDS))
        .group_by(func.lower(Action.repo))
    )
    stats = {repo: (int(n), int(up), int(down), 0) for repo, n, up, down in rows.all()}
    # Hidden or deleted as the pause rule counts them (the one definition,
    # bot.speaking.reception.hidden_by_people): not the app's own minimising on a request, not
    # a maintainer tidying a thread (resolved, outdated, duplicate). Only the few comments
    # hidden or deleted at all are read.
    from bot.speaking.preview import CONFIG_PROBLEM
    from bot.speaking.reception import hidden_by_people

    candidates = await session.scalars(
        select(Action).where(Action.status == "posted", Action.kind.in_(COMMENT_KINDS),
                             or_(Action.is_minimized.is_(True), Action.comment_deleted.is_(True))))
    for action in candidates:
        if hidden_by_people(action):
            n, up, down, h = stats.get(action.repo.lower(), (0, 0, 0, 0))
            stats[action.repo.lower()] = (n, up, down, h + 1)
    out = []
    for r in repositories:
        n, up, down, h = stats.get(r.full_name.lower(), (0, 0, 0, 0))
        out.append({
            "repo": r.full_name,
            "framework": r.framework or framework_id(r.full_name),
            "comments_posted": n,
            "thumbs_up": up,
            "thumbs_down": down,
            "hidden_or_deleted": h,
            "paused": bool(r.comments_paused),
            # its owner suspended the installation: GitHub refuses the app's tokens there
            "suspended": r.installation_id in silenced,
            "paused_reason": r.paused_reason,
            # The last lift of a pause: "@login" (/rltracker resume) or "operator" (the CLI).
            "resumed_by": r.resumed_by,
            "resumed_at": format_datetime(r.resumed_at),
            "threads_stored": r.full_name in with_threads,
            # its .github/rltracker.yml could not be used (read by the nightly `settings`
            # step, a recheck or a comment: the app gets no push events), and why
            "settings_problem": f"{CONFIG_PROBLEM}: {r.config_error}" if r.config_error else None,
        })
    return out


async def rules_of(session: AsyncSession, repo: str) -> dict[str, Any] | None:
    """The stored summary of `repo`; for a framework with none stored yet, the snapshot in
    ../shared when this checkout has it (development), else None."""
    row = await session.scalar(
        select(ContributionRules).where(func.lower(ContributionRules.repo) == repo.lower())
    )
    if row is None:
        framework = framework_id(repo)
        if framework is None:
            return None
        return await on_analysis_thread(snapshot_rules, framework)
    summary = dict(row.summary or {})
    summary["fetched_at"] = format_datetime(row.fetched_at)
    return summary


# --- catalog views ---------------------------------------------------------------------------


def option_dict(o: Any) -> dict[str, Any]:
    return {"name": o.name, "set_by": o.set_by, "keys": list(o.keys), "value_hint": o.value_hint,
            "file": o.file, "status": o.status, "default": o.default, "commit": o.commit,
            "note": o.note}


def method_dict(m: Any, frameworks: list[str]) -> dict[str, Any]:
    return {
        "id": m.id,
        "name": m.name,
        "aliases": list(m.aliases),
        "papers": [{"arxiv_id": p.arxiv_id, "title": p.title, "source": p.source,
                    "url": p.url or (f"https://arxiv.org/abs/{p.arxiv_id}" if p.arxiv_id else None)}
                   for p in m.papers],
        "first_public": m.first_public,
        "failures": list(m.failures),
        "cautions": [{"text": c.text, "source": c.source} for c in m.cautions],
        "frameworks": {fid: [option_dict(o) for o in m.options.get(fid, [])] for fid in frameworks},
    }


def failure_dict(f: Any) -> dict[str, Any]:
    return {"key": f.key, "title": f.title, "title_zh": f.title_zh,
            "description": f.description, "description_zh": f.description_zh}


def framework_dict(fw: Any) -> dict[str, Any]:
    return {"id": fw.id, "name": fw.name, "repo": fw.repo, "former_repos": list(fw.former_repos),
            "default_branch": fw.default_branch, "verified_commit": fw.verified_commit}


async def frameworks_data(session: AsyncSession) -> list[dict[str, Any]]:
    """The frameworks with their proposals counted by review state (the front page's table,
    /api/frameworks)."""
    cat = catalog()
    counts = await proposal_counts(session)
    return [dict(framework_dict(fw), proposals=counts.get(fid, {}),
                 proposals_total=sum(counts.get(fid, {}).values()),
                 methods=sum(1 for m in cat.methods.values() if m.has(fid)))
            for fid, fw in cat.frameworks.items()]


async def index_data(session: AsyncSession) -> dict[str, Any]:
    cat = catalog()
    return {
        "frameworks": await frameworks_data(session),
        "states": list(REVIEW_STATES),
        "recent_failures": await thread_rows(session, failures=True, limit=15),
        "methods": [{"id": m.id, "name": m.name} for m in cat.methods.values()],
        "failures": [failure_dict(f) for f in cat.failures.values()],
    }


async def method_data(session: AsyncSession, method_id: str, *, limit: int = LIST_ROWS,
                      offset: int = 0, after: Position | None = None,
                      before: Position | None = None
                      ) -> tuple[dict[str, Any], ThreadPage] | None:
    """A method, its options and the threads naming it newest first: the `limit` after the
    first `offset`, or after or before a thread (`thread_page`: the page pages through them
    all); and that page of threads, whose positions the page's links carry."""
    cat = catalog()
    m = cat.methods.get(method_id)
    if m is None:
        return None
    data = method_dict(m, list(cat.frameworks))
    data["failure_titles"] = {k: cat.failures[k].title for k in m.failures if k in cat.failures}
    page = await thread_page(session, method=m.id, limit=limit, offset=offset, after=after,
                             before=before)
    data["threads"] = page.rows
    data["threads_total"] = await count_threads(session, method=m.id)
    return data, page


async def failure_data(session: AsyncSession, key: str, *, limit: int = 30, offset: int = 0,
                       after: Position | None = None, before: Position | None = None
                       ) -> tuple[dict[str, Any], ThreadPage] | None:
    """A failure kind, the methods that address it, and its reports newest first: the
    `limit` after the first `offset`, or after or before a thread (`thread_page`: the page
    pages through them all); and that page of reports, whose positions the page's links
    carry."""
    cat = catalog()
    f = cat.failures.get(key)
    if f is None:
        return None
    frameworks = list(cat.frameworks)
    page = await thread_page(session, failures=True, category=key, limit=limit, offset=offset,
                             after=after, before=before)
    return {
        "failure": failure_dict(f),
        "methods": [method_dict(m, frameworks) for m in cat.methods_for_failure(key)],
        "recent_reports": page.rows,
        "reports_total": await count_threads(session, failures=True, category=key),
    }, page


async def framework_data(session: AsyncSession, name: str) -> dict[str, Any] | None:
    cat = catalog()
    fw = cat.frameworks.get(name)
    if fw is None:
        return None
    # The counts are of every tracked proposal; the lists show the newest LIST_ROWS of each
    # state (the page links to /proposals for the rest).
    counts = (await proposal_counts(session, name)).get(name, {})
    newest = await newest_by_state(session, proposals=True, framework=name, limit=LIST_ROWS)
    by_state = {state: newest.get(state, []) for state in REVIEW_STATES if counts.get(state)}
    installed = await reception(session)
    return {
        "framework": framework_dict(fw),
        "rules": await rules_of(session, fw.repo),
        "proposals_by_state": by_state,
        "proposal_counts": {s: counts[s] for s in [*REVIEW_STATES, "unknown"] if counts.get(s)},
        # `landed`: an option that is the method, not only a near relative (AReaL's action
        # clamp for TIS): the study counts no landing there, so the page says so (study82)
        "methods_present": [
            {"id": m.id, "name": m.name, "options": [option_dict(o) for o in m.options[name]],
             "landed": lands(m, name)}
            for m in cat.methods.values() if m.has(name)
        ],
        "methods_missing": [
            {"id": m.id, "name": m.name, "elsewhere": [f for f in cat.frameworks if m.has(f)]}
            for m in cat.methods.values() if not m.has(name)
        ],
        "reception": [r for r in installed if r["framework"] == name],
    }


async def gone_from_github(session: AsyncSession, repo: str, number: int) -> dict[str, Any] | None:
    """Where `repo`#`number` (under the name asked for or another name of its framework's
    repository) was deleted on GitHub or transferred away, as the Deletion rows note it: the
    name, the number, the family, when the tracker learnt it and GitHub's address (which
    forwards a transferred thread). None when nothing was noted, or when the repository is
    marked private (nothing is said of one)."""
    names = catalog().names_of(repo)
    keys = {thread_grave(name, number, family): (name, family)
            for name in names for family in ("issue", "discussion")}
    rows = {key: when for key, when in (await session.execute(
        select(Deletion.key, Deletion.deleted_at).where(Deletion.key.in_(sorted(keys))))).all()}
    found = next((key for key in keys if key in rows), None)
    if found is None:
        return None
    name, family = keys[found]
    private = await session.scalar(select(Repository.private).where(
        func.lower(Repository.full_name) == name.lower()))
    if private:
        return None
    name = catalog().listed_name(name) or name  # the catalog's spelling of the name
    return {"repo": name, "number": number, "discussion": family == "discussion",
            "noticed_at": format_datetime(rows[found]),
            "url": thread_url(name, number, family)}
