"""The database schema. Changed only together with a migration in migrations/versions/."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from bot.store.types import TitleText, UTCDateTime, utcnow

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# BigInteger ids autoincrement on PostgreSQL; SQLite only autoincrements INTEGER PRIMARY KEY.
BigId = BigInteger().with_variant(Integer(), "sqlite")


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map = {datetime: UTCDateTime, dict[str, Any]: JSON, list[Any]: JSON}


class Installation(Base):
    __tablename__ = "installations"
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    account: Mapped[str] = mapped_column(String(255))
    account_type: Mapped[str | None] = mapped_column(String(32))
    suspended: Mapped[bool] = mapped_column(Boolean, default=False)
    deleted: Mapped[bool] = mapped_column(Boolean, default=False)
    # When the stored suspension state and the uninstall happened, as GitHub's payloads (and
    # the inbox) date them: an older event does not undo them (migration 0009).
    suspension_changed_at: Mapped[datetime | None]
    deleted_at: Mapped[datetime | None]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class Repository(Base):
    __tablename__ = "repositories"
    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    full_name: Mapped[str] = mapped_column(String(255), unique=True)  # canonical owner/name
    github_id: Mapped[int | None] = mapped_column(BigInteger, unique=True)
    framework: Mapped[str | None] = mapped_column(String(32))  # catalog framework id
    installation_id: Mapped[int | None] = mapped_column(
        ForeignKey("installations.id", ondelete="SET NULL")
    )
    # The installation this repository was removed from while it stays active: a delivery
    # naming that installation (queued before, redelivered) does not make it installed
    # again; only an installation event does.
    removed_installation_id: Mapped[int | None] = mapped_column(BigInteger)
    # The repository's `updated_at` in the payload that gave it `full_name` (or a later one
    # with the same name): a payload naming it otherwise with an older one was sent before a
    # rename and does not rename it back (migration 0008).
    name_seen_at: Mapped[datetime | None]
    default_branch: Mapped[str | None] = mapped_column(String(255))
    config: Mapped[dict[str, Any] | None] = mapped_column(JSON)  # parsed .github/rltracker.yml
    config_error: Mapped[str | None] = mapped_column(Text)
    config_fetched_at: Mapped[datetime | None]
    comments_paused: Mapped[bool] = mapped_column(Boolean, default=False)
    paused_reason: Mapped[str | None] = mapped_column(Text)
    # Who lifted the last pause ("@login" by `/rltracker resume`, "operator" by `rltracker
    # repos resume`) and when: the reception check judges only comments posted after it.
    resumed_at: Mapped[datetime | None]
    resumed_by: Mapped[str | None] = mapped_column(String(255))
    # GitHub calls it private (or internal): nothing of it is stored, shown or spoken in
    # (bot/store/privacy.py, migration 0014); the row keeps only this mark.
    private: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


def _repo_inserted(context: Any) -> Any:
    """A thread's `first_repo` when it is inserted: the name it is stored under."""
    return context.get_current_parameters()["repo"]


def _number_inserted(context: Any) -> Any:
    """A thread's `first_number` when it is inserted: the number it is stored under."""
    return context.get_current_parameters()["number"]


