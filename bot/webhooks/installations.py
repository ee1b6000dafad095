"""Installation events keep the Installation and Repository tables right.

`installation` (created, deleted, suspend, unsuspend, new_permissions_accepted),
`installation_repositories` (added, removed) and `installation_target` (renamed). Repository
rows are keyed by canonical name (former names map to current ones through the catalog) and
carry the catalog framework id when the repository is one of the seven.

Once `installation.created` or `installation_repositories.added` is committed, the tracked
repositories among those added get their preview (issue #6, "Preview before comments"): a
background task started here fetches their recent issues and stores what the app would have
said (bot.speaking.preview.preview_on_install; tests and shutdown await it with wait_background).
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping
from datetime import UTC, datetime
from typing import Any

from gidgethub import sansio
from gidgethub.routing import Router
from sqlalchemy import delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from analyzers.catalog import canonical_repo, framework_id
from bot.store.models import Action, Delivery, Installation, Repository
from bot.store.repositories import follow_rename, settle_repository
from bot.store.types import parse_datetime, utcnow
from bot.webhooks.normalize import PayloadError

log = logging.getLogger(__name__)
router = Router()


# ------------------------------------------------------------------------------ repository identity


async def ensure_installation(
    session: AsyncSession, installation_id: int, account: Mapping[str, Any] | None = None
) -> Installation:
    """The Installation row, created from what is known when the app was installed before
    this database existed (webhooks then name an installation we never saw created)."""
    inst = await session.get(Installation, int(installation_id))
    if inst is None:
        inst = Installation(
            id=int(installation_id),
            account=str((account or {}).get("login") or ""),
            account_type=(account or {}).get("type"),
            suspended=False,
            deleted=False,
        )
        session.add(inst)
        await session.flush()
    return inst


async def upsert_repository(
    session: AsyncSession,
    full_name: str,
    *,
    github_id: int | None = None,
    installation_id: int | None = None,
    default_branch: str | None = None,
    installation_event: bool = False,
    seen_at: datetime | None = None,
) -> Repository:
    """Insert or update a repository row; keyed by GitHub id when known (renames keep it),
    else by canonical name (case-insensitive).

    `seen_at`: the repository's `updated_at` in the payload (GitHub moves it with a rename).
    A name other than the stored one renames the repository (its rows follow) only when the
    payload is newer than the one the stored name came from (`name_seen_at`): a payload sent
    before a rename, handled after it, keeps the newer name. A payload without the time
    (installation events list repositories by id and name only) renames only a row that has
    none either. The row's `full_name` is the name to store its threads under.

    `installation_id`: the installation the delivery came through; the row takes it, unless
    the repository was removed from that installation (`removed_installation_id`) and the
    delivery is not an installation event (`installation_event`): a delivery queued before
    the removal, or redelivered after it, still names the installation."""
    name = canonical_repo(full_name)
    repo: Repository | None = None
    if github_id is not None:
        repo = await session.scalar(select(Repository).where(Repository.github_id == int(github_id)))
    if repo is None:
        repo = await session.scalar(
            select(Repository).where(func.lower(Repository.full_name) == name.lower())
        )
    if repo is None:
        repo = Repository(full_name=name, name_seen_at=seen_at)
        session.add(repo)
    elif repo.full_name.lower() != name.lower() and not _newer_name(seen_at, repo.name_seen_at):
        pass  # a name from before the stored one's: the stored name stands
    elif repo.full_name != name:
        clash = await session.scalar(
            select(Repository).where(func.lower(Repository.full_name) == name.lower())
        )
        if clash is None or clash is repo:
            if repo.full_name.lower() != name.lower():  # renamed or moved: its rows follow
                await follow_rename(session, repo.full_name, name)
                repo.name_seen_at = seen_at
            repo.full_name = name
        elif clash.github_id in (None, repo.github_id) and repo.github_id is not None:
            # The new name is taken by a row of the same repository (a sync under that name
            # made it, no id): merged as the sync does, one row under the new name keeping this
            # one's id and installation, a thread stored under both names made one. (The name
            # kept before: two rows, the threads of one repository counted under both.)
            await settle_repository(session, name, repo.github_id, former=[repo.full_name],
                                    seen_at=seen_at, framework=framework_id(name))
    if (seen_at is not None and repo.full_name.lower() == name.lower()
            and (repo.name_seen_at is None or seen_at > repo.name_seen_at)):
        repo.name_seen_at = seen_at
    if github_id is not None and repo.github_id is None:
        repo.github_id = int(github_id)
    if installation_id is not None and (
            installation_event or repo.removed_installation_id != int(installation_id)):
        repo.installation_id = int(installation_id)
        repo.removed_installation_id = None
    if default_branch and repo.full_name.lower() == name.lower():
        repo.default_branch = default_branch
    repo.framework = framework_id(repo.full_name) or repo.framework
    await session.flush()
    return repo


def _newer_name(seen_at: datetime | None, stored: datetime | None) -> bool:
    """Whether a payload seen at `seen_at` may rename a repository whose name came from a
    payload seen at `stored` (None: unknown)."""
    if stored is None:
        return True
    return seen_at is not None and seen_at > stored


# ------------------------------------------------------------------------------ handlers
def _installation(payload: Mapping[str, Any], where: str) -> Mapping[str, Any]:
    inst = payload.get("installation")
    if not isinstance(inst, Mapping) or not isinstance(inst.get("id"), int):
        raise PayloadError(f"{where}: payload has no installation.id")
    return inst


def _repositories(payload: Mapping[str, Any], key: str, where: str) -> list[Mapping[str, Any]]:
    repos = payload.get(key) or []
    if not isinstance(repos, list):
        raise PayloadError(f"{where}: {key} is not a list")
    out = []
    for repo in repos:
        if not isinstance(repo, Mapping) or not isinstance(repo.get("full_name"), str):
            raise PayloadError(f"{where}: a repository in {key} has no full_name")
        out.append(repo)
    return out


def _time(value: Any) -> datetime | None:
    """A time as GitHub sends it in installation payloads: ISO 8601, or seconds since the
    epoch (`created_at`, `updated_at` in some events)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return datetime.fromtimestamp(value, UTC)
    if isinstance(value, str):
        try:
            return parse_datetime(value)
        except ValueError:
            return None
    return None


