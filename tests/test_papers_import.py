"""The paper pool: import of arXiv bulk metadata and paper records, and arXiv API listings."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from sqlalchemy import select

from bot.cli import main
from bot.github.papers import (
    bare_arxiv_id,
    fetch_new_papers,
    parse_atom,
    read_json_lines,
    upsert_papers,
)
from bot.store.models import Paper
from bot.store.types import utcnow
from tests.fakegithub import no_sleep

ARXIV_LINES = [
    {"id": "2503.14476", "submitter": "X", "authors": "A, B",
     "title": "DAPO: An Open-Source LLM Reinforcement Learning\n  System at Scale",
     "categories": "cs.LG cs.CL", "abstract": "...",
     "versions": [{"version": "v1", "created": "Tue, 18 Mar 2025 17:49:06 GMT"},
                  {"version": "v2", "created": "Tue, 20 May 2025 10:00:00 GMT"}],
     "update_date": "2025-05-20"},
    {"id": "hep-th/9901001", "title": "An old-style identifier", "categories": "hep-th",
     "versions": [], "update_date": "1999-01-04"},
    {"id": "not an id", "title": "skipped"},
]
CONTRACT_LINES = [
    {"arxiv_id": "2503.14476", "title": "DAPO: An Open-Source LLM Reinforcement Learning System at Scale",
     "aliases": ["DAPO"], "method": "clip-higher", "first_public": "2025-03-18"},
    {"arxiv_id": None, "title": "A blog post without an arXiv id", "aliases": ["BlogRL"],
     "method": None, "first_public": None},
]


def test_bare_ids() -> None:
    assert bare_arxiv_id("arXiv:2503.14476v2") == "2503.14476"
    assert bare_arxiv_id("http://arxiv.org/abs/2402.03300v3") == "2402.03300"
    assert bare_arxiv_id("HEP-TH/9901001v1") == "hep-th/9901001"
    assert bare_arxiv_id("25.1447") is None and bare_arxiv_id("") is None


def _write(path: Path, objects: list[Any], extra: str = "") -> Path:
    path.write_text("\n".join(json.dumps(o) for o in objects) + "\n" + extra, encoding="utf-8")
    return path


def test_import_command_both_formats_upserts(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("DATABASE_URL", db_url)
    # the id that is not arXiv's and the line that is not JSON are named, the others imported
    assert main(["papers", "import", str(_write(tmp_path / "a.jsonl", ARXIV_LINES, "{not json\n"))]) == 1
    out, err = capsys.readouterr()
    assert json.loads(out.strip().splitlines()[-1]) == {"added": 2, "updated": 0, "unchanged": 0, "skipped": 2}
    assert "line 3: id is not an arXiv identifier: 'not an id'; skipped" in err
    assert "line 4: not valid JSON" in err
    assert main(["papers", "import", str(_write(tmp_path / "b.jsonl", CONTRACT_LINES))]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1]) == {
        "added": 1, "updated": 1, "unchanged": 0, "skipped": 0}
    assert main(["papers", "import", str(tmp_path / "b.jsonl")]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["unchanged"] == 2


async def test_records_are_stored_as_given(ctx: Any) -> None:
    lines = [json.dumps(o) for o in ARXIV_LINES + CONTRACT_LINES]
    await upsert_papers(ctx, read_json_lines(lines))
    async with ctx.sessionmaker() as session:
        papers = {p.arxiv_id: p for p in await session.scalars(select(Paper))}
    dapo = papers["2503.14476"]
    assert dapo.title == "DAPO: An Open-Source LLM Reinforcement Learning System at Scale"
    assert dapo.first_public == "2025-03-18" and dapo.aliases == ["DAPO"] and dapo.method == "clip-higher"
    assert dapo.categories == "cs.LG cs.CL"
    assert papers["hep-th/9901001"].first_public == "1999-01-04"
    assert papers[None].title == "A blog post without an arXiv id"


def test_import_names_every_line_it_skips(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Lines that cannot be papers were dropped without a word (exit 0): each is named with
    its reason on stderr, every other line is imported, and the exit status is 1. A field of
    the wrong type or too long for its column used to stop the import (a traceback; on
    PostgreSQL the batch with it was lost), and one alias given as a string became one alias
    per letter."""
    monkeypatch.setenv("DATABASE_URL", db_url)
    lines = [
        {"arxiv_id": "2402.03300", "title": "DeepSeekMath", "aliases": "GRPO"},   # 1 kept
        {"aliases": ["NoName"], "method": None},                                    # 2 nothing to key
        {"title": 2402.03300},                                                      # 3 not a string
        {"arxiv_id": "2501.00001", "title": "Long method", "method": "m" * 65},      # 4 column is 64
        {"arxiv_id": "2501.00002", "title": "Bad date", "first_public": "spring"},  # 5
        {"arxiv_id": "2501.00003", "title": "A timestamp", "first_public": "2025-01-02T10:00:00Z"},  # 6 kept
        {"arxiv_id": "arXiv:nope", "title": "Bad id"},                              # 7
        ["a", "list"],                                                              # 8
        {"id": None, "title": "A paper record with an empty id"},                   # 9 kept
    ]
    path = tmp_path / "pool.jsonl"
    path.write_text("\ufeff" + "\n".join(json.dumps(o) for o in lines) + "\n\n", encoding="utf-8")
    assert main(["papers", "import", str(path)]) == 1
    out, err = capsys.readouterr()
    assert json.loads(out) == {"added": 3, "updated": 0, "unchanged": 0, "skipped": 6}
    assert [line.split(":")[1].strip() for line in err.splitlines()] == [
        "line 2", "line 3", "line 4", "line 5", "line 7", "line 8"]
    assert "line 2: neither an arxiv_id nor a title; skipped" in err
    assert "line 3: title is not a string" in err
    assert "line 4: method is longer than 64 characters" in err
    assert "line 5: first_public is not a date (YYYY-MM-DD, YYYY-MM or YYYY): 'spring'" in err
    assert "line 8: not a JSON object" in err

    async def stored() -> dict[str | None, Paper]:
        from bot.config import Settings
        from bot.context import AppContext

        ctx = AppContext.create(Settings.from_env())
        try:
            async with ctx.sessionmaker() as session:
                return {p.arxiv_id: p for p in await session.scalars(select(Paper))}
        finally:
            await ctx.close()

    import asyncio

    papers = asyncio.run(stored())
    assert set(papers) == {"2402.03300", "2501.00003", None}
    assert papers["2402.03300"].aliases == ["GRPO"]
    assert papers["2501.00003"].first_public == "2025-01-02"