class Thread(Base):
    """An issue, pull request or discussion. Keyed by canonical repository name and number."""

    __tablename__ = "threads"
    __table_args__ = (UniqueConstraint("repo", "number", name="uq_threads_repo_number"),
                      Index("ix_threads_first_repo_first_number", "first_repo", "first_number"))
    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    repo: Mapped[str] = mapped_column(String(255), index=True)
    number: Mapped[int] = mapped_column(Integer)
    # The repository name the thread was first stored under: a rename moves `repo`
    # (bot.store.repositories.follow_rename), not this. Its feed entry's id is
    # /threads/{first_repo}/{first_number}, the same across renames (migration 0022; None only for
    # a row written around the model: readers take `repo` then).
    first_repo: Mapped[str | None] = mapped_column(String(255), default=_repo_inserted)
    # ... and the number: a transfer moves `repo` and `number`, not these (migration 0023;
    # None only for a row written around the model: readers take `number` then).
    first_number: Mapped[int | None] = mapped_column(Integer, default=_number_inserted)
    # The GitHub id of the repository it was first stored in, set only when another thread
    # held (first_repo, first_number) already (a name taken again after a rename): its entry
    # id then carries it (bot/site/feeds.py; bot.store.threads.reused_names).
    first_repo_id: Mapped[int | None] = mapped_column(BigInteger)
    kind: Mapped[str] = mapped_column(String(16))  # issue | pull_request | discussion
    github_id: Mapped[int | None] = mapped_column(BigInteger)
    node_id: Mapped[str | None] = mapped_column(String(64))
    title: Mapped[str] = mapped_column(TitleText, default="")
    body: Mapped[str | None] = mapped_column(Text)
    author: Mapped[str | None] = mapped_column(String(255))
    author_association: Mapped[str | None] = mapped_column(String(32))
    author_is_bot: Mapped[bool | None] = mapped_column(Boolean)
    state: Mapped[str] = mapped_column(String(16), default="open")  # open | closed | merged
    state_reason: Mapped[str | None] = mapped_column(String(32))
    closed_by: Mapped[str | None] = mapped_column(String(255))
    labels: Mapped[list[Any]] = mapped_column(JSON, default=list)
    assignees: Mapped[list[Any]] = mapped_column(JSON, default=list)
    url: Mapped[str | None] = mapped_column(Text)
    # Discussions only (migration 0013; None: not a discussion, or not known yet): whether an
    # answer was chosen, who chose it, and the category's name.
    answered: Mapped[bool | None] = mapped_column(Boolean)
    answer_chosen_by: Mapped[str | None] = mapped_column(String(255))
    category: Mapped[str | None] = mapped_column(String(255))
    complete: Mapped[bool] = mapped_column(Boolean, default=True)
    muted: Mapped[bool] = mapped_column(Boolean, default=False)  # /rltracker ignore or stop
    created_at: Mapped[datetime | None]
    updated_at: Mapped[datetime | None]
    closed_at: Mapped[datetime | None]
    stored_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)
    comments: Mapped[list[Comment]] = relationship(
        back_populates="thread", order_by="Comment.created_at.asc().nulls_last()", cascade="all, delete-orphan"
    )


class Comment(Base):
    """A comment, review, review comment or discussion comment, keyed by GitHub kind and id.

    GitHub numbers each kind apart: discussion comments (and their replies) are
    `discussion_comment` here, not `comment` (an issue comment may have the same id; migration
    0013). The contract record calls them `comment` (bot.store.threads.comment_record)."""

    __tablename__ = "comments"
    __table_args__ = (UniqueConstraint("kind", "github_id", name="uq_comments_kind_github_id"),)
    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    thread_id: Mapped[int] = mapped_column(ForeignKey("threads.id", ondelete="CASCADE"), index=True)
    kind: Mapped[str] = mapped_column(String(32))  # comment | review | review_comment | discussion_comment
    github_id: Mapped[int] = mapped_column(BigInteger)
    node_id: Mapped[str | None] = mapped_column(String(64))
    author: Mapped[str | None] = mapped_column(String(255))
    author_association: Mapped[str | None] = mapped_column(String(32))
    author_is_bot: Mapped[bool | None] = mapped_column(Boolean)
    body: Mapped[str] = mapped_column(Text, default="")
    path: Mapped[str | None] = mapped_column(Text)  # review comments: the file it is on (0013)
    # Why GitHub shows it hidden (spam, abuse, off-topic, outdated, resolved, duplicate); None:
    # shown, or not known (webhooks do not say; the sync reads it). 0015.
    minimized_reason: Mapped[str | None] = mapped_column(String(32))
    created_at: Mapped[datetime | None]
    updated_at: Mapped[datetime | None]
    thread: Mapped[Thread] = relationship(back_populates="comments")


class Deletion(Base):
    """A thread or comment GitHub deleted, or a thread transferred away from its place. A
    delivery about it handled after that (a retry, GitHub's "Redeliver", an older event a
    second replica took) must not store it again. `key`: `threads_grave` / `comment_grave`
    (bot/store/threads.py); `created_at`: the deleted thread's, so an issue of a repository
    deleted and created again under the same name (its numbers start over) is a new one."""

    __tablename__ = "deletions"
    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    key: Mapped[str] = mapped_column(String(300), unique=True)
    created_at: Mapped[datetime | None]
    deleted_at: Mapped[datetime] = mapped_column(default=utcnow)