def _as_of(data: Mapping[str, Any]) -> datetime | None:
    """How recent the installation object of a payload is: its `updated_at` (or
    `created_at`), the later of the two."""
    times = [t for t in (_time(data.get("created_at")), _time(data.get("updated_at"))) if t]
    return max(times) if times else None


async def _received(session: AsyncSession, delivery_id: str | None) -> datetime:
    """When the delivery reached the inbox (a retry or a redelivery of the same id keeps
    it); now when it did not come through the inbox."""
    if delivery_id:
        when = await session.scalar(
            select(Delivery.received_at).where(Delivery.delivery_id == delivery_id))
        if when is not None:
            return when
    return utcnow()


async def _suspension_at_github(ctx: Any, installation_id: int) -> tuple[bool, datetime] | None:
    """Whether GitHub holds the installation suspended (GET /app/installations/{id}, as the
    app), and the time that state is known from: its `suspended_at`, or the time it was
    asked. None when it cannot say: no app credentials, or no such installation
    (uninstalled: its `deleted` event tells). Another failure raises: the delivery is retried."""
    github = getattr(ctx, "github", None)
    settings = getattr(ctx, "settings", None)
    if github is None or settings is None or not settings.has_app_credentials:
        return None
    import gidgethub

    asked = utcnow()
    try:
        app = await github.app_api()
        data = await app.getitem("/app/installations/{installation_id}",
                                 {"installation_id": int(installation_id)})
    except gidgethub.BadRequest as exc:
        if int(exc.status_code) == 404:
            return None
        raise
    if not isinstance(data, Mapping):
        return None
    if data.get("suspended_at"):
        return True, _time(data.get("suspended_at")) or asked
    return False, asked


VERIFY_LIMIT = 30  # repositories per delivery whose installation is asked of GitHub


async def _held_by(ctx: Any, names: list[str]) -> dict[str, int | None]:
    """For each repository named: the installation GitHub holds it in now (GET
    /repos/{owner}/{repo}/installation, as the app), None when none. Empty when it cannot
    say (no app credentials, nothing to ask, more than VERIFY_LIMIT: the payload is taken as
    it is). Another failure raises: the delivery is retried."""
    github = getattr(ctx, "github", None)
    settings = getattr(ctx, "settings", None)
    if (not names or len(names) > VERIFY_LIMIT or github is None or settings is None
            or not settings.has_app_credentials):
        return {}
    import gidgethub

    app = await github.app_api()
    held: dict[str, int | None] = {}
    for name in names:
        owner, _, repo = name.partition("/")
        try:
            data = await app.getitem("/repos/{owner}/{repo}/installation",
                                     {"owner": owner, "repo": repo})
        except gidgethub.BadRequest as exc:
            if int(exc.status_code) != 404:
                raise
            data = None
        iid = data.get("id") if isinstance(data, Mapping) else None
        held[name.lower()] = int(iid) if isinstance(iid, int) else None
    return held


