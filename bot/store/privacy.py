"""Private repositories: nothing of them is kept (review54).

The tracker publishes the public record of open-source frameworks. A repository GitHub calls
private (or internal, an enterprise's) is no public record: nothing of it is stored, so no
page, API answer, export or report shows it. Its Repository row stays with `private` true
and nothing else of use, so a delivery queued before the repository was made private (its
payload still says public) stores nothing either; `repository.publicized`, or the sync
finding it public again (GraphQL `isPrivate` false), clears the mark.

`forget` is written against a plain connection (a sync Session or Connection), so migration
0014 runs the same code as the webhook handler and the sync (through `run_sync`).

A thread write and `forget` exclude each other (review59): `forget` marks the repository's row
first, and a thread write reads the mark again inside its transaction through
`lock_repositories`, which waits for a `forget` in progress. Before, a delivery checked just
before a concurrent `privatized` committed stored its thread of the now-private repository
again. On PostgreSQL the write holds a shared row lock (FOR SHARE: writes of one repository do
not wait for each other) and `forget`'s UPDATE an exclusive one; on SQLite both take the
database's write lock, held to their commit.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Text, and_, bindparam, case, cast, delete, false, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm.attributes import set_committed_value

from bot.store.db import dialect_insert
from bot.store.models import (
    Action,
    Analysis,
    AnalysisFailure,
    Comment,
    ContributionRules,
    Delivery,
    JobRun,
    Report,
    Repository,
    SyncCursor,
    Thread,
    Verdict,
    report_summary,
)
from bot.store.types import parse_datetime


def payload_is_private(payload: Mapping[str, Any] | None) -> bool:
    """Whether a delivery's `repository` is not public: `private` true, or a `visibility`
    other than public (internal repositories are visible to an enterprise's members only).
    A payload that says neither (short test payloads, events without a repository) is not."""
    repo = payload.get("repository") if isinstance(payload, Mapping) else None
    return isinstance(repo, Mapping) and listed_private(repo)


def listed_private(repo: Mapping[str, Any]) -> bool:
    """Whether GitHub's object of a repository (a payload's, a listing's) says it is not
    public: `private` true, or a `visibility` of private or internal."""
    visibility = repo.get("visibility")
    return repo.get("private") is True or visibility in ("private", "internal")


def _repository_of(payload: Mapping[str, Any]) -> tuple[str | None, int | None]:
    repo = payload.get("repository")
    if not isinstance(repo, Mapping):
        return None, None
    name = repo.get("full_name")
    rid = repo.get("id")
    return (str(name) if isinstance(name, str) else None,
            rid if isinstance(rid, int) and not isinstance(rid, bool) else None)


async def private_deliveries(session: AsyncSession,
                             payloads: Iterable[Mapping[str, Any]]) -> list[bool]:
    """Per payload: whether it is about a private repository, as it says or as the stored
    row is marked (a delivery sent before the repository was made private), in one query."""
    payloads = list(payloads)
    out = [payload_is_private(p) for p in payloads]
    asked = [(k, *_repository_of(p)) for k, p in enumerate(payloads) if not out[k]]
    names = {n.lower() for _, n, _ in asked if n}
    ids = {i for _, _, i in asked if i is not None}
    if not names and not ids:
        return out
    conditions = []
    if names:
        conditions.append(func.lower(Repository.full_name).in_(sorted(names)))
    if ids:
        conditions.append(Repository.github_id.in_(sorted(ids)))
    rows = (await session.execute(select(Repository.full_name, Repository.github_id).where(
        Repository.private.is_(True), or_(*conditions)))).all()
    marked_names = {str(n).lower() for n, _ in rows}
    marked_ids = {i for _, i in rows if i is not None}
    for k, name, rid in asked:
        out[k] = (name is not None and name.lower() in marked_names) or (
            rid is not None and rid in marked_ids)
    return out


async def unmarked_said_private(session: AsyncSession, payloads: Iterable[Mapping[str, Any]]
                                ) -> list[tuple[str, int | None, Mapping[str, Any]]]:
    """The stored repositories not marked private that a payload calls private (its
    `privatized` lost, or not handled yet): (stored name, GitHub id, the payload), one each.
    No query unless a payload calls its repository private."""
    said = [(p, *_repository_of(p)) for p in payloads if payload_is_private(p)]
    names = {n.lower() for _, n, _ in said if n}
    ids = {i for _, _, i in said if i is not None}
    if not names and not ids:
        return []
    rows = (await session.execute(select(Repository.full_name, Repository.github_id).where(
        Repository.private.is_(False), or_(
            func.lower(Repository.full_name).in_(sorted(names)),
            Repository.github_id.in_(sorted(ids)) if ids else false())))).all()
    out: list[tuple[str, int | None, Mapping[str, Any]]] = []
    for full_name, github_id in rows:
        payload = next(p for p, n, i in said if (n or "").lower() == full_name.lower()
                       or (i is not None and i == github_id))
        out.append((full_name, github_id, payload))
    return out


async def delivery_is_private(session: AsyncSession, payload: Mapping[str, Any]) -> bool:
    return (await private_deliveries(session, [payload]))[0]


async def stored_private(session: AsyncSession, name: str) -> bool:
    """Whether the stored row of the repository `name` is marked private."""
    return bool(await session.scalar(select(Repository.private).where(
        func.lower(Repository.full_name) == name.lower())))


async def lock_repositories(session: AsyncSession, names: Iterable[str]) -> set[str]:
    """Of the repositories `names` (stored names), the lower-case names of those whose row is
    marked private, read under a lock held to the end of the session's transaction that a
    concurrent `forget` of one of them waits for, and that waits for a `forget` in progress
    (which then has marked the row): a thread write that takes it first and writes only the
    repositories not returned cannot store a thread `forget` misses. PostgreSQL: the rows FOR
    SHARE, in id order. SQLite: a write that changes nothing, which takes the database's
    write lock (a SELECT alone takes none, and `forget` could commit between it and the
    thread's insert)."""
    lnames = sorted({n.lower() for n in names})
    if not lnames:
        return set()
    repos = Repository.__table__
    named = func.lower(repos.c.full_name).in_(lnames)
    query = select(func.lower(repos.c.full_name)).where(named, repos.c.private.is_(True))
    if session.get_bind().dialect.name == "sqlite":
        await session.execute(update(repos).where(named).values(
            private=repos.c.private, updated_at=repos.c.updated_at))
    else:
        query = (select(func.lower(repos.c.full_name), repos.c.private).where(named)
                 .order_by(repos.c.id).with_for_update(read=True))
        return {n for n, marked in (await session.execute(query)).all() if marked}
    return set((await session.execute(query)).scalars())


# ---- forgetting ------------------------------------------------------------------------------
def _dialect_name(conn: Any) -> str:
    dialect = getattr(conn, "dialect", None)  # a Connection
    return str((dialect or conn.get_bind().dialect).name)  # a Session


def _mark_private(conn: Any, name: str, github_id: int | None) -> None:
    """The repository's row marked private (created when there is none), first: the lock it
    takes keeps thread writes of the repository (`lock_repositories`) out until the caller's
    transaction ends. A row another transaction is inserting (a delivery's write) is waited
    for (ON CONFLICT DO NOTHING) and then marked."""
    repos = Repository.__table__
    match = or_(func.lower(repos.c.full_name) == name.lower(),
                *([repos.c.github_id == github_id] if github_id is not None else []))
    if conn.execute(update(repos).where(match).values(private=True, **_UNKEPT)).rowcount:
        return
    conn.execute(dialect_insert(_dialect_name(conn))(repos).values(
        full_name=name, github_id=github_id, private=True, comments_paused=False)
        .on_conflict_do_nothing())
    conn.execute(update(repos).where(match).values(private=True, **_UNKEPT))


# What a marked row does not keep (privacy62): what was read from the repository (its
# `.github/rltracker.yml` parsed, or the error quoting it; read again once it is public), the
# reason the reception of the app's comments there gave for a pause (the pause itself stays:
# a maintainer's or the reception check's word on the app's comments there), who lifted one.
PAUSED_PRIVATE = "paused before the repository was made private"
_UNKEPT: dict[str, Any] = {
    "config": None, "config_error": None, "config_fetched_at": None,
    "paused_reason": case((Repository.__table__.c.comments_paused.is_(True), PAUSED_PRIVATE),
                          else_=None),
    "resumed_by": None, "resumed_at": None,
}


def forget(conn: Any, name: str, github_id: int | None = None, *,
           by_repository_id: bool = True) -> None:
    """Delete everything stored of the repository `name` that a page, the API, an export or
    the report could show (threads with their comments, analyses and verdicts; the app's
    actions there; sync cursors, so a repository made public again is backfilled; its
    contribution rules; its threads in stored reports, in the reports posted (their claims'
    text, flagged to be edited on GitHub) and in the job runs' counts, the study's nightly
    records among them, and in their free-text errors (`PRIVATE_PLACEHOLDER` in its place); its verdicts in the stored and posted
    reports' agreement figures (`_take_out_verdicts`); its threads' re-analysis failures) and mark its row private, creating
    the row when there is none (the row keeps no config, pause reason or resumer: _UNKEPT). `conn`: a sync Session or Connection. `by_repository_id`:
    its deliveries are found by `deliveries.repo_id` too (False only in migration 0014, which
    runs before the column exists; 0017 empties what it left)."""
    _mark_private(conn, name, github_id)
    names = {name.lower(): name}
    if github_id is not None:  # a rename not followed yet: its rows are under the former name
        repos = Repository.__table__
        for former in conn.execute(select(repos.c.full_name).where(
                repos.c.github_id == github_id)).scalars():
            names.setdefault(former.lower(), former)
    threads = Thread.__table__
    # The repository's threads locked first, in id order, as an analysis and a webhook batch
    # lock theirs (PostgreSQL; SQLite renders nothing): deleting an analysis row and then
    # waiting for its thread, held by an analysis waiting to store into that row, deadlocked.
    conn.execute(select(threads.c.id).where(func.lower(threads.c.repo).in_(sorted(names)))
                 .order_by(threads.c.id).with_for_update())
    for lname, each in sorted(names.items()):
        ids = select(threads.c.id).where(func.lower(threads.c.repo) == lname)
        _take_out_verdicts(conn, ids)  # from the stored reports' figures, before they go
        for model in (Comment, Analysis, AnalysisFailure, Verdict):  # no reliance on ON DELETE CASCADE
            table = model.__table__
            conn.execute(delete(table).where(table.c.thread_id.in_(ids)))
        conn.execute(delete(threads).where(func.lower(threads.c.repo) == lname))
        for model in (Action, SyncCursor, ContributionRules):
            table = model.__table__
            conn.execute(delete(table).where(func.lower(table.c.repo) == lname))
        _scrub_reports(conn, each)
        _scrub_job_runs(conn, each)
        _scrub_posted_reports(conn, each)
        _empty_deliveries_of(conn, each, github_id, by_repository_id=by_repository_id)


def mark_public(conn: Any, name: str, github_id: int | None = None) -> None:
    repos = Repository.__table__
    conn.execute(update(repos).where(or_(
        func.lower(repos.c.full_name) == name.lower(),
        *([repos.c.github_id == github_id] if github_id is not None else []))).values(private=False))


async def forget_repository(session: AsyncSession, name: str, github_id: int | None = None) -> None:
    await session.flush()
    await session.run_sync(lambda s: forget(s, name, github_id))
    _held(session, name, github_id, private=True)
    if github_id is not None:
        for obj in list(session.identity_map.values()):
            if isinstance(obj, Repository) and obj.github_id == github_id:
                _held(session, obj.full_name, github_id, private=True)


async def publicize_repository(session: AsyncSession, name: str, github_id: int | None = None) -> None:
    await session.flush()
    await session.run_sync(lambda s: mark_public(s, name, github_id))
    _held(session, name, github_id, private=False)


def _held(session: AsyncSession, name: str, github_id: int | None, *, private: bool) -> None:
    """The session's objects as the statements left the rows (no reload: an async session
    cannot load an expired attribute on access): the repository's row marked, its deleted
    threads and actions dropped from the session."""
    lname = name.lower()
    for obj in list(session.identity_map.values()):
        if isinstance(obj, Repository) and (obj.full_name.lower() == lname or (
                github_id is not None and obj.github_id == github_id)):
            obj.private = private
            if private:  # as _mark_private left it (set_committed_value: nothing to flush)
                for key in ("config", "config_error", "config_fetched_at", "resumed_by",
                            "resumed_at"):
                    set_committed_value(obj, key, None)
                paused = obj.__dict__.get("comments_paused")  # (no load: an async session)
                set_committed_value(obj, "paused_reason", PAUSED_PRIVATE if paused else None)
        elif private and isinstance(obj, Thread | Action) and obj.repo.lower() == lname:
            session.expunge(obj)


def _refers(value: Any, lname: str) -> bool:
    """Whether a report's entry (a thread key `owner/name#N`, or an object naming one or the
    repository) is about the repository `lname`."""
    if isinstance(value, str):  # (a sync's failed stream: "owner/name:kind")
        return value.lower() == lname or value.lower().startswith((lname + "#", lname + ":"))
    if isinstance(value, Mapping):
        return (str(value.get("repo") or "").lower() == lname
                or any(_refers(value.get(k), lname) for k in ("key", "pull_request", "thread")
                       if isinstance(value.get(k), str)))
    return False


def _scrub(value: Any, lname: str) -> Any:
    if isinstance(value, Mapping):
        return {k: _scrub(v, lname) for k, v in value.items()
                if not _refers(k, lname) and not _refers(v, lname)}
    if isinstance(value, list):
        return [_scrub(v, lname) for v in value if not _refers(v, lname)]
    return value


def _scrub_markdown(text: str, name: str) -> str:
    """A report's Markdown without the repository: its thread links (with the days a waiting
    list gives each, "15.5 d": before, the fraction stayed behind), and every line naming it.
    A framework's section whose heading names it (`### verl (`owner/name`)`) goes whole, to
    the next heading: before, the heading alone went and the section's lines read as the
    previous framework's."""
    link = re.compile(r"\[`" + re.escape(name) + r"#\d+`\]\([^)\s]*\)(?: \d+(?:\.\d+)? d)?"
                      r"(?:; |, )?", re.IGNORECASE)
    text = link.sub("", text)
    lname = name.lower()
    out: list[str] = []
    dropping = False
    for line in text.splitlines(keepends=True):
        if line.startswith(("#", "<sub>", "<!--")):
            dropping = line.startswith("### ") and f"(`{lname}`)" in line.lower()
        if not dropping and lname not in line.lower():
            out.append(line)
    return "".join(out)


def _scrub_job_runs(conn: Any, name: str) -> None:
    """The job runs' counts without the repository (privacy62): the study's nightly records
    (JobRun "study", bot.site.study: a detected landing names the merged pull request behind
    it, and the nightly report lists the landings the latest record first saw; a landing
    whose first pull request is the repository's leaves the record, and the next nightly
    step finds it again from another repository's, if there is one), the nightly run's
    (threads synced per repository, failed streams "owner/name:kind"), an install preview's
    (each repository's config read, a YAML error quoting the file)."""
    runs = JobRun.__table__
    lname = name.lower()
    named = _named_in_text(name)
    for rid, counts, error in conn.execute(select(runs.c.id, runs.c.counts, runs.c.error).where(
            or_(and_(runs.c.counts.is_not(None), _names(cast(runs.c.counts, Text), lname)),
                _names(runs.c.error, lname)))).all():
        values: dict[str, Any] = {}
        if counts is not None and lname in json.dumps(counts).lower():
            values["counts"] = _scrub_text(_scrub(counts, lname), named)
        if error and named.search(error):  # a run's free text (edges62): "sync of owner/name, ..."
            values["error"] = named.sub(PRIVATE_PLACEHOLDER, error)
        if values:
            conn.execute(update(runs).where(runs.c.id == rid).values(**values))


# What stands for a private repository, or one of its threads, in free text that named it (a
# job run's error: "GitHub refused the sync of (a private repository), a/b").
PRIVATE_PLACEHOLDER = "(a private repository)"


def _named_in_text(name: str) -> re.Pattern[str]:
    """The repository `name` (any case) or a thread of it (`name#N`) in free text, as a whole
    name: not the start of a longer one (`owner/name-two`, `owner/name.js`); a full stop
    after it ends a sentence."""
    return re.compile(r"(?<![A-Za-z0-9_.-])" + re.escape(name)
                      + r"(?:#[0-9]+)?(?![A-Za-z0-9_-]|\.[A-Za-z0-9_-])", re.IGNORECASE)


def _scrub_text(value: Any, named: re.Pattern[str]) -> Any:
    """`value` (a job run's counts) with every string naming the repository rewritten so."""
    if isinstance(value, str):
        return named.sub(PRIVATE_PLACEHOLDER, value)
    if isinstance(value, Mapping):
        return {k: _scrub_text(v, named) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub_text(v, named) for v in value]
    return value


REDACT = "redact"  # a posted report's claim (Action details): edit it on GitHub (bot.site.report)


def _scrub_posted_reports(conn: Any, name: str) -> None:
    """The nightly reports posted on GitHub that name the repository (their claims' `body`,
    the text posted) keep the text without it, flagged to be edited so on GitHub
    (`redact_posted_reports`, the next report run: privacy62). Before, the comment kept
    naming the repository's threads."""
    actions = Action.__table__
    lname = name.lower()
    for aid, body, details in conn.execute(select(
            actions.c.id, actions.c.body, actions.c.details).where(
            actions.c.kind == "report", actions.c.comment_id.is_not(None),
            func.lower(actions.c.body).contains(lname, autoescape=True))).all():
        conn.execute(update(actions).where(actions.c.id == aid).values(
            body=_scrub_markdown(body or "", name), details={**(details or {}), REDACT: True}))


_KEY = re.compile(r"([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)#\d+")


def repositories_named(value: Any) -> set[str]:
    """The repositories a derived record (a report's data, a study record) names: by a thread
    key `owner/name#N` anywhere in it, or by a `repo` field."""
    out: set[str] = set()
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            match = _KEY.fullmatch(item)
            if match:
                out.add(match.group(1))
        elif isinstance(item, Mapping):
            repo = item.get("repo")
            if isinstance(repo, str) and "/" in repo:
                out.add(repo)
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return out


async def without_private(session: AsyncSession, value: Any) -> tuple[Any, bool]:
    """A derived record about to be stored (a report, a study record) without what it names
    of the repositories marked private, read under `lock_repositories`: a `forget` that
    marked one after the record was computed (from threads read before it) and scrubbed the
    stored records before this one was written does not leave it naming them; one that has
    not marked it yet waits for this transaction, then scrubs what it stored. Returns the
    record and whether something was taken out."""
    marked = await lock_repositories(session, repositories_named(value))
    for lname in sorted(marked):
        value = _scrub(value, lname)
    return (recounted(value) if marked else value), bool(marked)


async def marked_private(session: AsyncSession, names: Iterable[str]) -> set[str]:
    """Of `names`, the lower-case names of the repositories whose row is marked private."""
    lnames = sorted({n.lower() for n in names})
    if not lnames:
        return set()
    return set(await session.scalars(select(func.lower(Repository.full_name)).where(
        func.lower(Repository.full_name).in_(lnames), Repository.private.is_(True))))


def _scrub_reports(conn: Any, name: str) -> None:
    reports = Report.__table__
    lname = name.lower()
    # only the reports naming it are read (a night's data holds a snapshot of every tracked
    # thread, a megabyte or more: before, a year of them were read at once)
    for rid, data, markdown in conn.execute(
            select(reports.c.id, reports.c.data, reports.c.markdown).where(or_(
                _names(reports.c.markdown, lname), _names(cast(reports.c.data, Text), lname)))
    ).all():
        if lname not in (markdown or "").lower() and lname not in json.dumps(data).lower():
            continue
        data = recounted(_scrub(data, lname))
        conn.execute(update(reports).where(reports.c.id == rid).values(
            data=data, summary=report_summary(data), markdown=_scrub_markdown(markdown or "", name)))


# ---- the stored reports' verdict agreement (edges62) -----------------------------------------
AGREEMENT_HEADING = "### The failure analyzer against people's verdicts"


def _take_out_verdicts(conn: Any, thread_ids: Any) -> None:
    """The verdicts on the threads `thread_ids` (a repository's) taken out of the stored
    reports' agreement figures (`bot.store.verdicts.count_agreement`, counted over every
    verdict when the report was built): each report built after a verdict was given counts
    it no more, in its data and its Markdown. Before, a stored report kept counting a
    forgotten repository's verdicts. A verdict given again after a report was built (its
    `given_at` moved) is taken out of the reports built after that only: the one before is
    not kept."""
    from bot.store.verdicts import count_agreement

    verdicts = Verdict.__table__
    rows = conn.execute(select(
        verdicts.c.given_at, verdicts.c.analyzer_version, verdicts.c.analyzer_is_failure_report,
        verdicts.c.analyzer_category, verdicts.c.is_failure_report, verdicts.c.category).where(
        verdicts.c.thread_id.in_(thread_ids))).all()
    if not rows:
        return
    reports = Report.__table__
    first = min(_aware(r[0]) for r in rows)
    for rid in conn.execute(select(reports.c.id).where(reports.c.created_at >= first)
                            .order_by(reports.c.id)).scalars().all():  # one report at a time
        data, markdown, created = conn.execute(select(
            reports.c.data, reports.c.markdown, reports.c.created_at).where(
            reports.c.id == rid)).one()
        stored = data.get("agreement") if isinstance(data, Mapping) else None
        if not isinstance(stored, list) or not stored:
            continue
        # (generated_at is kept to the second: a verdict given within it was counted)
        built = parse_datetime(data.get("generated_at"))
        built = _aware(created) if built is None else built + timedelta(seconds=1)
        counted = [tuple(r[1:]) for r in rows if _aware(r[0]) <= built]
        if not counted:
            continue
        agreement = _less_agreement(stored, count_agreement(counted))
        conn.execute(update(reports).where(reports.c.id == rid).values(
            data={**data, "agreement": agreement},
            markdown=_agreement_markdown(markdown or "", agreement)))
        _edit_posted_agreement(conn, data.get("date"), agreement)


def _edit_posted_agreement(conn: Any, day: Any, agreement: list[Any]) -> None:
    """The report of `day` posted on GitHub (its claim's `body`) with the agreement figures
    `agreement`, flagged to be edited so (REDACT), when they change its text."""
    actions = Action.__table__
    if not isinstance(day, str):
        return
    for aid, body, details in conn.execute(select(
            actions.c.id, actions.c.body, actions.c.details).where(
            actions.c.kind == "report", actions.c.dedupe_key == f"report:{day}",
            actions.c.comment_id.is_not(None))).all():
        edited = _agreement_markdown(body or "", agreement)
        if edited != (body or ""):
            conn.execute(update(actions).where(actions.c.id == aid).values(
                body=edited, details={**(details or {}), REDACT: True}))


def _aware(moment: Any) -> Any:
    return moment.replace(tzinfo=UTC) if moment is not None and moment.tzinfo is None else moment


def _less_agreement(stored: list[Any], minus: list[dict[str, Any]]) -> list[Any]:
    """A report's agreement rows less `minus` (count_agreement's rows of the verdicts taken
    out), version by version: the shares counted again, a version left with no verdict gone
    (the total, "all", stays)."""
    from bot.store.verdicts import AGREEMENT_KEYS, _with_shares

    less = {m["version"]: m for m in minus}
    out: list[Any] = []
    for row in stored:
        if not isinstance(row, Mapping) or row.get("version") not in less:
            out.append(row)
            continue
        taken = less[row.get("version")]
        counts = {k: max(0, int(row.get(k) or 0) - int(taken.get(k) or 0)) for k in AGREEMENT_KEYS}
        if counts["verdicts"] or row.get("version") == "all":
            out.append(_with_shares({**row, **counts}))
    return out


def _agreement_markdown(markdown: str, agreement: list[Any]) -> str:
    """A stored report's Markdown with its agreement section's lines written again from
    `agreement` (the template's own line, reports/_agreement.md.j2), or without the section
    when no verdict is left (as the template leaves it out)."""
    from bot.templating import markdown_env

    lines = markdown.splitlines(keepends=True)
    try:
        start = next(i for i, line in enumerate(lines) if line.startswith(AGREEMENT_HEADING))
    except StopIteration:
        return markdown
    end = next((i for i in range(start + 1, len(lines))
                if lines[i].startswith(("#", "<sub>", "<!--"))), len(lines))
    total = agreement[-1] if agreement and isinstance(agreement[-1], Mapping) else {}
    if not total.get("verdicts"):
        return "".join(lines[:start] + lines[end:])
    line = markdown_env().get_template("reports/_agreement.md.j2").module.agreement_line
    body = [x for x in lines[start:end] if not x.startswith("- ")]
    at = next((i for i, x in enumerate(body) if x.startswith("Against ")), 0) + 1
    new = [str(line(r)) + "\n" for r in agreement if isinstance(r, Mapping)]
    return "".join(lines[:start] + body[:at] + new + body[at:] + lines[end:])


def _names(column: Any, lname: str) -> Any:
    return func.lower(column).contains(lname, autoescape=True)


def recounted(data: Any) -> Any:
    """A report's data whose lists were scrubbed, its totals counted again from them (the
    change counts, the new landings): before, "new proposals 2" stood over a list of one."""
    frameworks = data.get("frameworks") if isinstance(data, Mapping) else None
    if not isinstance(frameworks, Mapping):
        return data
    fws = [fw for fw in frameworks.values() if isinstance(fw, Mapping)]
    out = dict(data)
    if isinstance(data.get("totals"), Mapping):
        out["totals"] = {kind: sum(len((fw.get("changes") or {}).get(kind) or []) for fw in fws)
                         for kind in data["totals"]}
    if isinstance(data.get("new_landings"), int):
        out["new_landings"] = sum(len(fw.get("new_landings") or []) for fw in fws)
    return out


# ---- what was stored before this check (migration 0014) ------------------------------------
def _private_in(payload: Mapping[str, Any]) -> list[tuple[str, int | None, bool]]:
    """(name, id, private) of every repository a stored payload says something of."""
    out = []
    repo = payload.get("repository")
    if isinstance(repo, Mapping) and isinstance(repo.get("full_name"), str) and (
            "private" in repo or "visibility" in repo):
        out.append((repo["full_name"], *_repository_of(payload)[1:], listed_private(repo)))
    for key in ("repositories", "repositories_added"):
        listed = payload.get(key)
        for r in listed if isinstance(listed, list) else []:
            if isinstance(r, Mapping) and isinstance(r.get("full_name"), str) and "private" in r:
                rid = r.get("id")
                out.append((r["full_name"], rid if isinstance(rid, int) else None,
                            listed_private(r)))
    return out


def forget_private_in_inbox(conn: Any, *, by_repository_id: bool = True) -> list[str]:
    """Forget the repositories the inbox's stored payloads last called private (a later
    payload calling one public, after it was made public again, wins). Returns their names."""
    deliveries = Delivery.__table__
    last: dict[str, tuple[int, str, int | None, bool]] = {}
    candidates = conn.execute(select(deliveries.c.id, deliveries.c.payload).where(or_(
        deliveries.c.payload.like('%"private":true%'),
        deliveries.c.payload.like('%"private": true%'),
        deliveries.c.payload.like('%"internal"%'))).order_by(deliveries.c.id)).all()
    for did, raw in candidates:
        for name, rid, is_private in _payload_repositories(raw):
            last[name.lower()] = (did, name, rid, is_private)
    forgotten = []
    for lname, (did, name, rid, is_private) in sorted(last.items()):
        if not is_private:
            continue
        later = conn.execute(select(deliveries.c.payload).where(
            deliveries.c.id > did, func.lower(deliveries.c.repo) == lname)).scalars()
        if any(n.lower() == lname and not p for raw in later
               for n, _, p in _payload_repositories(raw)):
            continue  # public again since
        forget(conn, name, rid, by_repository_id=by_repository_id)
        forgotten.append(name)
    return forgotten


def _payload_repositories(raw: str | None) -> list[tuple[str, int | None, bool]]:
    try:
        payload = json.loads(raw or "")
    except ValueError:
        return []
    return _private_in(payload) if isinstance(payload, Mapping) else []


async def forget_private_from_inbox(session: AsyncSession) -> list[str]:
    return await session.run_sync(forget_private_in_inbox)


# ---- the webhook inbox (review59) ------------------------------------------------------------
# A delivery about a private repository keeps no payload once handled (done or failed): its
# row keeps the delivery's id, event, action, repository, times, attempts and outcome, and a
# failed one's error its first line (the lines after it may quote the statement's parameters,
# the thread's text). What stands for the payload then (a JSON object, no repository text):
EMPTIED_PAYLOAD = '{"payload_not_kept": "a private repository\'s delivery"}'
FINISHED = ("done", "failed")


def payload_kept(raw: str | None) -> bool:
    return raw != EMPTIED_PAYLOAD


# In a raw payload, something saying private (GitHub's payloads all carry `"private": false`):
_SAYS_PRIVATE = re.compile(r'"private"\s*:\s*true|"visibility"\s*:\s*"(?:private|internal)"')


def says_private(raw: str) -> bool:
    """Whether a raw payload says its repository is private (`payload_is_private`), parsed
    only when something in it says private at all (the worker asks of every delivery)."""
    if not _SAYS_PRIVATE.search(raw):
        return False
    try:
        data = json.loads(raw)
    except ValueError:
        return False
    return payload_is_private(data) if isinstance(data, Mapping) else False


def _emptying(where: Any) -> Any:
    t = Delivery.__table__
    return (update(t).where(where, t.c.payload != EMPTIED_PAYLOAD)
            .values(payload=EMPTIED_PAYLOAD).returning(t.c.id, t.c.last_error))


def _first_lines(rows: Iterable[Any]) -> list[dict[str, Any]]:
    return [{"row_id": rid, "error": error.split("\n", 1)[0]} for rid, error in rows
            if error and "\n" in error]


def _cut_errors() -> Any:
    t = Delivery.__table__
    return update(t).where(t.c.id == bindparam("row_id")).values(last_error=bindparam("error"))


def _marked_names() -> Any:
    repos = Repository.__table__
    return select(func.lower(repos.c.full_name)).where(repos.c.private.is_(True))


async def empty_finished_deliveries(conn: Any, rows: Iterable[tuple[int, str | None, str]]) -> int:
    """Of deliveries just finished (done or failed, or set aside as abandoned) as (row id,
    repository, raw payload), those about a private repository (as the payload says, or as
    its row is marked, by name or by the delivery's `repo_id`: a delivery queued before
    `privatized`, or under a former name) keep no payload. `conn`: the worker's
    AsyncConnection, in the transaction that finishes them. Returns how many were emptied."""
    rows = list(rows)
    if not rows:
        return 0
    t = Delivery.__table__
    said = [rid for rid, _, raw in rows if says_private(raw)]
    where = t.c.id.in_([rid for rid, _, _ in rows]) & or_(
        t.c.id.in_(said) if said else false(),
        func.lower(t.c.repo).in_(_marked_names()),
        t.c.repo_id.in_(_marked_ids()))
    emptied = (await conn.execute(_emptying(where))).all()
    cut = _first_lines(emptied)
    if cut:
        await conn.execute(_cut_errors(), cut)
    return len(emptied)


def _marked_ids() -> Any:
    repos = Repository.__table__
    return select(repos.c.github_id).where(repos.c.private.is_(True),
                                           repos.c.github_id.is_not(None))


def _empty_deliveries_of(conn: Any, name: str, github_id: int | None = None, *,
                         by_repository_id: bool = True) -> None:
    """The finished deliveries of the repository `name` keep no payload (`forget`): those
    stored under its name, and those whose `repo_id` is its id (the event's, else its row's:
    stored under a former name, before a rename). Those not finished yet are emptied by the
    worker as it finishes them (the row is marked private)."""
    t = Delivery.__table__
    repos = Repository.__table__
    which = func.lower(t.c.repo) == name.lower()
    if by_repository_id:
        ids = {github_id} if github_id is not None else set(conn.execute(select(
            repos.c.github_id).where(func.lower(repos.c.full_name) == name.lower(),
                                     repos.c.github_id.is_not(None))).scalars())
        if ids:
            which = or_(which, t.c.repo_id.in_(sorted(ids)))
    emptied = conn.execute(_emptying(which & t.c.status.in_(FINISHED))).all()
    cut = _first_lines(emptied)
    if cut:
        conn.execute(_cut_errors(), cut)


def empty_private_inbox(conn: Any, *, by_repository_id: bool = False) -> int:
    """The finished deliveries stored before review59 whose repository is marked private, or
    whose payload says private, keep no payload (migration 0016). `by_repository_id`: also
    those whose `repo_id` is a marked repository's (migration 0017, once the column is
    filled: a delivery set aside as abandoned, under the repository's name or a former one,
    kept its payload). Returns how many."""
    t = Delivery.__table__
    said = [rid for rid, raw in conn.execute(select(t.c.id, t.c.payload).where(
        t.c.status.in_(FINISHED), or_(t.c.payload.like('%"private":true%'),
                                      t.c.payload.like('%"private": true%'),
                                      t.c.payload.like('%"internal"%')))).all()
            if says_private(raw)]
    total = 0
    for k in range(0, len(said) + 1, 500):
        where = t.c.status.in_(FINISHED) & or_(
            func.lower(t.c.repo).in_(_marked_names()),
            t.c.repo_id.in_(_marked_ids()) if by_repository_id else false(),
            t.c.id.in_(said[k:k + 500]) if said[k:k + 500] else false())
        emptied = conn.execute(_emptying(where)).all()
        cut = _first_lines(emptied)
        if cut:
            conn.execute(_cut_errors(), cut)
        total += len(emptied)
    return total


async def agreement_to_store(session: AsyncSession, built: datetime) -> list[dict[str, Any]]:
    """The agreement figure a report built at `built` is stored with: the verdicts given by
    then (to the second after it: `generated_at` is kept to the second) that are still
    stored, counted under `lock_repositories` of their repositories. A `forget` (which takes
    a repository's verdicts out of the stored reports' figures, those given by each report's
    `generated_at`: bot.store.privacy._take_out_verdicts) that committed since the report read
    the store has deleted them, and one in progress is waited for; one that comes after
    waits for this transaction and takes them out of the stored report. Before, a report
    whose build read the verdicts before a `forget` and was stored after it kept counting the
    forgotten repository's verdicts (and those of any repository: the figure counts them
    all, named or not)."""
    from bot.store.verdicts import agreement

    await lock_repositories(session, await session.scalars(
        select(Thread.repo).join(Verdict, Verdict.thread_id == Thread.id).distinct()))
    return await agreement(session, built + timedelta(seconds=1))