def repository_id_of(payload: Any) -> int | None:
    """A delivery's `repository.id` (a parsed payload or its raw JSON), when it is an integer
    a BIGINT column holds; else None (no repository, an emptied payload, not JSON)."""
    if isinstance(payload, str):
        if '"repository"' not in payload:
            return None
        try:
            payload = json.loads(payload)
        except (ValueError, RecursionError):
            return None
    repo = payload.get("repository") if isinstance(payload, dict) else None
    rid = repo.get("id") if isinstance(repo, dict) else None
    if isinstance(rid, int) and not isinstance(rid, bool) and -(2**63) <= rid < 2**63:
        return rid
    return None


def _payload_repository_id(context: Any) -> int | None:
    return repository_id_of(context.get_current_parameters().get("payload"))


class Delivery(Base):
    """The webhook inbox. `id` gives arrival order; `delivery_id` is GitHub's X-GitHub-Delivery."""

    __tablename__ = "deliveries"
    __table_args__ = (
        Index("ix_deliveries_status_id", "status", "id"),
        # the worker's claim (status, and when a row is due) without reading the rows
        Index("ix_deliveries_status_next_attempt", "status", "next_attempt_at"),
        # `forget`: a repository's deliveries by its id, whatever name they were stored under
        Index("ix_deliveries_repo_id", "repo_id"),
    )
    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    delivery_id: Mapped[str] = mapped_column(String(64), unique=True)
    event: Mapped[str] = mapped_column(String(64))
    action: Mapped[str | None] = mapped_column(String(64))
    repo: Mapped[str | None] = mapped_column(String(255))
    # the payload's `repository.id` (migration 0017): given by the inbox's writers, else read
    # from the payload as the row is inserted
    repo_id: Mapped[int | None] = mapped_column(BigInteger, default=_payload_repository_id)
    installation_id: Mapped[int | None] = mapped_column(BigInteger)
    payload: Mapped[str] = mapped_column(Text)  # the raw JSON body as received
    status: Mapped[str] = mapped_column(String(16), default="pending")
    # pending | processing | done | failed
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    last_error: Mapped[str | None] = mapped_column(Text)
    received_at: Mapped[datetime] = mapped_column(default=utcnow)
    next_attempt_at: Mapped[datetime | None]
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]
    claimed_by: Mapped[str | None] = mapped_column(String(128))


class Analysis(Base):
    """The latest findings for a thread (contract `analysis` shape), with the analyzer version."""

    __tablename__ = "analyses"
    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    thread_id: Mapped[int] = mapped_column(
        ForeignKey("threads.id", ondelete="CASCADE"), unique=True
    )
    analyzer_version: Mapped[str] = mapped_column(String(32))
    result: Mapped[dict[str, Any]] = mapped_column(JSON)
    is_failure_report: Mapped[bool] = mapped_column(Boolean, default=False)
    failure_category: Mapped[str | None] = mapped_column(String(64), index=True)
    # the failure finding's uncertainty (failure.confidence; failure.categories[1], the kind
    # listed second when the kind is split), for where a verdict is wanted (migration 0007)
    failure_confidence: Mapped[float | None] = mapped_column(Float, index=True)
    failure_runner_up: Mapped[str | None] = mapped_column(String(64))
    is_proposal: Mapped[bool] = mapped_column(Boolean, default=False, index=True)
    review_state: Mapped[str | None] = mapped_column(String(32))
    # When the stored review state last became another (None: as first stored): set by
    # bot.pipeline only when an analysis reads a state other than the stored one, not at every
    # re-analysis as `analyzed_at` (migration 0022).
    review_state_changed_at: Mapped[datetime | None]
    methods: Mapped[list[Any]] = mapped_column(JSON, default=list)  # catalog method ids linked
    arxiv_ids: Mapped[list[Any]] = mapped_column(JSON, default=list)
    analyzed_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)

    # Everything the proposals' counts by framework and state read of the table, so they
    # read the index alone, not the wide rows (bot.site.data.proposal_counts; migration 0024).
    __table_args__ = (Index("ix_analyses_proposal_counts", "is_proposal", "thread_id",
                            "review_state"),)