async def _in_doubt(ctx: Any, iid: int, added: list[Mapping[str, Any]],
                    removed: list[Mapping[str, Any]]) -> dict[str, int | None]:
    """GitHub's answer for the repositories whose change this delivery may be stale about:
    GitHub does not promise delivery order, a redelivery repeats an old payload, and these
    payloads carry no time that moves with the repository selection. An added repository
    the stored rows say was removed from this installation (the add may be older than the
    removal), and every removed repository the rows link to it (the removal may be older than
    an add since)."""
    def key(repo: Mapping[str, Any]) -> str:
        return canonical_repo(str(repo["full_name"])).lower()

    if not (added or removed):
        return {}
    async with ctx.sessionmaker() as session:
        rows = {r.full_name.lower(): r for r in await session.scalars(select(Repository).where(
            func.lower(Repository.full_name).in_([key(r) for r in added + removed])))}
    doubt = [str(r["full_name"]) for r in added
             if (row := rows.get(key(r))) is not None and row.removed_installation_id == iid
             and row.installation_id != iid]
    doubt += [str(r["full_name"]) for r in removed
              if (row := rows.get(key(r))) is not None and row.installation_id == iid]
    return await _held_by(ctx, doubt)


def _set_suspended(inst: Installation, suspended: bool, as_of: datetime | None, *,
                   ending: bool = False) -> None:
    """Store the suspension state a payload dated `as_of` shows, unless the stored one is
    newer. `ending`: an `unsuspend`, which ends the suspension it follows, so an equal time
    is not older. Without a time it applies only where none is stored."""
    stored = inst.suspension_changed_at
    if stored is not None and (as_of is None or as_of < stored
                               or (as_of == stored and not ending)):
        return  # a state older than the stored one: a stale delivery
    inst.suspended = suspended
    if as_of is not None:
        inst.suspension_changed_at = as_of


async def _upsert_installation(
    session: AsyncSession, data: Mapping[str, Any], *, alive: bool = True,
    suspension: bool = True, delivery_id: str | None = None,
) -> Installation:
    """The Installation row with what the payload's installation object says. `alive`: an
    event that finds it installed (created, repositories added, ...) brings a deleted
    row back only when it is newer than the uninstall (its installation's times, or without
    them when the delivery reached the inbox). `suspension`: take the suspension state it
    shows (`suspended_at`), unless the stored one is newer."""
    account = data.get("account") if isinstance(data.get("account"), Mapping) else {}
    inst = await ensure_installation(session, data["id"], account)
    if account.get("login"):
        inst.account = str(account["login"])
    inst.account_type = account.get("type") or data.get("target_type") or inst.account_type
    as_of = _as_of(data)
    if suspension and "suspended_at" in data:
        since = _time(data.get("suspended_at"))
        if data.get("suspended_at"):
            _set_suspended(inst, True, since or as_of)
        else:
            _set_suspended(inst, False, as_of)
    if alive and inst.deleted and (
            inst.deleted_at is None
            or (as_of or await _received(session, delivery_id)) > inst.deleted_at):
        inst.deleted = False  # installed again after the uninstall
        inst.deleted_at = None
    return inst


def _listed_private(repo: Mapping[str, Any]) -> bool:
    return repo.get("private") is True or repo.get("visibility") in ("private", "internal")


async def _keep_private(session: AsyncSession, row: Repository, listed: Mapping[str, Any],
                        public_now: Collection[str] = ()) -> None:
    """A repository the installation lists as private: its row is marked and nothing of it
    is kept (bot/store/privacy.py). One listed public keeps its mark unless GitHub calls it
    public now (`public_now`, `_public_again`), as an installation event may be an old one;
    else `publicized`, the sync or the night lifts it."""
    from bot.store.privacy import forget_repository, publicize_repository

    if _listed_private(listed):
        await forget_repository(session, row.full_name, row.github_id)
    elif row.private and canonical_repo(str(listed["full_name"])).lower() in public_now:
        await publicize_repository(session, row.full_name, row.github_id)
        log.info("repository %s is public on GitHub: it may be stored again", row.full_name)


