"""The paper pool: `rltracker papers import FILE` and `rltracker papers fetch`.

import: JSON lines, either arXiv's bulk metadata (`id`, `title`, `categories`, `versions`,
`update_date`, ...) or the paper contract (`arxiv_id`, `title`, `aliases`, `method`,
`first_public`). Upserted by arXiv id (papers without one, by title), in batches, so pools of
tens of thousands of papers import in seconds. A line that cannot be a paper (not JSON, no
id and no title, an id that is not arXiv's, a field of the wrong type or too long for its
column) is named with its reason on stderr and skipped; every other line is imported, and
the exit status is 1 (0 when no line was skipped). A file in UTF-16 or UTF-32 (its byte-order
mark says so) is refused whole, exit 2, saying how to convert it. Texts hold what no database
stores (a NUL, a lone surrogate) as U+FFFD.

fetch: new listings from the arXiv API (Atom XML, parsed with xml.etree) for the RL-relevant
part of cs.LG, cs.CL and cs.AI, submitted since the newest one stored (a day of overlap; a
week on the first run), OLDEST first, at most MAX_PAGES pages a run. A run cut by that limit
(after a long gap) has stored the older part, so the next run goes on from where it stopped;
read newest first, the older part was never fetched (the next run started from the newest
stored date; sched61). The base
URL is $RLTRACKER_ARXIV_API_URL (default the public export API), so tests serve a recorded
response. arXiv asks API clients to wait 3 s between calls; the wait is injectable.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import os
import re
import sys
import xml.etree.ElementTree as ET
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import func, insert, or_, select

from analyzers.arxiv import normalise_arxiv_id
from analyzers.study import public_date
from bot.files import BadJsonLine, json_line
from bot.store.models import Paper
from bot.store.types import parse_datetime, storable_text

log = logging.getLogger(__name__)

DEFAULT_ARXIV_API = "https://export.arxiv.org/api/query"
DEFAULT_CATEGORIES = ("cs.LG", "cs.CL", "cs.AI")
# Only the RL post-training part of those busy categories is worth pooling.
TOPIC_QUERY = ('abs:"reinforcement learning" OR abs:RLHF OR abs:RLVR OR '
               'abs:"policy optimization" OR abs:GRPO OR abs:PPO')
PAGE_SIZE = 100
MAX_PAGES = 10
ARXIV_DELAY = 3.0
ARXIV_ATTEMPTS = 3  # answers of 503 / 429 / 5xx in a row for one page before the fetch stops
ARXIV_MAX_WAIT = 120.0  # seconds: the longest Retry-After waited for
BATCH = 1000
MAX_SKIPS_SHOWN = 50  # lines named on stderr; the count covers them all
ATOM = "{http://www.w3.org/2005/Atom}"
ARXIV_NS = "{http://arxiv.org/schemas/atom}"

_SPACES = re.compile(r"\s+")
_REDUCED_DATE = re.compile(r"\d{4}(?:-\d{2})?")  # a first_public of a year or a month
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def bare_arxiv_id(value: str | None) -> str | None:
    """'arXiv:2503.14476v2', 'http://arxiv.org/abs/hep-th/9901001v1' -> bare id; else None.

    The id threads are linked by (analyzers.arxiv): a valid month and digit count, and an
    old-style id without its subject class ("math.PR/0601001" is math/0601001)."""
    return normalise_arxiv_id(value)


def _clean_title(title: str | None) -> str:
    return _SPACES.sub(" ", title or "").strip()


def _rfc2822_date(value: str | None) -> str | None:
    if not value:
        return None
    try:
        return email.utils.parsedate_to_datetime(value).astimezone(UTC).date().isoformat()
    except (TypeError, ValueError):
        return None


class SkippedLine(ValueError):
    """A line of an import that cannot be a paper: the reason, for the user."""


def _text(obj: dict[str, Any], key: str, limit: int | None = None) -> str | None:
    """The string under `key` (None when absent or empty), with what no database stores (a
    NUL: PostgreSQL's text refuses it; a lone surrogate escaped in the line: no UTF-8 encoder
    writes it) as U+FFFD, as thread texts are stored. They reached the database as they were,
    and the batch holding one failed with a traceback, its good papers lost with it."""
    value = obj.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise SkippedLine(f"{key} is not a string")
    if limit is not None and len(value) > limit:
        raise SkippedLine(f"{key} is longer than {limit} characters")
    return storable_text(value)


def _utc_date(value: str) -> str:
    """YYYY-MM-DD of an ISO 8601 date or time; a time with an offset on its UTC day
    (`2025-01-01T00:00:00+05:00` is 2024-12-31), as `_rfc2822_date` reads the bulk metadata's
    and the fetch compares them (left65: it took the day before the offset, a day late or
    early beside the same paper's date read from arXiv). ValueError when it is neither."""
    parsed = parse_datetime(value)
    if parsed is None:
        raise ValueError(value)
    return parsed.astimezone(UTC).date().isoformat()


def _first_public(value: str | None) -> str | None:
    """A date YYYY-MM-DD (a longer ISO timestamp is its UTC date), or one known only to the
    month or the year (`2025-08`, `2025`: ISO 8601's reduced precision) as written: the
    catalog's methods and the study read them so (analyzers.study.public_date), and the
    shared evaluation pool holds them; such a paper was skipped (contract66)."""
    if value is None:
        return None
    if _REDUCED_DATE.fullmatch(value.strip()) and public_date(value) is not None:
        return value.strip()
    try:
        return _utc_date(value)
    except ValueError:
        raise SkippedLine(f"first_public is not a date (YYYY-MM-DD, YYYY-MM or YYYY): "
                          f"{value[:40]!r}") from None


def record_from_json(obj: dict[str, Any]) -> dict[str, Any]:
    """One JSON object -> paper values (contract keys + categories, source); raises
    SkippedLine with the reason when it cannot be one."""
    categories = _text(obj, "categories", 255)
    if "arxiv_id" in obj or obj.get("id") in (None, ""):
        given = _text(obj, "arxiv_id")
        arxiv_id = bare_arxiv_id(given)
        if given and arxiv_id is None:
            raise SkippedLine(f"arxiv_id is not an arXiv identifier: {given[:40]!r}")
        title = _clean_title(_text(obj, "title"))
        if not title and not arxiv_id:
            raise SkippedLine("neither an arxiv_id nor a title")
        aliases = obj.get("aliases")
        if isinstance(aliases, str):
            aliases = [aliases]  # one alias written as a string
        elif aliases is None:
            aliases = []
        if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
            raise SkippedLine("aliases is not a list of strings")
        return {
            "arxiv_id": arxiv_id, "title": title,
            "aliases": [storable_text(a).strip() for a in aliases if a.strip()],
            "method": _text(obj, "method", 64), "first_public": _first_public(_text(obj, "first_public")),
            "categories": categories, "source": "contract",
        }
    given = obj["id"]
    arxiv_id = bare_arxiv_id(str(given))
    if arxiv_id is None:
        raise SkippedLine(f"id is not an arXiv identifier: {str(given)[:40]!r}")
    versions = obj.get("versions") or []
    first = _rfc2822_date(versions[0].get("created")) if isinstance(versions, list) and versions \
        and isinstance(versions[0], dict) else None
    return {
        "arxiv_id": arxiv_id, "title": _clean_title(_text(obj, "title")), "aliases": [],
        "method": None, "first_public": first or _first_public(_text(obj, "update_date")),
        "categories": categories, "source": "arxiv-metadata",
    }


def read_json_lines(lines: Iterable[str | bytes], skipped: list[tuple[int, str]] | None = None
                    ) -> Iterator[dict[str, Any]]:
    """Paper values of each line (text, or bytes read from a file: a line that is not UTF-8
    is skipped, not the whole import); a line that cannot be one is appended to `skipped`
    as (line number, reason) and the next is read. Blank lines are not records."""
    for number, raw in enumerate(lines, 1):
        try:
            if isinstance(raw, bytes):
                try:
                    raw = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise SkippedLine(f"not UTF-8 text (byte {exc.start + 1})") from None
            line = raw.strip()
            if number == 1:
                line = line.removeprefix("\ufeff").strip()  # a byte-order mark (Windows tools)
            if not line:
                continue
            try:
                obj = json_line(line)
            except BadJsonLine as exc:  # (one too deep stopped the import: contract66)
                raise SkippedLine(str(exc)) from None
            if not isinstance(obj, dict):
                raise SkippedLine("not a JSON object")
            record = record_from_json(obj)
        except SkippedLine as exc:
            log.debug("papers: line %d skipped: %s", number, exc)
            if skipped is not None:
                skipped.append((number, str(exc)))
            continue
        yield record


@dataclass
class ImportStats:
    added: int = 0
    updated: int = 0
    unchanged: int = 0

    def as_dict(self) -> dict[str, int]:
        return {"added": self.added, "updated": self.updated, "unchanged": self.unchanged}


async def upsert_papers(ctx: Any, records: Iterable[dict[str, Any]]) -> ImportStats:
    """Adds new papers and fills in or updates known ones; aliases are merged, not replaced."""
    stats = ImportStats()
    batch: list[dict[str, Any]] = []
    for record in records:
        batch.append(record)
        if len(batch) >= BATCH:
            await _upsert_batch(ctx, batch, stats)
            batch = []
    if batch:
        await _upsert_batch(ctx, batch, stats)
    return stats


async def _upsert_batch(ctx: Any, batch: list[dict[str, Any]], stats: ImportStats) -> None:
    # Later lines win within a batch, as they would one line at a time, and are counted as
    # they would be then: updated when they change the paper, else unchanged (they were
    # counted nowhere, the printed counts one short per paper given twice: contract66).
    by_key: dict[str, dict[str, Any]] = {}
    for r in batch:
        key = r["arxiv_id"] or "title:" + r["title"].lower()
        if key in by_key:
            before = by_key[key]
            merged = {**before, **{k: v for k, v in r.items() if v not in (None, [], "")}}
            merged["aliases"] = sorted(set(before["aliases"]) | set(r["aliases"]))
            if any(merged[k] != before[k] for k in ("title", "method", "first_public",
                                                     "categories")) \
                    or set(merged["aliases"]) != set(before["aliases"]):
                stats.updated += 1
            else:
                stats.unchanged += 1
            by_key[key] = merged
        else:
            by_key[key] = r
    async with ctx.sessionmaker() as session:
        ids = [r["arxiv_id"] for r in by_key.values() if r["arxiv_id"]]
        # SQLite's lower() folds only ASCII letters ("Ω-Learning" stays "Ω-learning"), where
        # PostgreSQL's and Python's fold all: both spellings are looked up, or SQLite never
        # found a stored title with another capital and added it again at each import.
        titles = sorted({t for r in by_key.values() if not r["arxiv_id"]
                         for t in (r["title"].lower(), r["title"].translate(_ASCII_LOWER))})
        existing: dict[str, Paper] = {}
        if ids:
            for p in await session.scalars(select(Paper).where(Paper.arxiv_id.in_(ids))):
                existing[p.arxiv_id or ""] = p
        if titles:
            for p in await session.scalars(select(Paper).where(
                    Paper.arxiv_id.is_(None), func.lower(Paper.title).in_(titles))):
                existing["title:" + p.title.lower()] = p
        new_rows = []
        for key, r in by_key.items():
            row = existing.get(key)
            if row is None:
                new_rows.append({k: r[k] for k in ("arxiv_id", "title", "aliases", "method",
                                                   "first_public", "categories", "source")})
                continue
            changed = False
            for k in ("title", "method", "first_public", "categories"):
                if r.get(k) and getattr(row, k) != r[k]:
                    setattr(row, k, r[k])
                    changed = True
            aliases = sorted(set(row.aliases or []) | set(r["aliases"]))
            if aliases != sorted(row.aliases or []):
                row.aliases = aliases
                changed = True
            if changed:
                stats.updated += 1
            else:
                stats.unchanged += 1
        if new_rows:
            await session.execute(insert(Paper), new_rows)
            stats.added += len(new_rows)
        await session.commit()


# ---------------------------------------------------------------------------- arXiv API
def parse_atom(text: str | bytes) -> list[dict[str, Any]]:
    """An arXiv API Atom feed -> paper records (newest first, as served)."""
    root = ET.fromstring(text)
    records = []
    for entry in root.findall(f"{ATOM}entry"):
        arxiv_id = bare_arxiv_id((entry.findtext(f"{ATOM}id") or "").strip())
        title = _clean_title(entry.findtext(f"{ATOM}title"))
        if arxiv_id is None or not title or title.lower() == "error":
            continue
        try:
            published: str | None = _utc_date(entry.findtext(f"{ATOM}published") or "")
        except ValueError:  # (none, or no date: the listing is kept undated, as before)
            published = None
        categories = [c.get("term") for c in entry.findall(f"{ATOM}category") if c.get("term")]
        primary = entry.find(f"{ARXIV_NS}primary_category")
        if primary is not None and primary.get("term") in categories:
            categories.remove(primary.get("term"))
            categories.insert(0, primary.get("term"))
        records.append({
            "arxiv_id": arxiv_id, "title": title, "aliases": [], "method": None,
            "first_public": published, "categories": " ".join(categories) or None,
            "source": "arxiv-api",
        })
    return records


def arxiv_query(categories: Iterable[str], since: str | None = None, until: str | None = None) -> str:
    """The search query; with `since` (and `until`), dates YYYY-MM-DD, only listings
    submitted from the start of `since` to the end of `until` (arXiv's submittedDate range)."""
    cats = " OR ".join(f"cat:{c}" for c in categories)
    query = f"({cats}) AND ({TOPIC_QUERY})"
    if since is not None:
        low, high = since.replace("-", ""), (until or "9999-12-31").replace("-", "")
        query += f" AND submittedDate:[{low}0000 TO {high}2359]"
    return query


async def fetch_new_papers(
    ctx: Any,
    categories: Iterable[str] = DEFAULT_CATEGORIES,
    *,
    base_url: str | None = None,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    max_pages: int = MAX_PAGES,
    session: Any = None,
) -> ImportStats:
    """Reads the listings submitted since the newest paper already fetched (a day of
    overlap), oldest first, at most `max_pages` pages: a run cut by the limit is taken up by
    the next one from the newest date it stored."""
    import aiohttp

    base = base_url or os.environ.get("RLTRACKER_ARXIV_API_URL") or DEFAULT_ARXIV_API
    async with ctx.sessionmaker() as db:
        newest = await db.scalar(select(func.max(Paper.first_public)).where(Paper.source == "arxiv-api"))
    # A day of overlap: the API's dates are submission dates, listings appear a day later.
    since = ((datetime.fromisoformat(newest) - timedelta(days=1)).date().isoformat() if newest
             else (datetime.now(UTC) - timedelta(days=7)).date().isoformat())
    until = (datetime.now(UTC) + timedelta(days=1)).date().isoformat()  # (a clock a little behind)
    cats = list(categories) or DEFAULT_CATEGORIES
    query = arxiv_query(cats, since, until)
    # The listings of the window already stored come first (oldest first): when they alone
    # would fill the run (a day of more listings than one run reads), every run read the same
    # first MAX_PAGES pages of that day again and never the rest. The run then starts at
    # their last page (read again: a listing that appeared late among them shifts the rest).
    async with ctx.sessionmaker() as db:
        known = int(await db.scalar(select(func.count()).select_from(Paper).where(
            Paper.source == "arxiv-api", Paper.first_public >= since, Paper.first_public <= until,
            or_(*[Paper.categories.like(f"%{c}%") for c in cats]))) or 0)
    first_page = max(0, known - PAGE_SIZE) // PAGE_SIZE if known + PAGE_SIZE > max_pages * PAGE_SIZE else 0
    own = session is None
    http = session or aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60))
    found: list[dict[str, Any]] = []
    try:
        for page in range(first_page, first_page + max_pages):
            if page > first_page:
                await sleep(ARXIV_DELAY)
            params = {"search_query": query, "sortBy": "submittedDate", "sortOrder": "ascending",
                      "start": str(page * PAGE_SIZE), "max_results": str(PAGE_SIZE)}
            records = parse_atom(await _get_page(http, base, params, sleep))
            found += [r for r in records if (r["first_public"] or "") >= since]
            if len(records) < PAGE_SIZE:
                break
        else:
            log.info("papers: %d pages read; the next fetch goes on from %s", max_pages,
                     max((r["first_public"] or "" for r in found), default=since))
    except Exception:
        # The pages read before the error are stored (they were all dropped): read oldest
        # first, the next fetch goes on from the newest date stored.
        if found:
            kept = await upsert_papers(ctx, found)
            log.warning("papers: the fetch stopped after %d listings (%s stored)", len(found),
                        kept.as_dict())
        raise
    finally:
        if own:
            await http.close()
    return await upsert_papers(ctx, found)