class ReviewTransition(Base):
    """One change of a proposal's stored review state (migration 0026): the thread, the state
    before (None: the first state it was stored in as a proposal) and after, when the change
    was stored, the analyzer version that read the new state, and what stored it (`source`:
    bot.store.history.SOURCES). Written only when the stored state changes
    (bot.store.history.record_transitions); rows go with their thread."""

    __tablename__ = "review_transitions"
    __table_args__ = (Index("ix_review_transitions_thread_id_observed_at", "thread_id",
                            "observed_at"),
                      Index("ix_review_transitions_observed_at", "observed_at"))
    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    thread_id: Mapped[int] = mapped_column(ForeignKey("threads.id", ondelete="CASCADE"))
    from_state: Mapped[str | None] = mapped_column(String(32))
    to_state: Mapped[str | None] = mapped_column(String(32))
    observed_at: Mapped[datetime] = mapped_column(default=utcnow)
    analyzer_version: Mapped[str | None] = mapped_column(String(32))
    source: Mapped[str] = mapped_column(String(16))


class AnalysisFailure(Base):
    """A thread the nightly re-analysis could not analyse or store (migration 0012): under
    which analyzer version, how many nights in a row, the last error. After MAX_ATTEMPTS
    (bot.scheduler) under one version the step leaves the thread out; a new analyzer version
    starts the count again, and a success removes the row."""

    __tablename__ = "analysis_failures"
    thread_id: Mapped[int] = mapped_column(
        BigId, ForeignKey("threads.id", ondelete="CASCADE"), primary_key=True, autoincrement=False
    )
    analyzer_version: Mapped[str] = mapped_column(String(32))
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    error: Mapped[str | None] = mapped_column(Text)
    failed_at: Mapped[datetime] = mapped_column(default=utcnow)


class ProposedMethods(Base):
    """The study's memo (bot.site.study.ProposedMemo) as the nightly step leaves it: each
    stored proposal's proposed methods (analyzers.proposed) and `key`, a digest of what they
    were read from (the row version, title, linked methods, ANALYZER_VERSION). A process's
    first /study reads these instead of running the rule on every opening post, and runs it
    only where the key no longer matches (migration 0025). Method ids only, no text; the row
    goes with its thread."""

    __tablename__ = "proposed_methods"
    thread_id: Mapped[int] = mapped_column(
        BigId, ForeignKey("threads.id", ondelete="CASCADE"), primary_key=True, autoincrement=False
    )
    key: Mapped[str] = mapped_column(String(64))
    methods: Mapped[list[Any]] = mapped_column(JSON, default=list)


class Verdict(Base):
    """A person's word on a thread (`/rltracker kind <failure>`, `/rltracker not-a-failure`):
    whether it reports a training failure and of which kind, who said it (login; `author` of
    the thread or `maintainer`), in which command comment and when, beside what the analyzer
    said then. One row per thread: the latest verdict wins."""

    __tablename__ = "verdicts"
    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    thread_id: Mapped[int] = mapped_column(
        ForeignKey("threads.id", ondelete="CASCADE"), unique=True
    )
    is_failure_report: Mapped[bool] = mapped_column(Boolean)
    category: Mapped[str | None] = mapped_column(String(64))  # catalog failure key; None: not one
    login: Mapped[str] = mapped_column(String(255))
    role: Mapped[str] = mapped_column(String(16))  # author | maintainer
    comment_id: Mapped[int | None] = mapped_column(BigInteger)
    analyzer_category: Mapped[str | None] = mapped_column(String(64))
    analyzer_is_failure_report: Mapped[bool | None] = mapped_column(Boolean)
    analyzer_version: Mapped[str | None] = mapped_column(String(32))
    given_at: Mapped[datetime] = mapped_column(default=utcnow)


