"""Running the analyzers for the app: off the event loop, with the stored paper pool.

Owns the process's analysis thread, the PaperIndex cache of the Paper table and the saved
paper indexes (files in the cache directory, read in one go at start instead of rebuilt).
Imports the store and analyzers only, so both the pipeline and what speaks (the install
preview) use it; the database modules are imported where used, so `rltracker analyze`
(which only needs the saved-index files) starts without them.
"""

from __future__ import annotations

import hashlib
import logging
import marshal
import os
import tempfile
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

    from analyzers.papers import PaperIndex

log = logging.getLogger(__name__)

POOL_CACHE_KEY = "paper_pool"

# The analyzers are CPU-bound and synchronous. Run on the event loop they would stall
# /webhook answers and the worker's lease heartbeat for the length of each analysis; one
# dedicated thread keeps the loop responsive, and being a single thread it never runs two
# analyses at once (the spaCy pipeline and the caches are shared, process-wide objects).
# Everything of the app that reaches spaCy runs here, the rule summaries too: spaCy imported
# by two threads at once fails ("partially initialized module"), as a page asking for a
# framework's rules while the analyzers warmed up did.
_ANALYSIS_THREAD = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rltracker-analysis")


def on_analysis_thread(fn: Callable[..., Any], *args: Any) -> Awaitable[Any]:
    """`fn(*args)` on the analysis thread, awaited from the running event loop."""
    import asyncio  # here: `rltracker analyze` imports this module and needs no event loop

    return asyncio.get_running_loop().run_in_executor(_ANALYSIS_THREAD, fn, *args)


def load_analyzers(pool: PaperIndex | None = None) -> None:
    """Import the analyzers and load what they load lazily (catalog, spaCy pipeline, pattern
    tables, the catalog's paper index, and `pool`'s) by analysing one tiny thread."""
    from analyzers.analyze import analyze_thread

    analyze_thread({"id": "warm/up#0", "repo": "warm/up", "number": 0, "kind": "issue",
                    "title": "warm-up", "body": "warm-up", "state": "open", "comments": []},
                   pool)


async def warm_up() -> None:
    """Pay the analyzers' start-up cost (1-2 s) on the analysis thread, once, so the first
    delivery does not pay it on the event loop (imports there would stall /webhook)."""
    await on_analysis_thread(load_analyzers)


# Why GitHub may show a comment hidden (comment_record's `minimized_reason`, the sync's
# reading of GraphQL minimizedReason) that makes it no part of the thread's discussion: its
# words are nobody's reply, concern, closing note or paper. Hidden as outdated, resolved or a
# duplicate, a comment was part of it (a reply made, a concern raised and since dealt with, a
# remark said twice): the analyzers read it, as the labelled threads hold such comments.
HIDDEN_FROM_ANALYSIS = frozenset({"spam", "abuse", "off-topic"})


def hidden_from_discussion(comment: dict[str, Any]) -> bool:
    """A comment GitHub shows hidden as spam, abuse or off-topic (HIDDEN_FROM_ANALYSIS): no
    part of the thread's discussion. The one rule: the analyzers' input (`analysis_input`)
    and the app's speaking decisions (bot.speaking.quiet: who replied, a maintainer
    answered) both read it here."""
    return comment.get("minimized_reason") in HIDDEN_FROM_ANALYSIS


def analysis_input(record: dict[str, Any]) -> dict[str, Any]:
    """What the analyzers read of a stored thread: its opening post and comments without
    `/rltracker` command lines, and without the comments that were nothing but commands (a command is addressed to
    the app: its words are no report wording, and a maintainer's command is no reply), nor
    those GitHub shows hidden as spam, abuse or off-topic (HIDDEN_FROM_ANALYSIS). The
    contract's shape: `minimized_reason` is left out of the comments kept."""
    from bot.command_syntax import only_commands, without_commands

    comments = record.get("comments") or []
    kept = []
    changed = False
    for c in comments:
        if "minimized_reason" in c:
            changed = True
            if hidden_from_discussion(c):
                continue
            c = {k: v for k, v in c.items() if k != "minimized_reason"}
        body = c.get("body") or ""
        text = without_commands(body)
        if text == body:
            kept.append(c)
            continue
        changed = True
        if not only_commands(body):
            kept.append({**c, "body": text})
    out = {**record, "comments": kept} if changed else record
    body = record.get("body")
    if isinstance(body, str) and (text := without_commands(body)) != body:
        out = {**out, "body": text}  # the opening post's command lines too (ignore, stop)
    return out


async def run_analysis(record: dict[str, Any], pool: Any = None) -> dict[str, Any]:
    """analyze_thread of `analysis_input(record)` off the event loop, on the process's one
    analysis thread."""
    from analyzers.analyze import analyze_thread

    return await on_analysis_thread(analyze_thread, analysis_input(record), pool)


async def run_analyses(records: list[dict[str, Any]], pool: Any = None) -> list[dict[str, Any]]:
    """analyze_thread of each record, in ONE hop to the analysis thread (a worker's batch)."""
    from analyzers.analyze import analyze_thread

    def analyse_all() -> list[dict[str, Any]]:
        return [analyze_thread(analysis_input(record), pool) for record in records]

    if not records:
        return []
    return await on_analysis_thread(analyse_all)