async def _forget_listed_private(session: AsyncSession, payload: Mapping[str, Any]) -> None:
    """`installation.deleted` lists the installation's repositories: the stored ones it calls
    private (their `privatized` lost) are forgotten and marked, as a listing of an installed
    one does (before, the uninstall left what was stored of them published: privacy61). A
    repository nothing was stored of gets no row."""
    from bot.store.privacy import forget_repository

    listed = payload.get("repositories")
    for repo in listed if isinstance(listed, list) else []:
        if not (isinstance(repo, Mapping) and isinstance(repo.get("full_name"), str)
                and _listed_private(repo)):
            continue
        rid = repo.get("id") if isinstance(repo.get("id"), int) else None
        name = canonical_repo(repo["full_name"])
        row = await session.scalar(select(Repository).where(
            (Repository.github_id == rid) if rid is not None
            else func.lower(Repository.full_name) == name.lower()))
        if row is None and rid is not None:
            row = await session.scalar(select(Repository).where(
                func.lower(Repository.full_name) == name.lower()))
        if row is not None and not row.private:
            await forget_repository(session, row.full_name, row.github_id or rid)


async def _public_again(ctx: Any, iid: int, listed: list[Mapping[str, Any]]) -> set[str]:
    """Of the repositories an installation event lists public whose stored row is marked
    private (made public while the app was not installed there: no `publicized` reached it),
    the lower-case names GitHub calls public now (GET /repos/{owner}/{repo}, as the
    installation; at most VERIFY_LIMIT). Before, the mark stayed until the night and the
    repository's deliveries stored nothing meanwhile (privacy61). An answer other than the
    repository leaves the mark; a 5xx or a rate limit retries the delivery."""
    github = getattr(ctx, "github", None)
    settings = getattr(ctx, "settings", None)
    public = {canonical_repo(str(r["full_name"])).lower(): r for r in listed
              if not _listed_private(r)}
    if not public or github is None or settings is None or not settings.has_app_credentials:
        return set()
    async with ctx.sessionmaker() as session:
        marked = set(await session.scalars(select(func.lower(Repository.full_name)).where(
            Repository.private.is_(True), func.lower(Repository.full_name).in_(sorted(public)))))
    if not marked:
        return set()
    from bot.webhooks.privacy import private_on_github

    gh = await github.api(iid)
    out: set[str] = set()
    for name in sorted(marked)[:VERIFY_LIMIT]:
        if await private_on_github(gh, str(public[name]["full_name"])) is False:
            out.add(name)
    return out


def _forget_written_repositories(ctx: Any) -> None:
    """bot.webhooks.events skips repository rows it already wrote; after an installation change they
    must be written again."""
    extras = getattr(ctx, "extras", None)
    if isinstance(extras, dict):
        extras.pop("events.repositories_written", None)


async def _start_preview(ctx: Any, repos: list[Mapping[str, Any]]) -> None:
    """Hand the added repositories to the preview (a background task when it must sync); a
    problem there is logged, never a reason to retry the delivery (its rows are committed)."""
    if not repos:
        return
    try:
        from bot.speaking.preview import preview_on_install

        await preview_on_install(ctx, [str(r["full_name"]) for r in repos])
    except Exception:  # noqa: BLE001
        log.exception("installation preview failed")


def _forget_token(ctx: Any, installation_id: int, action: str) -> None:
    """What the client holds of the installation after the event: `deleted` and `suspend`
    drop its token, its cached responses and the repositories mapped to it
    (`forget_installation`; a reinstall has a new id); `new_permissions_accepted` its token (it
    lacks the new permissions). `unsuspend`, `created`, `new_permissions_accepted` and
    `deleted` let it ask for a token again at once after GitHub refused one (suspended:
    `forget_refusal`; uninstalled, it then learns the installation is gone)."""
    github = getattr(ctx, "github", None)
    if github is None:
        return
    if action in ("deleted", "suspend") and hasattr(github, "forget_installation"):
        github.forget_installation(installation_id)
    elif action == "new_permissions_accepted" and hasattr(github, "invalidate_token"):
        github.invalidate_token(installation_id)
    if action in ("unsuspend", "created", "new_permissions_accepted", "deleted") and hasattr(
            github, "forget_refusal"):
        github.forget_refusal(installation_id)