class Action(Base):
    """What the app posted, would have posted (dry run), failed to post, or chose not to post.

    `dedupe_key` is set for actions that must happen at most once (one failure comment per
    thread, one report comment per night); the unique index makes a second insert fail, which
    is what stops two workers or a redelivery from posting twice.
    """

    __tablename__ = "actions"
    __table_args__ = (Index("ix_actions_repo_number", "repo", "number"),
                      # /api/actions' order, oldest first (migration 0021)
                      Index("ix_actions_created_at_id", "created_at", "id"))
    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    repo: Mapped[str] = mapped_column(String(255))
    number: Mapped[int | None] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(32))  # failure_comment | rule_summary | command | report | label | config
    status: Mapped[str] = mapped_column(String(16))  # posted | dry_run | failed | skipped | pending
    dedupe_key: Mapped[str | None] = mapped_column(String(255), unique=True)
    body: Mapped[str | None] = mapped_column(Text)
    reason: Mapped[str | None] = mapped_column(Text)
    details: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    language: Mapped[str | None] = mapped_column(String(8))
    comment_id: Mapped[int | None] = mapped_column(BigInteger)
    comment_node_id: Mapped[str | None] = mapped_column(String(64))
    reactions_up: Mapped[int] = mapped_column(Integer, default=0)
    reactions_down: Mapped[int] = mapped_column(Integer, default=0)
    is_minimized: Mapped[bool] = mapped_column(Boolean, default=False)
    minimized_reason: Mapped[str | None] = mapped_column(String(64))
    comment_deleted: Mapped[bool] = mapped_column(Boolean, default=False)
    frozen: Mapped[bool] = mapped_column(Boolean, default=False)  # a maintainer replied after it
    delivery_id: Mapped[str | None] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class SyncCursor(Base):
    __tablename__ = "sync_cursors"
    __table_args__ = (UniqueConstraint("repo", "kind", name="uq_sync_cursors_repo_kind"),)
    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    repo: Mapped[str] = mapped_column(String(255))
    kind: Mapped[str] = mapped_column(String(16))  # issue | pull_request | discussion
    cursor: Mapped[str | None] = mapped_column(Text)  # GraphQL endCursor of the running pass
    updated_since: Mapped[datetime | None]  # newest updatedAt fully stored
    full_done: Mapped[bool] = mapped_column(Boolean, default=False)
    last_run_at: Mapped[datetime | None]


class Paper(Base):
    """The paper pool matched in addition to the catalog."""

    __tablename__ = "papers"
    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    arxiv_id: Mapped[str | None] = mapped_column(String(32), unique=True)
    title: Mapped[str] = mapped_column(Text)
    aliases: Mapped[list[Any]] = mapped_column(JSON, default=list)
    method: Mapped[str | None] = mapped_column(String(64))
    first_public: Mapped[str | None] = mapped_column(String(10))
    categories: Mapped[str | None] = mapped_column(String(255))
    source: Mapped[str | None] = mapped_column(String(32))
    added_at: Mapped[datetime] = mapped_column(default=utcnow)


class ContributionRules(Base):
    """Contribution files of a repository, fetched through the contents API, and their summary."""

    __tablename__ = "contribution_rules"
    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    repo: Mapped[str] = mapped_column(String(255), unique=True)
    files: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    summary: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    fetched_at: Mapped[datetime] = mapped_column(default=utcnow)


class JobRun(Base):
    __tablename__ = "job_runs"
    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    name: Mapped[str] = mapped_column(String(64))
    started_at: Mapped[datetime] = mapped_column(default=utcnow)
    finished_at: Mapped[datetime | None]
    outcome: Mapped[str] = mapped_column(String(16), default="running")  # running | ok | partial | failed | skipped | cancelled
    counts: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    error: Mapped[str | None] = mapped_column(Text)
    # renewed while the run is alive (bot.store.jobs): a "running" row it no longer moves
    # was left by a process that died, and reads as interrupted
    heartbeat_at: Mapped[datetime | None]


def report_summary(data: dict[str, Any] | None) -> dict[str, Any]:
    """What the list of reports shows of a night (`Report.summary`): whether it is a
    baseline, its totals of changes and its number of new landings."""
    data = data or {}
    return {"baseline": bool(data.get("baseline")), "totals": dict(data.get("totals") or {}),
            "new_landings": int(data.get("new_landings") or 0)}


def _report_summary_of_row(context: Any) -> dict[str, Any]:
    return report_summary(context.get_current_parameters().get("data"))


class Report(Base):
    __tablename__ = "reports"
    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    date: Mapped[str] = mapped_column(String(10), unique=True)  # YYYY-MM-DD
    data: Mapped[dict[str, Any]] = mapped_column(JSON)
    # report_summary(data), written with it (migration 0019): the list of reports reads this,
    # not the data, which holds the snapshot of every tracked thread (megabytes a night)
    summary: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=_report_summary_of_row)
    markdown: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