# ---- saved indexes -------------------------------------------------------------------------
def read_saved_index(path: Path, header: bytes = b"") -> PaperIndex | None:
    """The index saved at `path` after `header`, or None when there is none, or it is damaged
    or was saved by another version (then it is rebuilt and saved over)."""
    from analyzers.papers import PaperIndex

    try:
        data = path.read_bytes()
    except OSError:
        return None
    if not data.startswith(header):
        return None
    try:
        return PaperIndex.loads(data[len(header):])
    except ValueError as exc:
        log.warning("saved paper index %s not used: %s", path, exc)
        return None


def save_index(path: Path, index: PaperIndex, header: bytes = b"") -> None:
    """Write `header` + the index, atomically (a reader sees the old file or the new one).
    A cache that cannot be written only costs the next start a rebuild."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(header)
                fh.write(index.dumps())
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError as exc:
        log.warning("could not save the paper index to %s: %s", path, exc)


# ---- the Paper table's index ---------------------------------------------------------------
def _pool_file(database_url: str) -> Path:
    from bot.config import cache_dir

    name = hashlib.sha256(database_url.encode()).hexdigest()[:24]
    return cache_dir() / f"paper-pool-{name}.idx"


def _rows_digests(rows: list[tuple[Any, ...]]) -> list[str]:
    """digests[n]: the digest of the first n rows (in id order): an index built from them is
    reused for a table they still start, and only the rows after them are added."""
    h = hashlib.sha256()
    out = [h.hexdigest()]
    for row in rows:
        h.update(marshal.dumps(row))
        out.append(h.hexdigest())
    return out


def _paper_dict(row: tuple[Any, ...]) -> dict[str, Any]:
    _id, arxiv_id, title, aliases, method, first_public = row
    return {"arxiv_id": arxiv_id, "title": title, "aliases": list(aliases or []),
            "method": method, "first_public": first_public}


def _index_for_rows(
    rows: list[tuple[Any, ...]], cached: tuple[int, str, PaperIndex] | None, path: Path | None
) -> tuple[PaperIndex, str, bool]:
    """(index of `rows`, its digest, whether it was built or added to). Reuses, in order: the
    in-memory index, the saved file, each when `rows` starts with the rows it was built from
    (then only the rest are added); else builds from scratch."""
    from analyzers.papers import PaperIndex

    digests = _rows_digests(rows)

    def known() -> Iterator[tuple[int, str, PaperIndex]]:
        if cached is not None:
            yield cached
        saved = _read_pool_file(path) if path is not None else None  # read only if needed
        if saved is not None:
            yield saved

    for n, digest, index in known():
        if n <= len(rows) and digests[n] == digest:
            if n < len(rows):
                index.add_papers(_paper_dict(r) for r in rows[n:])
            return index, digests[-1], n < len(rows)
    return PaperIndex.build(_paper_dict(r) for r in rows), digests[-1], True


def _read_pool_file(path: Path) -> tuple[int, str, PaperIndex] | None:
    try:
        with path.open("rb") as fh:
            first = fh.readline()
    except OSError:
        return None
    try:
        n_s, digest = first.decode().split()
        n = int(n_s)
    except ValueError:
        return None
    index = read_saved_index(path, first)
    return None if index is None else (n, digest, index)


def _pool_header(n: int, digest: str) -> bytes:
    return f"{n} {digest}\n".encode()


@cache
def _pool_key_statement() -> Any:
    """SELECT count(id), max(id) FROM papers, built once (a worker asks it for every batch)."""
    from sqlalchemy import func, select

    from bot.store.models import Paper

    return select(func.count(Paper.id), func.max(Paper.id))


async def paper_pool(session: AsyncSession, cache: dict[str, Any] | None) -> Any:
    """The PaperIndex of the catalog plus the Paper table. Per process: kept in `cache` and
    looked at again only when the table's row count or newest id changed. Across processes:
    saved in the cache directory, keyed by the database and checked against a digest of the
    rows, so a process that starts reads it instead of building it (seconds of CPU for
    100,000 papers), and papers added since (sync, import) are added to it, not rebuilt.
    None when the table is empty: the analyzers then use their cached catalog-only index."""
    from sqlalchemy import select

    from bot.store.models import Paper

    count, newest = (await session.execute(_pool_key_statement())).one()
    if not count:
        return None
    key = (count, newest)
    cached = (cache or {}).get(POOL_CACHE_KEY)
    if cached is not None and cached[0] == key:
        return cached[1]
    rows = [tuple(r) for r in await session.execute(
        select(Paper.id, Paper.arxiv_id, Paper.title, Paper.aliases, Paper.method,
               Paper.first_public).order_by(Paper.id)
    )]
    engine = getattr(session.get_bind(), "engine", None)
    url = engine.url.render_as_string(hide_password=True) if engine is not None else ":memory:"
    path = _pool_file(url) if ":memory:" not in url else None
    previous = cached[2] if cached is not None and len(cached) > 2 else None

    def index_and_save() -> tuple[PaperIndex, str]:
        index, digest, changed = _index_for_rows(rows, previous, path)
        if changed and path is not None:
            save_index(path, index, _pool_header(len(rows), digest))
        return index, digest

    # Seconds of CPU for a large pool: on the analysis thread, not the event loop (and never
    # beside an analysis that reads the index being added to).
    index, digest = await on_analysis_thread(index_and_save)
    if cache is not None:
        cache[POOL_CACHE_KEY] = (key, index, (len(rows), digest, index))
    return index