async def handle_installation(payload: Mapping[str, Any], ctx: Any,
                              delivery_id: str | None = None) -> None:
    action = payload.get("action")
    where = f"installation.{action}"
    data = _installation(payload, where)
    iid = int(data["id"])
    # An unsuspend's payload does not date it: GitHub may leave the installation's updated_at
    # at the suspension's time, and a missed delivery redelivered (the nightly recovery,
    # GitHub's "Redeliver") reaches the inbox after a later suspension. GitHub's own state,
    # asked as the app, is what it ended; without app credentials, its arrival dates it.
    held = await _suspension_at_github(ctx, iid) if action == "unsuspend" else None
    listed = (_repositories(payload, "repositories", where)
              if action in ("created", "new_permissions_accepted", "unsuspend") else [])
    github_holds = await _in_doubt(ctx, iid, listed, [])
    public_now = await _public_again(ctx, iid, listed) if action != "suspend" else set()
    async with ctx.sessionmaker() as session:
        inst = await _upsert_installation(session, data, alive=action != "deleted",
                                          suspension=action not in ("suspend", "unsuspend"),
                                          delivery_id=delivery_id)
        if action == "deleted":
            inst.deleted = True
            inst.deleted_at = max(filter(None, (inst.deleted_at, _as_of(data)
                                                or await _received(session, delivery_id))))
            await session.execute(
                update(Repository).where(Repository.installation_id == iid).values(installation_id=None)
            )
            await _forget_listed_private(session, payload)
        elif action == "suspend":
            _set_suspended(inst, True, _time(data.get("suspended_at"))
                           or await _received(session, delivery_id))
        elif action == "unsuspend" and held is not None:
            # suspended: suspended again since, this unsuspend is an old one; not: unsuspended
            # as of the question (a later suspension's delivery is dated later)
            _set_suspended(inst, held[0], held[1], ending=not held[0])
        elif action == "unsuspend":
            # It ends the suspension it follows: dated by the installation's updated_at (which
            # GitHub may leave at the suspension's time) or, later, its arrival in the inbox.
            received = await _received(session, delivery_id)
            _set_suspended(inst, False, max(filter(None, (_as_of(data), received))),
                           ending=True)
        # (one removed since, GitHub says: a stale list)
        repos = [r for r in listed if github_holds.get(str(r["full_name"]).lower(), iid) == iid]
        for repo in repos:
            # a stale event about an uninstalled installation links nothing to it
            row = await upsert_repository(
                session, repo["full_name"], github_id=repo.get("id"),
                installation_id=None if inst.deleted else iid, installation_event=True,
            )
            await _keep_private(session, row, repo, public_now)
        await session.commit()
    _forget_written_repositories(ctx)
    _forget_token(ctx, iid, str(action))  # dead, refused, or lacking the new permissions
    log.info("installation %s %s", iid, action)
    if action == "new_permissions_accepted" and not inst.deleted:
        # What GitHub refused to let the app post is decided again now (limits65, left66).
        await answer_when_permitted(ctx, iid)
    if action == "created" and not inst.deleted:
        await _start_preview(ctx, [r for r in repos if not _listed_private(r)])


# What a refusal for a missing permission leaves owed, by the skip's kind: a command's reply
# (`{repo}#{n}:command:skip:not_permitted:{ref}`), and what the app posts unasked, the failure
# comment and the rule summary (`{repo}#{n}:{kind}:skip:not_permitted`).
OWED_WHEN_PERMITTED = ("command", "failure_comment", "rule_summary")


def _owed_skip(kind: str, key: str, code: str) -> bool:
    """A skip of `kind` whose once-only key says GitHub refused it with `code` (a command's
    carries its comment's id after the code; the comments' ends with it)."""
    mark = f":{kind}:skip:{code}"
    return f"{mark}:" in key if kind == "command" else key.endswith(mark)