async def _get_page(http: Any, base: str, params: dict[str, str],
                    sleep: Callable[[float], Awaitable[None]]) -> bytes:
    """One page of the API. arXiv answers 503 (or 429) with Retry-After when loaded: asked
    again after the wait it asks (at most ARXIV_MAX_WAIT seconds, else ARXIV_DELAY doubled),
    ARXIV_ATTEMPTS times in all; one such answer failed the whole fetch."""
    for attempt in range(1, ARXIV_ATTEMPTS + 1):
        async with http.get(base, params=params) as resp:
            if resp.status in (429, 500, 502, 503, 504) and attempt < ARXIV_ATTEMPTS:
                after = resp.headers.get("Retry-After", "")
                wait = (min(float(after), ARXIV_MAX_WAIT) if after.strip().isdigit()
                        else ARXIV_DELAY * 2 ** attempt)
                log.warning("papers: arXiv answered %d; asking again in %.0f s", resp.status, wait)
            else:
                resp.raise_for_status()
                return await resp.read()
        await sleep(wait)
    raise AssertionError("unreachable")


def papers_command(args: Any) -> int:
    """`rltracker papers import FILE` | `rltracker papers fetch [--category C]...`."""
    from bot.config import Settings
    from bot.context import AppContext

    skipped: list[tuple[int, str]] = []

    async def main(lines: Iterable[bytes] | None) -> int:
        ctx = AppContext.create(Settings.from_env())
        try:
            if lines is not None:
                stats = await upsert_papers(ctx, read_json_lines(lines, skipped))
            else:
                stats = await fetch_new_papers(ctx, args.category or DEFAULT_CATEGORIES)
        finally:
            await ctx.close()
        for number, reason in skipped[:MAX_SKIPS_SHOWN]:
            print(f"rltracker papers import: line {number}: {reason}; skipped", file=sys.stderr)
        if len(skipped) > MAX_SKIPS_SHOWN:
            print(f"rltracker papers import: ... and {len(skipped) - MAX_SKIPS_SHOWN} more lines "
                  "skipped", file=sys.stderr)
        print(json.dumps({**stats.as_dict(), "skipped": len(skipped)} if lines is not None
                         else stats.as_dict()))
        # 1: every other line was imported, the skipped ones need a look (as `analyze`).
        return 1 if skipped else 0

    if args.papers_command != "import":
        return asyncio.run(main(None))
    if args.file == "-":
        if _not_utf8(sys.stdin.buffer, "<stdin>"):
            return 2
        return asyncio.run(main(sys.stdin.buffer))
    with open(args.file, "rb") as fh:  # read as the import goes, not all at once
        if _not_utf8(fh, args.file):
            return 2
        return asyncio.run(main(fh))


def _not_utf8(stream: Any, name: str) -> bool:
    """Whether `stream` is in UTF-16 or UTF-32 (its byte-order mark says so), said on stderr:
    read line by line as UTF-8, every line of it was skipped as "not UTF-8" or "not valid JSON"
    (one more than it has papers), nothing said of why. Reads nothing (peek)."""
    from bot.files import encoding_problem

    peek = getattr(stream, "peek", None)
    problem = encoding_problem(peek(4)[:4], name) if peek is not None else None
    if problem:
        print(f"rltracker papers import: {problem}", file=sys.stderr)
    return problem is not None
