"""People's verdicts on threads (the `verdicts` table): `/rltracker kind <failure>` and
`/rltracker not-a-failure`. One row per thread; a later verdict replaces the earlier one.

Also the one rule for the failure finding the tracker shows and counts (`shown_failure`, and
its SQL twin `shown_columns` for filters and counts): the person's verdict where there is
one, else the analysis. The analyzer's own finding stays in the Analysis row and beside the
shown one wherever a list or export carries it. And the live agreement figure
(`count_agreement`, `agreement`): how often the analyzer agreed with people's verdicts, by
analyzer version, on what it said when the verdict was given.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, String, case, select
from sqlalchemy.ext.asyncio import AsyncSession

from analyzers.version import version_key
from bot.store.db import dialect_insert
from bot.store.models import Analysis, Thread, Verdict
from bot.store.types import format_datetime, parse_datetime, utcnow

COLUMNS = ("is_failure_report", "category", "login", "role", "comment_id", "analyzer_category",
           "analyzer_is_failure_report", "analyzer_version", "given_at")


async def set_verdict(
    session: AsyncSession, thread: Thread, *, is_failure_report: bool, category: str | None,
    login: str, role: str, comment_id: int | None, given_at: datetime | None = None,
) -> dict[str, Any]:
    """Store the verdict on `thread` (replacing an earlier one), with the analyzer's finding
    as it stands now. One statement (an upsert): two verdicts at once leave one row.
    `given_at`: when the person wrote the command (the comment's time); a verdict given
    before the stored one (a delivery retried after a later command was handled) does not
    replace it: the latest word wins, not the last processed. Returns the verdict as given
    (`given_dict`: what a retraction of a later one brings back)."""
    analysis = await session.scalar(select(Analysis).where(Analysis.thread_id == thread.id))
    values: dict[str, Any] = {
        "thread_id": thread.id,
        "is_failure_report": is_failure_report,
        "category": category if is_failure_report else None,
        "login": login[:255],
        "role": role,
        "comment_id": comment_id,
        "analyzer_category": analysis.failure_category if analysis is not None else None,
        "analyzer_is_failure_report": analysis.is_failure_report if analysis is not None else None,
        "analyzer_version": analysis.analyzer_version if analysis is not None else None,
        "given_at": given_at or utcnow(),
    }
    bind = session.get_bind()
    insert = dialect_insert(bind.dialect.name)(Verdict.__table__).values(**values)
    await session.execute(insert.on_conflict_do_update(
        index_elements=["thread_id"], set_={c: insert.excluded[c] for c in COLUMNS},
        where=Verdict.__table__.c.given_at <= insert.excluded.given_at))
    return given_dict(values)


def given_dict(values: dict[str, Any]) -> dict[str, Any]:
    """A verdict's columns (`COLUMNS`) as JSON, kept in its command's action (`given`): when a
    later verdict on the thread is taken back, this one is the thread's again, as given."""
    out = {c: values.get(c) for c in COLUMNS}
    out["given_at"] = format_datetime(values.get("given_at"))
    return out


async def retract_verdict(session: AsyncSession, thread_id: int, comment_id: int,
                          previous: dict[str, Any] | None) -> bool:
    """The thread's verdict given in comment `comment_id` taken back (its comment deleted, or
    its command edited away): the row becomes `previous` (a `given_dict`: the verdict the
    thread had before, still standing) or goes. One conditional statement: when the stored
    verdict is no longer this comment's (a later one was given), nothing changes and False is
    returned."""
    table = Verdict.__table__
    mine = (table.c.thread_id == thread_id) & (table.c.comment_id == comment_id)
    if previous is None:
        result = await session.execute(table.delete().where(mine))
    else:
        values = {c: previous.get(c) for c in COLUMNS}
        values["given_at"] = parse_datetime(previous.get("given_at")) or utcnow()
        result = await session.execute(table.update().where(mine).values(**values))
    return bool(result.rowcount)


async def thread_verdict(session: AsyncSession, thread_id: int) -> Verdict | None:
    return await session.scalar(select(Verdict).where(Verdict.thread_id == thread_id))


async def all_verdicts(session: AsyncSession) -> list[tuple[Verdict, Thread]]:
    """Every verdict with its thread, in the order the threads were stored."""
    rows = await session.execute(
        select(Verdict, Thread).join(Thread, Thread.id == Verdict.thread_id)
        .order_by(Thread.repo, Thread.number))
    return [(v, t) for v, t in rows.all()]


def verdict_dict(verdict: Verdict) -> dict[str, Any]:
    """A verdict as the JSON API gives it: what the person said, who (login and role), when,
    and what the analyzer had said then."""
    return {"is_failure_report": bool(verdict.is_failure_report), "category": verdict.category,
            "login": verdict.login, "role": verdict.role, "comment_id": verdict.comment_id,
            "given_at": format_datetime(verdict.given_at),
            "analyzer_is_failure_report": verdict.analyzer_is_failure_report,
            "analyzer_category": verdict.analyzer_category,
            "analyzer_version": verdict.analyzer_version}


def as_failure(verdict: Verdict) -> dict[str, Any]:
    """The verdict in the shape of an analysis' `failure` part, for what the app says: a
    person named the kind, so there is one, no runner-up and no model confidence."""
    if not verdict.is_failure_report:
        return {"is_failure_report": False, "category": None, "categories": [], "confidence": 0.0,
                "evidence": [], "set_by": verdict.role}
    return {"is_failure_report": True, "category": verdict.category,
            "categories": [verdict.category], "confidence": 1.0, "evidence": [],
            "set_by": verdict.role}


async def verdict_of(session: AsyncSession, repo: str, number: int) -> Verdict | None:
    """The verdict on a thread named by repository and number."""
    from sqlalchemy import func

    return await session.scalar(
        select(Verdict).join(Thread, Thread.id == Verdict.thread_id)
        .where(func.lower(Thread.repo) == repo.lower(), Thread.number == number))


# --- the failure finding the tracker shows -----------------------------------------------------


def shown_failure(analyzer_is_failure: bool | None, analyzer_category: str | None,
                  verdict: Any | None) -> dict[str, Any]:
    """The failure finding the tracker shows for a thread: the person's verdict where there is
    one (`verdict`: a Verdict row, or anything with `is_failure_report`, `category`, `role`),
    else the analyzer's. `set_by` is the person's role (`author` / `maintainer`) or None."""
    if verdict is not None:
        is_failure = bool(verdict.is_failure_report)
        return {"is_failure_report": is_failure, "category": verdict.category if is_failure else None,
                "set_by": verdict.role}
    is_failure = bool(analyzer_is_failure)
    return {"is_failure_report": is_failure, "category": analyzer_category if is_failure else None,
            "set_by": None}


async def shown_kind(session: AsyncSession, thread_id: int) -> str | None:
    """The failure kind the tracker shows for a stored thread (`shown_failure`: a person's
    verdict, else the analyzer's finding), None when it shows none."""
    analysis = await session.scalar(select(Analysis).where(Analysis.thread_id == thread_id))
    return shown_failure(analysis.is_failure_report if analysis is not None else None,
                         analysis.failure_category if analysis is not None else None,
                         await thread_verdict(session, thread_id))["category"]


def shown_columns() -> tuple[Any, Any]:
    """`shown_failure` as SQL expressions (is it a failure report, which kind) over Analysis
    outer-joined with Verdict, for filters and counts: the verdict's where a row exists."""
    has_verdict = Verdict.id.is_not(None)
    is_failure = case((has_verdict, Verdict.is_failure_report),
                      else_=Analysis.is_failure_report).cast(Boolean)
    category = case((has_verdict, Verdict.category), else_=Analysis.failure_category).cast(String)
    return is_failure, category


# --- agreement: the analyzer against people's verdicts -----------------------------------------

AGREEMENT_KEYS = ("verdicts", "called", "kind_right", "kind_wrong", "not_failure_per_person",
                  "not_called", "failure_per_person", "agreed_not_failure", "not_analysed")


def count_agreement(rows: list[tuple[str | None, bool | None, str | None, bool, str | None]]
                    ) -> list[dict[str, Any]]:
    """Rows (analyzer version, analyzer said failure report, analyzer kind, person said failure
    report, person kind) -> one dict per analyzer version (newest first; no version = no
    analysis when the verdict was given, last), then the total over all (`version` "all").

    Of the threads the analyzer called a failure report (`called`): the person's kind was its
    kind (`kind_right`), another kind (`kind_wrong`), or no failure report at all
    (`not_failure_per_person`). Of those it did not call one (`not_called`): the person said
    it is one (`failure_per_person`) or agreed (`agreed_not_failure`)."""
    by: dict[str | None, dict[str, Any]] = {}
    total = {k: 0 for k in AGREEMENT_KEYS}
    for version, a_failure, a_category, p_failure, p_category in rows:
        counts = by.setdefault(version, {k: 0 for k in AGREEMENT_KEYS})
        for c in (counts, total):
            c["verdicts"] += 1
            if a_failure is None:
                c["not_analysed"] += 1
            elif a_failure:
                c["called"] += 1
                if not p_failure:
                    c["not_failure_per_person"] += 1
                elif p_category == a_category:
                    c["kind_right"] += 1
                else:
                    c["kind_wrong"] += 1
            else:
                c["not_called"] += 1
                c["failure_per_person" if p_failure else "agreed_not_failure"] += 1
    versions = sorted((v for v in by if v is not None), key=version_key, reverse=True)
    out = [_with_shares({"version": v, **by[v]}) for v in versions]
    if None in by:
        out.append(_with_shares({"version": None, **by[None]}))
    return [*out, _with_shares({"version": "all", **total})]


def _with_shares(c: dict[str, Any]) -> dict[str, Any]:
    """The shares the counts give (None where there is nothing to divide): of the analyzer's
    calls, how many people confirmed as reports (`precision`) and, of those, with its kind
    (`kind_accuracy`); of the threads people called reports, how many it had called (`recall`)."""
    reports_called = c["kind_right"] + c["kind_wrong"]
    reports = reports_called + c["failure_per_person"]
    c["precision"] = round(reports_called / c["called"], 3) if c["called"] else None
    c["kind_accuracy"] = round(c["kind_right"] / reports_called, 3) if reports_called else None
    c["recall"] = round(reports_called / reports, 3) if reports else None
    return c


async def agreement(session: AsyncSession, given_by: datetime | None = None
                    ) -> list[dict[str, Any]]:
    """`count_agreement` over every stored verdict (given by `given_by`, when given), against
    what the analyzer said when the verdict was given (the finding `set_verdict` kept beside
    it)."""
    query = select(
        Verdict.analyzer_version, Verdict.analyzer_is_failure_report, Verdict.analyzer_category,
        Verdict.is_failure_report, Verdict.category)
    if given_by is not None:
        query = query.where(Verdict.given_at <= given_by)
    rows = await session.execute(query)
    return count_agreement([tuple(r) for r in rows.all()])