def test_a_line_that_is_not_utf8_is_skipped_not_the_import(
        db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """One Latin-1 byte in a pool file stopped the import with a traceback ("this is a bug"),
    and the lines read before it, not yet committed, were lost."""
    monkeypatch.setenv("DATABASE_URL", db_url)
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(b'{"arxiv_id": "2501.00011", "title": "Before"}\r\n'
                     b'{"arxiv_id": "2501.00012", "title": "Caf\xe9"}\n'
                     b'{"arxiv_id": "2501.00013", "title": "After \xc3\xa9t\xc3\xa9"}\n')
    assert main(["papers", "import", str(path)]) == 1
    out, err = capsys.readouterr()
    assert json.loads(out) == {"added": 2, "updated": 0, "unchanged": 0, "skipped": 1}
    assert err == "rltracker papers import: line 2: not UTF-8 text (byte 41); skipped\n"


async def test_large_import_is_batched(ctx: Any) -> None:
    lines = (json.dumps({"id": f"2501.{i:05d}", "title": f"Paper {i}", "categories": "cs.LG",
                         "versions": [], "update_date": "2025-01-02"}) for i in range(3000))
    stats = await upsert_papers(ctx, read_json_lines(lines))
    assert stats.added == 3000


def atom_feed(entries: list[tuple[str, str, str]]) -> str:
    """A response in the arXiv API's format: (id with version, title, published)."""
    items = "".join(f"""
  <entry>
    <id>http://arxiv.org/abs/{ident}</id>
    <updated>{published}</updated>
    <published>{published}</published>
    <title>{title}</title>
    <summary>We study reinforcement learning for language models.</summary>
    <author><name>Someone</name></author>
    <link href="http://arxiv.org/abs/{ident}" rel="alternate" type="text/html"/>
    <arxiv:primary_category xmlns:arxiv="http://arxiv.org/schemas/atom" term="cs.CL" scheme="http://arxiv.org/schemas/atom"/>
    <category term="cs.LG" scheme="http://arxiv.org/schemas/atom"/>
    <category term="cs.CL" scheme="http://arxiv.org/schemas/atom"/>
  </entry>""" for ident, title, published in entries)
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">
  <link href="http://arxiv.org/api/query" rel="self" type="application/atom+xml"/>
  <title type="html">ArXiv Query: search_query=cat:cs.LG</title>
  <id>http://arxiv.org/api/abc</id>
  <updated>2026-12-02T00:00:00-05:00</updated>
  <opensearch:totalResults xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">{len(entries)}</opensearch:totalResults>
  <opensearch:startIndex xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">0</opensearch:startIndex>
  <opensearch:itemsPerPage xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">100</opensearch:itemsPerPage>{items}
</feed>
"""


_RANGE = re.compile(r"submittedDate:\[(\d{8})\d* TO (\d{8})\d*\]")


def fake_arxiv(fake_github: Any, entries: list[tuple[str, str, str]]) -> list[dict[str, str]]:
    """Serve `entries` (id, title, published) at /api/query as arXiv's API does: the
    query's `submittedDate:[FROM TO TO]` range, `sortOrder` ascending or descending by
    submission date, `start` and `max_results`. The queries asked are returned."""
    seen: list[dict[str, str]] = []

    @fake_github.route("GET", r"^/api/query$")
    def listing(fake: Any, request: Any, match: Any, body: Any) -> web.Response:
        query = dict(request.query)
        seen.append(query)
        chosen = list(entries)
        bounds = _RANGE.search(query.get("search_query", ""))
        if bounds:
            low, high = bounds.groups()
            chosen = [e for e in chosen if low <= e[2][:10].replace("-", "") <= high]
        chosen.sort(key=lambda e: (e[2], e[0]), reverse=query.get("sortOrder") != "ascending")
        start, size = int(query.get("start", 0)), int(query.get("max_results", 10))
        return web.Response(text=atom_feed(chosen[start:start + size]),
                            content_type="application/atom+xml")

    return seen


def test_parse_atom() -> None:
    records = parse_atom(atom_feed([("2512.01234v2", "Stable\n   GRPO &amp; friends", "2025-12-01T18:00:00Z")]))
    assert records == [{"arxiv_id": "2512.01234", "title": "Stable GRPO & friends", "aliases": [],
                        "method": None, "first_public": "2025-12-01", "categories": "cs.CL cs.LG",
                        "source": "arxiv-api"}]


async def test_fetch_reads_new_listings_until_known(ctx: Any, fake_github: Any) -> None:
    today = utcnow().date()
    days = [(today.toordinal() - n) for n in range(0, 30)]
    from datetime import date

    stamp = [date.fromordinal(d).isoformat() + "T12:00:00Z" for d in days]
    # A full page (100 entries) spread over 30 days.
    entries = [(f"2512.{i:05d}v1", f"Paper {i}", stamp[i % 30]) for i in range(100)]
    seen = fake_arxiv(fake_github, entries)
    stats = await fetch_new_papers(ctx, base_url=fake_github.url + "/api/query", sleep=no_sleep)
    # Only the last seven days are new on a first run (asked as a submittedDate range,
    # oldest first: a run cut by the page limit is taken up by the next; sched61).
    recent = [e for e in entries if e[2][:10] >= date.fromordinal(today.toordinal() - 7).isoformat()]
    assert stats.added == len(recent) and len(seen) == 1
    query = seen[0]["search_query"]
    assert "cat:cs.LG" in query and "cat:cs.CL" in query and "cat:cs.AI" in query
    assert seen[0]["sortBy"] == "submittedDate" and seen[0]["sortOrder"] == "ascending"
    assert "submittedDate:[" in query


async def test_a_title_with_a_capital_beyond_ascii_is_found_again(ctx: Any) -> None:
    """Papers without an arXiv id are matched by title, ignoring case. SQLite's lower() folds
    only ASCII letters, so on SQLite a title with another capital (Ω, É) was never found
    again and each import of the same file added it once more (PostgreSQL found it)."""
    lines = [json.dumps({"title": "Ω-Learning: Élan for RL", "aliases": ["OmegaRL"]}),
             json.dumps({"title": "A plain title"})]
    await upsert_papers(ctx, read_json_lines(lines))
    again = await upsert_papers(ctx, read_json_lines(lines))
    async with ctx.sessionmaker() as session:
        titles = sorted(p.title for p in await session.scalars(select(Paper)))
    assert titles == ["A plain title", "Ω-Learning: Élan for RL"]
    assert again.as_dict() == {"added": 0, "updated": 0, "unchanged": 2}
    # Another case of its ASCII letters is the same paper too (its title is taken, as always).
    cased = await upsert_papers(ctx, read_json_lines([json.dumps({"title": "Ω-LEARNING: ÉLAN FOR RL"})]))
    assert cased.as_dict() == {"added": 0, "updated": 1, "unchanged": 0}


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        # the subject class is not part of an old-style id: arXiv's metadata says math/0601001
        ("math.PR/0601001", "math/0601001"),
        ("arXiv:math.PR/0601001v2", "math/0601001"),
        ("https://arxiv.org/abs/cs.LG/0112017", "cs/0112017"),
        # written with a space after the prefix, or as a link without a scheme or to a PDF
        ("arXiv: 2503.14476", "2503.14476"),
        ("arxiv.org/abs/2503.14476v1", "2503.14476"),
        ("https://arxiv.org/pdf/2503.14476v2.pdf", "2503.14476"),
        # shaped like an id, but no month 13 and no five-digit numbers before 2015
        ("2513.12345", None),
        ("1412.69801", None),
        ("xx/0112017", None),
    ],
)
def test_bare_ids_are_the_ids_threads_link_to(given: str, expected: str | None) -> None:
    assert bare_arxiv_id(given) == expected


def test_a_nul_or_a_lone_surrogate_in_a_paper_does_not_stop_the_import(
        db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A NUL (PostgreSQL's text cannot hold one) or a lone UTF-16 surrogate escaped in a line
    (a title cut mid-pair; no UTF-8 encoder writes one) reached the database as it was: the
    batch holding it failed with a traceback ("this is a bug") and every paper of it, the good
    ones too, was lost. They are stored as U+FFFD, as the app stores thread texts."""
    monkeypatch.setenv("DATABASE_URL", db_url)
    path = tmp_path / "pool.jsonl"
    path.write_text(
        '{"arxiv_id": "2501.00021", "title": "Before"}\n'
        '{"arxiv_id": "2501.00022", "title": "Nul\\u0000Title", "aliases": ["N\\u0000L"]}\n'
        '{"arxiv_id": "2501.00023", "title": "Cut \\ud83d", "method": "m\\udc00"}\n'
        '{"arxiv_id": null, "title": "No id \\u0000 here", "categories": "cs.LG\\u0000"}\n'
        '{"arxiv_id": "2501.00024", "title": "After"}\n', encoding="utf-8")
    assert main(["papers", "import", str(path)]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == {"added": 5, "updated": 0, "unchanged": 0, "skipped": 0}, err

    async def stored() -> dict[str, Paper]:
        from bot.config import Settings
        from bot.context import AppContext

        ctx = AppContext.create(Settings.from_env())
        try:
            async with ctx.sessionmaker() as session:
                return {p.title: p for p in await session.scalars(select(Paper))}
        finally:
            await ctx.close()

    import asyncio

    papers = asyncio.run(stored())
    assert set(papers) == {"Before", "Nul\ufffdTitle", "Cut \ufffd", "No id \ufffd here", "After"}
    assert papers["Nul\ufffdTitle"].aliases == ["N\ufffdL"]
    assert papers["Cut \ufffd"].method == "m\ufffd"
    assert papers["No id \ufffd here"].categories == "cs.LG\ufffd"


@pytest.mark.parametrize("encoding", ["utf-16", "utf-32"])
def test_a_pool_in_utf16_or_utf32_is_named_not_skipped_line_by_line(
        db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], encoding: str) -> None:
    """Windows PowerShell 5 writes `>` and Out-File as UTF-16 with a byte-order mark. Such a
    pool was read line by line as UTF-8: "line 1: not UTF-8 text", then "not valid JSON" for
    every line, and one line more skipped than the file has papers, nothing said of why. It is
    refused whole, saying its encoding and how to convert it (exit 2, as `analyze` does)."""
    monkeypatch.setenv("DATABASE_URL", db_url)
    path = tmp_path / "pool.jsonl"
    path.write_bytes("\r\n".join(json.dumps(o) for o in CONTRACT_LINES).encode(encoding))
    assert main(["papers", "import", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"rltracker papers import: {path} is {encoding.upper()} ")
    assert "iconv" in err and "skipped" not in err


async def test_a_time_with_an_offset_is_read_on_its_utc_day(ctx: Any) -> None:
    """`first_public` written as a time with an offset (left65): `2025-01-01T00:00:00+05:00`
    is 2024-12-31 in UTC, the day every other paper date is read on (the bulk metadata's
    RFC 2822 times, arXiv's listings, the fetch's window); it was stored as 2025-01-01, the
    day before the offset was taken off. A bare date and a naive time stay as written; the
    same in an arXiv listing's `published`."""
    given = {"2501.00001": "2025-01-01T00:00:00+05:00", "2501.00002": "2025-01-01T22:30:00-05:00",
             "2501.00003": "2025-01-01", "2501.00004": "2025-01-01T23:59:59"}
    lines = [json.dumps({"arxiv_id": i, "title": f"Paper {i}", "first_public": d})
             for i, d in given.items()]
    await upsert_papers(ctx, read_json_lines(lines))
    async with ctx.sessionmaker() as session:
        stored = {p.arxiv_id: p.first_public for p in await session.scalars(select(Paper))}
    assert stored == {"2501.00001": "2024-12-31", "2501.00002": "2025-01-02",
                      "2501.00003": "2025-01-01", "2501.00004": "2025-01-01"}
    [listing] = parse_atom(atom_feed([("2501.00005v1", "Late", "2025-01-01T21:00:00-05:00")]))
    assert listing["first_public"] == "2025-01-02"
    [undated] = parse_atom(atom_feed([("2501.00006v1", "Undated", "soon")]))
    assert undated["first_public"] is None