async def answer_when_permitted(ctx: Any, installation_id: int,
                                repos: Collection[str] | None = None) -> list[str]:
    """The installation accepted new permissions (`new_permissions_accepted`): what GitHub
    refused to let the app post for a permission it lacked (skips `not_permitted`: a command's
    reply, a failure comment, a rule summary) is owed, and the deliveries that decided it are
    handled again (back to pending, a fresh set of attempts). The decision is made anew there,
    with its own checks: a failure comment or rule summary only on a thread still open,
    unlocked, with no comment of the app's of that kind (the claim's once-only key, the marker
    read live), and within the 48 hours after its opening that any first comment of the app
    has (`quiet.MAX_AGE`: past them it is noise on a thread people have moved on in; recorded
    `too_old`). Their skips go, so that the thread no longer says it was not posted (a
    refusal again records it again); so do those of a delivery waiting for its retry, which
    is not re-queued (its next attempt decides anew). Once: a delivery is handed back only from `done` or
    `failed`, so a redelivery of the acceptance, or two replicas handling it at once, hand it
    back once (its skip deleted by the one that did); and the decision posts at most once
    whatever runs it. A delivery whose payload was not kept (its repository made private
    since) is not. `repos`: only theirs (the repositories an `installation_repositories.added`
    covers again). Returns the delivery ids re-queued; raises HandBackWaits (the worker tries
    the delivery handing back again) when an owed delivery is still being handled (ops71: its
    finish would have left it done, passed by). A refusal recorded after this ran is the
    refusing delivery's to catch (bot.speaking.posting.record_refusal)."""
    from bot.speaking.posting import NOT_PERMITTED
    from bot.store.privacy import EMPTIED_PAYLOAD

    only = None if repos is None else {r.lower() for r in repos}
    async with ctx.sessionmaker() as session:
        skips = [a for a in await session.scalars(select(Action).where(
                     Action.kind.in_(OWED_WHEN_PERMITTED), Action.status == "skipped",
                     Action.dedupe_key.contains(f":skip:{NOT_PERMITTED[0]}", autoescape=True)))
                 if _owed_skip(a.kind, a.dedupe_key or "", NOT_PERMITTED[0])
                 and (only is None or a.repo.lower() in only)
                 and (a.details or {}).get("installation") == int(installation_id)
                 and (a.details or {}).get("delivery")]
        deliveries = sorted({str(a.details["delivery"]) for a in skips})
        if not deliveries:
            return []
        table = Delivery.__table__
        result = await session.execute(
            update(table).where(table.c.delivery_id.in_(deliveries),
                                table.c.status.in_(("done", "failed")),
                                table.c.payload != EMPTIED_PAYLOAD)
            .values(status="pending", attempts=0, next_attempt_at=None, claimed_by=None)
            .returning(table.c.delivery_id))
        requeued = set(result.scalars().all())
        # Waiting for a retry (or given back): its next attempt decides anew, so its skip goes
        # as a re-queued one's does; kept, it said "not posted" beside a comment its retry
        # posted, and a later hand-back took the delivery again for it (left76).
        waiting = set(await session.scalars(select(table.c.delivery_id).where(
            table.c.delivery_id.in_(sorted(set(deliveries) - requeued)),
            table.c.status == "pending", table.c.payload != EMPTIED_PAYLOAD)))
        # (one statement: two hand-backs at once may both delete a waiting one's skip)
        await session.execute(delete(Action).where(Action.id.in_(
            [a.id for a in skips if str(a.details["delivery"]) in requeued | waiting])))
        # Being handled now: not handed back (the worker's finish would set it done over it).
        in_flight = sorted(set(await session.scalars(select(table.c.delivery_id).where(
            table.c.delivery_id.in_(sorted(set(deliveries) - requeued)),
            table.c.status == "processing"))))
        await session.commit()
    if requeued:
        log.info("installation %s accepted new permissions: %d deliveries handled again (the "
                 "replies and comments GitHub refused)", installation_id, len(requeued))
    if in_flight:
        raise HandBackWaits(installation_id, in_flight)
    return sorted(requeued)


class HandBackWaits(Exception):
    """A delivery owed a new decision (its refusal recorded) is still being handled: it was
    passed by, and stayed unanswered once it finished (ops71). The delivery handing back is
    tried again (the worker reads `retry_after`: 0, its own backoff, 5 s at first) and hands
    it back then; what it did already is done again as a no-op."""

    retry_after = 0.0

    def __init__(self, installation_id: int, deliveries: list[str]) -> None:
        super().__init__(f"installation {installation_id}: {len(deliveries)} deliveries owed a "
                         f"new decision are still being handled ({', '.join(deliveries[:3])}); "
                         "handed back on the next attempt")
        self.deliveries = deliveries


async def handle_installation_repositories(payload: Mapping[str, Any], ctx: Any,
                                           delivery_id: str | None = None) -> None:
    action = payload.get("action")
    where = f"installation_repositories.{action}"
    data = _installation(payload, where)
    iid = int(data["id"])
    added = _repositories(payload, "repositories_added", where)
    removed = _repositories(payload, "repositories_removed", where)
    github_holds = await _in_doubt(ctx, iid, added, removed)
    public_now = await _public_again(ctx, iid, added)
    async with ctx.sessionmaker() as session:
        inst = await _upsert_installation(session, data, alive=bool(added),
                                          delivery_id=delivery_id)
        added = [r for r in added if github_holds.get(str(r["full_name"]).lower(), iid) == iid]
        for repo in added:  # (an add older than its removal: GitHub no longer holds it here)
            # a stale event about an uninstalled installation links nothing to it
            row = await upsert_repository(session, repo["full_name"], github_id=repo.get("id"),
                                          installation_id=None if inst.deleted else iid,
                                          installation_event=True)
            await _keep_private(session, row, repo, public_now)
        for repo in removed:
            if github_holds.get(str(repo["full_name"]).lower()) == iid:
                continue  # a removal older than an add since: GitHub holds it here
            row = await upsert_repository(session, repo["full_name"], github_id=repo.get("id"))
            if row.installation_id in (iid, None):
                row.installation_id = None
                row.removed_installation_id = iid
            # listed private (its `privatized` lost): forgotten now, as an added one is; no
            # event or listing names it after this (privacy61)
            await _keep_private(session, row, repo)
        await session.commit()
    _forget_written_repositories(ctx)
    log.info("installation %s: %d repositories added, %d removed", iid, len(added), len(removed))
    if action == "added" and not inst.deleted and added:
        # GitHub's refusal "not accessible by integration" is also its answer for a
        # repository the installation no longer covered: covered again, what it refused is
        # decided again, as after accepted permissions (left66).
        await answer_when_permitted(ctx, iid, [str(r["full_name"]) for r in added])
    if action == "added" and not inst.deleted:
        await _start_preview(ctx, [r for r in added if not _listed_private(r)])


async def handle_installation_target(payload: Mapping[str, Any], ctx: Any) -> None:
    """The account the app is installed on was renamed."""
    data = _installation(payload, f"installation_target.{payload.get('action')}")
    account = payload.get("account")
    async with ctx.sessionmaker() as session:
        inst = await ensure_installation(session, data["id"], account if isinstance(account, Mapping) else None)
        if isinstance(account, Mapping) and account.get("login"):
            inst.account = str(account["login"])
        await session.commit()


async def handle_repository_renamed(payload: Mapping[str, Any], ctx: Any) -> None:
    """`repository.renamed` / `.transferred`: the row (found by GitHub's id) takes the new
    name at once, its threads with it (upsert_repository; a row a sync made under the new name
    is merged). Before, the event had no handler: the old name stayed until a thread delivery
    named the new one."""
    where = f"repository.{payload.get('action')}"
    data = payload.get("repository")
    if (not isinstance(data, Mapping) or not isinstance(data.get("id"), int)
            or not isinstance(data.get("full_name"), str) or "/" not in data["full_name"]):
        raise PayloadError(f"{where}: payload has no repository id and full_name")
    updated = data.get("updated_at")
    async with ctx.sessionmaker() as session:
        await upsert_repository(session, data["full_name"], github_id=int(data["id"]),
                                seen_at=parse_datetime(updated) if isinstance(updated, str) else None)
        await session.commit()
    _forget_written_repositories(ctx)
    log.info("repository %s is %s now", data["id"], canonical_repo(data["full_name"]))


@router.register("repository", action="renamed")
@router.register("repository", action="transferred")
async def on_repository_renamed(event: sansio.Event, ctx: Any) -> None:
    await handle_repository_renamed(event.data, ctx)


@router.register("installation")
async def on_installation(event: sansio.Event, ctx: Any) -> None:
    await handle_installation(event.data, ctx, event.delivery_id)


@router.register("installation_repositories")
async def on_installation_repositories(event: sansio.Event, ctx: Any) -> None:
    await handle_installation_repositories(event.data, ctx, event.delivery_id)


@router.register("installation_target")
async def on_installation_target(event: sansio.Event, ctx: Any) -> None:
    await handle_installation_target(event.data, ctx)
