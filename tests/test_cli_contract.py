"""The command line against the data contracts (../shared/contracts/README.md): hostile and
malformed input to the commands that read files (analyze, papers import, replay, rules), and
every record `rltracker analyze` writes checked against the contract's `analysis` shape."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from bot.cli import main
from bot.store.models import Paper

REPO_ROOT = Path(__file__).resolve().parent.parent
THREAD = {"id": "o/r#1", "repo": "o/r", "number": 1, "kind": "issue", "state": "open",
          "title": "Entropy collapses after 40 steps",
          "body": "During training the entropy drops to zero.", "comments": []}


def _lines(path: Path, objects: list[Any], extra: str = "") -> Path:
    path.write_text("".join(json.dumps(o, ensure_ascii=False) + "\n" for o in objects) + extra,
                    encoding="utf-8")
    return path


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


async def _stored_papers(db_url: str) -> dict[str | None, Paper]:
    from bot.store.db import make_engine, make_sessionmaker

    engine = make_engine(db_url)
    try:
        async with make_sessionmaker(engine)() as session:
            return {p.arxiv_id: p for p in await session.scalars(select(Paper))}
    finally:
        await engine.dispose()


# --- first_public as the catalog and the study read it --------------------------------------

REDUCED = [{"arxiv_id": "2508.00001", "title": "A method first public in a month",
            "aliases": [], "method": None, "first_public": "2025-08"},
           {"arxiv_id": "2501.00002", "title": "A method first public in a year",
            "aliases": [], "method": None, "first_public": "2025"},
           {"arxiv_id": "2503.00003", "title": "A method first public on a day",
            "aliases": [], "method": None, "first_public": "2025-03-18"}]


async def test_papers_import_keeps_a_first_public_of_a_month_or_a_year(
        db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """ISO 8601's reduced precision (`2025-08`, `2025`), as the catalog's methods and the
    shared evaluation pool write a date known only to the month: each such paper was skipped,
    "first_public is not a date YYYY-MM-DD", exit 1 (10 of the shared pool's 142)."""
    monkeypatch.setenv("DATABASE_URL", db_url)
    bad = [dict(REDUCED[0], arxiv_id="2508.00004", first_public="2025-13"),
           dict(REDUCED[0], arxiv_id="2508.00005", first_public="18/03/2025")]
    path = _lines(tmp_path / "pool.jsonl", REDUCED + bad)
    assert await _in_thread(main, ["papers", "import", str(path)]) == 1
    out, err = capsys.readouterr()
    assert json.loads(out.splitlines()[-1]) == {"added": 3, "updated": 0, "unchanged": 0,
                                                "skipped": 2}
    assert "line 4: first_public is not a date" in err and "line 5: first_public" in err
    assert "line 1" not in err and "line 2" not in err
    stored = await _stored_papers(db_url)
    assert {k: stored[k].first_public for k in ("2508.00001", "2501.00002", "2503.00003")} == {
        "2508.00001": "2025-08", "2501.00002": "2025", "2503.00003": "2025-03-18"}


def test_analyze_takes_a_pool_with_a_first_public_of_a_month(tmp_path: Path) -> None:
    """The same pool given to `analyze --papers` was refused whole (exit 2, no analysis)."""
    pool = _lines(tmp_path / "pool.jsonl", REDUCED)
    thread = dict(THREAD, body='We tried "A method first public in a month" and it collapsed.')
    src = _lines(tmp_path / "in.jsonl", [thread])
    out = tmp_path / "out.jsonl"
    assert main(["analyze", "--no-cache", "--papers", str(pool), str(src), "-o", str(out)]) == 0
    assert [p["arxiv_id"] for p in _rows(out)[0]["papers"]] == ["2508.00001"]


def test_analyze_takes_the_shared_evaluation_pool(shared_dir: Path, tmp_path: Path) -> None:
    """The contract's paper pool as ../shared/eval holds it is accepted as --papers."""
    pool = shared_dir / "eval" / "papers.jsonl"
    if not pool.is_file():
        pytest.skip("no shared paper pool")
    src = _lines(tmp_path / "in.jsonl", [THREAD])
    out = tmp_path / "out.jsonl"
    assert main(["analyze", "--no-cache", "--papers", str(pool), str(src), "-o", str(out)]) == 0
    assert _rows(out)[0]["id"] == "o/r#1"


async def _in_thread(func: Any, *args: Any) -> Any:
    """A command (which runs its own event loop) called from an async test."""
    import asyncio

    return await asyncio.to_thread(func, *args)


# --- a line nested too deeply, a line cut short ----------------------------------------------

DEEP = "[" * 100_000 + "]" * 100_000


async def test_papers_import_skips_a_line_nested_too_deeply_and_imports_the_others(
        db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A line of valid JSON nested deeper than Python's decoder goes stopped the import with
    a RecursionError traceback ("this is a bug"), exit 1: the papers read before it in the
    same batch were never stored, nor any after it."""
    monkeypatch.setenv("DATABASE_URL", db_url)
    path = _lines(tmp_path / "pool.jsonl", [REDUCED[2]], DEEP + "\n" + json.dumps(REDUCED[0]) + "\n")
    assert await _in_thread(main, ["papers", "import", str(path)]) == 1
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "bug" not in err
    assert "line 2: JSON nested too deeply to read; skipped" in err
    assert json.loads(out.splitlines()[-1])["added"] == 2
    assert set(await _stored_papers(db_url)) == {"2503.00003", "2508.00001"}


def test_a_line_cut_short_is_named_where_it_ends(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """A record cut short (a write interrupted, `head -c`) was said to be wrong "at column 1":
    the line's own line feed made the decoder count a second line. The column is where the
    line ends, and the message says it ends there; every message says where (the decoder's
    "Unterminated string starting at" was printed with nothing after it)."""
    good = json.dumps(THREAD)
    cut = good[:40]
    src = tmp_path / "in.jsonl"
    src.write_text(good + "\n" + cut + "\n" + '{"id": "o/r#3", "title": "unterminated\n' + good
                   + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    assert main(["analyze", str(src), "-o", str(out)]) == 1
    rows = _rows(out)
    assert [r.get("line") for r in rows] == [None, 2, 3, None]
    assert rows[1]["error"] == (f"line 2: not valid JSON (Expecting value: the line ends at "
                                f"column {len(cut)}, cut short?)")
    assert rows[2]["error"] == ("line 3: not valid JSON (Unterminated string starting at "
                                "column 26: the line ends at column 38, cut short?)")
    err = capsys.readouterr().err
    assert "column 1:" not in err and "column 1)" not in err


def test_a_pool_line_cut_short_is_named_where_it_ends(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    pool = tmp_path / "pool.jsonl"
    pool.write_text(json.dumps(REDUCED[2]) + '\n{"arxiv_id": "2503.1447', encoding="utf-8")
    src = _lines(tmp_path / "in.jsonl", [THREAD])
    assert main(["analyze", "--no-cache", "--papers", str(pool), str(src)]) == 2
    assert capsys.readouterr().err == (
        f"rltracker analyze: --papers {pool} line 2: not valid JSON (Unterminated string "
        "starting at column 14: the line ends at column 23, cut short?)\n")


async def test_papers_import_names_the_column_and_a_number_too_long(
        db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """papers import said "not valid JSON (Unterminated string starting at)", and of an
    integer past Python's digit limit told the user to call sys.set_int_max_str_digits()."""
    monkeypatch.setenv("DATABASE_URL", db_url)
    path = _lines(tmp_path / "pool.jsonl", [REDUCED[2]],
                  '{"arxiv_id": "2503.1447\n{"arxiv_id": "2503.00009", "n": ' + "9" * 5000 + "}\n")
    assert await _in_thread(main, ["papers", "import", str(path)]) == 1
    err = capsys.readouterr().err
    assert ("line 2: not valid JSON (Unterminated string starting at column 14: the line ends "
            "at column 23, cut short?); skipped") in err
    assert "line 3: a number too long to read (more than 4300 digits); skipped" in err
    assert "set_int_max_str_digits" not in err


# --- replay --fresh: payloads it cannot re-time are sent as they are ------------------------

async def test_replay_fresh_sends_every_payload_whatever_it_holds(
        ctx: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--fresh re-times every payload before the first is sent: one nested deeper than the
    decoder goes (RecursionError) or holding an escaped lone surrogate (a title GitHub cut
    mid-pair: "\\ud83d", which json.dumps(ensure_ascii=False) cannot encode as UTF-8)
    stopped the replay with a traceback ("this is a bug"), nothing sent. The first is sent
    unchanged, as a file that is not JSON is; the second re-timed, its surrogate escaped as
    it came."""
    import asyncio

    from aiohttp.test_utils import TestClient, TestServer

    from bot.app import create_app
    from bot.store.models import Delivery

    folder = tmp_path / "issues"
    folder.mkdir()
    example = REPO_ROOT / "examples" / "issues" / "opened.failure-en.json"
    (folder / "a.json").write_bytes(example.read_bytes())
    (folder / "b.json").write_text(DEEP, encoding="utf-8")
    payload = json.loads(example.read_text(encoding="utf-8"))
    payload["issue"]["title"] = "Entropy collapses \ud83d"
    (folder / "c.json").write_text(json.dumps(payload), encoding="utf-8")  # escaped: \\ud83d
    async with TestClient(TestServer(create_app(ctx, worker=False))) as client:
        url = str(client.make_url("/webhook"))
        code = await asyncio.to_thread(main, ["replay", str(folder), "--url", url,
                                              "--secret", "test-secret", "--fresh"])
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "bug" not in err
    assert code == 1 and "summary: 202: 2, 400: 1" in out, (out, err)
    async with ctx.sessionmaker() as session:
        rows = list(await session.scalars(select(Delivery).order_by(Delivery.id)))
    assert len(rows) == 2
    sent = json.loads(rows[1].payload) if isinstance(rows[1].payload, str) else rows[1].payload
    assert sent["issue"]["title"] in ("Entropy collapses \ufffd", "Entropy collapses \ud83d")
    assert sent["issue"]["created_at"] != payload["issue"]["created_at"]  # re-timed


# --- every record analyze writes, against the contract's `analysis` shape --------------------

FAILURE_KEYS = ("entropy_collapse", "entropy_explosion", "collapse_or_divergence",
                "rollout_training_mismatch", "response_length_drift", "stale_rollout_data",
                "kl_growth", "moe_instability", "groups_without_signal", "other_failure")
REVIEW_STATES = ("merged", "open_no_reply", "open_replied", "declined", "redirected", "lapsed",
                 "closed_by_author", "closed_other")
CONCERN_KEYS = ("design_or_interface", "tests_or_docs", "maintenance_burden", "evidence",
                "placement", "demand", "already_covered", "other")
# The contract's bare identifier: new style without version, or old style `cs/0112017`.
ARXIV_ID = re.compile(r"\d{4}\.\d{4,5}|[a-z]+(?:-[a-z]+)*/\d{7}")


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def contract_problems(a: Any) -> list[str]:
    """Where record `a` departs from the contract's `analysis` (README, "analysis"): each
    required key with its type and allowed values, and the optional keys the project adds
    (failure evidence, counter_evidence, analyzer_version) with theirs when present."""
    if not isinstance(a, dict):
        return ["not an object"]
    problems: list[str] = []

    def need(ok: bool, what: str) -> None:
        if not ok:
            problems.append(what)

    optional_top = {"analyzer_version"}
    need(set(a) >= {"id", "failure", "papers", "proposal", "review"}, f"keys {sorted(a)}")
    need(set(a) <= {"id", "failure", "papers", "proposal", "review"} | optional_top,
         f"a key the contract does not name: {sorted(set(a) - {'id', 'failure', 'papers', 'proposal', 'review'} - optional_top)}")
    need(isinstance(a.get("id"), str), "id is a string")
    if "analyzer_version" in a:
        need(isinstance(a["analyzer_version"], str) and bool(a["analyzer_version"]),
             "analyzer_version is a string")
    f = a.get("failure")
    if isinstance(f, dict):
        need(set(f) >= {"is_failure_report", "category", "categories", "confidence"},
             f"failure keys {sorted(f)}")
        need(set(f) <= {"is_failure_report", "category", "categories", "confidence", "evidence",
                        "counter_evidence"}, f"failure keys {sorted(f)}")
        need(isinstance(f.get("is_failure_report"), bool), "failure.is_failure_report is a bool")
        need(f.get("category") is None or f.get("category") in FAILURE_KEYS,
             f"failure.category {f.get('category')!r}")
        cats = f.get("categories")
        need(isinstance(cats, list) and all(c in FAILURE_KEYS for c in cats)
             and len(set(cats)) == len(cats), f"failure.categories {cats!r}")
        need((f.get("category") is not None) == bool(f.get("is_failure_report")),
             "failure.category is null exactly when it is no failure report")
        if f.get("category") is not None and isinstance(cats, list):
            need(cats[:1] == [f["category"]], "failure.categories starts with the main category")
        need(_number(f.get("confidence")) and 0.0 <= f["confidence"] <= 1.0,
             f"failure.confidence {f.get('confidence')!r}")
        for key in ("evidence", "counter_evidence"):
            if key in f:
                need(isinstance(f[key], list) and all(isinstance(x, str) for x in f[key]),
                     f"failure.{key} is a list of strings")
    else:
        problems.append("failure is an object")
    papers = a.get("papers")
    if isinstance(papers, list):
        seen: set[str] = set()
        for i, p in enumerate(papers):
            if not isinstance(p, dict):
                problems.append(f"papers[{i}] is an object")
                continue
            need(set(p) == {"arxiv_id", "title", "method", "how", "score"},
                 f"papers[{i}] keys {sorted(p)}")
            aid = p.get("arxiv_id")
            need(aid is None or (isinstance(aid, str) and bool(ARXIV_ID.fullmatch(aid))),
                 f"papers[{i}].arxiv_id {aid!r} is a bare identifier or null")
            # (a string; empty for an identifier the pool and the catalog do not hold, the
            # only case where the title is not known)
            need(isinstance(p.get("title"), str)
                 and (bool(p["title"].strip()) or (p.get("how") == "arxiv_id" and bool(aid))),
                 f"papers[{i}].title is a string, empty only for an unknown identifier")
            need(p.get("method") is None or isinstance(p.get("method"), str),
                 f"papers[{i}].method is a string or null")
            need(p.get("how") in ("arxiv_id", "title", "method_name"), f"papers[{i}].how")
            need(_number(p.get("score")) and 0.0 <= p["score"] <= 1.0, f"papers[{i}].score")
            key = aid or str(p.get("title")).lower()
            need(key not in seen, f"papers[{i}] once each: {key!r} again")
            seen.add(key)
    else:
        problems.append("papers is a list")
    pr = a.get("proposal")
    need(isinstance(pr, dict) and set(pr) == {"is_proposal", "confidence"}
         and isinstance(pr.get("is_proposal"), bool) and _number(pr.get("confidence"))
         and 0.0 <= pr["confidence"] <= 1.0, f"proposal {pr!r}")
    r = a.get("review")
    need(isinstance(r, dict) and set(r) == {"state", "replied_from_other", "concerns"},
         f"review keys {sorted(r) if isinstance(r, dict) else r!r}")
    if isinstance(r, dict):
        need(r.get("state") in REVIEW_STATES, f"review.state {r.get('state')!r}")
        need(isinstance(r.get("replied_from_other"), bool), "review.replied_from_other is a bool")
        concerns = r.get("concerns")
        need(isinstance(concerns, list) and all(c in CONCERN_KEYS for c in concerns)
             and len(set(concerns)) == len(concerns), f"review.concerns {concerns!r}")
    return problems


def test_the_contract_example_analysis_is_what_the_check_reads(shared_dir: Path) -> None:
    """The check below reads the contract as written: its example record passes it."""
    readme = shared_dir / "contracts" / "README.md"
    if not readme.is_file():
        pytest.skip("no contracts README")
    example = re.search(r"```json\n(.*?)```", readme.read_text(encoding="utf-8"), re.S)
    assert example is not None
    assert contract_problems(json.loads(example.group(1))) == []


WRITTEN_SETS = sorted((REPO_ROOT / "benchmarks").glob("*_written/*/threads.jsonl"))


def test_every_record_analyze_writes_for_the_written_threads_is_a_contract_analysis(
        tmp_path: Path) -> None:
    """Every project-written thread set (benchmarks/threads_written, review_written) through
    the command, with a pool in the contract's paper shape (an old-style id, a paper with
    no arXiv id, dates to the day, the month and the year): one record per thread, same
    order, each field of the contract's type and values; and a bad line's error record is
    exactly {"id", "line", "error"}."""
    assert WRITTEN_SETS, "no written thread set found"
    threads = [json.loads(line) for path in WRITTEN_SETS
               for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(threads) > 500
    pool = _lines(tmp_path / "pool.jsonl", REDUCED + [
        {"arxiv_id": "cs/0112017", "title": "An old-style identifier", "aliases": [],
         "method": None, "first_public": None},
        {"arxiv_id": None, "title": "A blog post without an arXiv identifier",
         "aliases": ["BlogRL"], "method": None, "first_public": None}])
    cites = dict(THREAD, id="o/r#cites", body=(
        "Compare cs/0112017, 2508.00001 and https://arxiv.org/abs/2503.14476v2, and "
        '"A blog post without an arXiv identifier"; BlogRL too.'))
    src = _lines(tmp_path / "in.jsonl", threads + [cites], '{"id": "o/r#bad", "number": "x"}\n')
    out = tmp_path / "out.jsonl"
    assert main(["analyze", "--no-cache", "--papers", str(pool), str(src), "-o", str(out)]) == 1
    rows = _rows(out)
    assert len(rows) == len(threads) + 2
    *analyses, error = rows
    assert [a.get("id") for a in analyses] == [t["id"] for t in threads] + ["o/r#cites"]
    problems = {a["id"]: p for a in analyses if (p := contract_problems(a))}
    assert problems == {}
    assert error == {"id": "o/r#bad", "line": len(threads) + 2,
                     "error": f"line {len(threads) + 2}: missing required keys repo, kind, "
                              "title, body, state, comments"}
    # the paths of the contract the written threads may not take are taken here
    linked = {(p["arxiv_id"], p["how"]) for p in analyses[-1]["papers"]}
    assert {("cs/0112017", "arxiv_id"), ("2508.00001", "arxiv_id"), ("2503.14476", "arxiv_id"),
            (None, "title")} <= linked
    assert any(a["failure"]["is_failure_report"] for a in analyses)
    assert any(a["proposal"]["is_proposal"] for a in analyses)
    assert any(a["review"]["concerns"] for a in analyses)


# --- papers import: a paper given twice in one file ---------------------------------------

async def test_papers_import_counts_a_paper_given_twice_in_one_file_as_two_imports_do(
        db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The printed counts account for every line: a paper given again later in the same file
    (a pool joined from two sources) was merged into the first and counted nowhere (2 lines,
    "added": 1 and nothing else), where the same lines imported one file at a time, or
    falling into two batches, count "updated" (or "unchanged")."""
    monkeypatch.setenv("DATABASE_URL", db_url)
    first = dict(REDUCED[2])
    again = dict(first, arxiv_id="arXiv:2503.00003v2", aliases=["M3"])
    same = dict(first)
    path = _lines(tmp_path / "pool.jsonl", [first, again, same])
    assert await _in_thread(main, ["papers", "import", str(path)]) == 0
    counts = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert counts == {"added": 1, "updated": 1, "unchanged": 1, "skipped": 0}
    assert (await _stored_papers(db_url))["2503.00003"].aliases == ["M3"]


# --- rules: a file where a folder is wanted ---------------------------------------------

def test_rules_of_a_file_says_it_wants_the_folder_holding_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`rltracker rules CONTRIBUTING.md` (the file rather than its folder) was "unknown
    framework or folder: CONTRIBUTING.md", as if the name were mistyped."""
    contributing = tmp_path / "CONTRIBUTING.md"
    contributing.write_text("# Contributing\n\nEvery pull request needs tests.\n", encoding="utf-8")
    assert main(["rules", str(contributing)]) == 2
    err = capsys.readouterr().err
    assert err == (f"rltracker rules: {contributing} is a file: give the folder holding "
                   f"CONTRIBUTING and the templates ({tmp_path}), or a framework (verl, trl, "
                   "openrlhf, nemo-rl, roll, slime, areal)\n")
    assert main(["rules", str(tmp_path)]) == 0
    assert "tests" in capsys.readouterr().out


# --- analyze: -o naming the pool -------------------------------------------------------------

@pytest.mark.parametrize("through_link", [False, True], ids=["same-path", "symlink"])
def test_analyze_refuses_to_write_over_its_paper_pool(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], through_link: bool) -> None:
    """`-o POOL` (the --papers file, a slip of the shell's history) replaced the pool with the
    analysis records, exit 0: the pool was lost. INPUT as -o stays allowed (sort -o: the
    records are read before the file is replaced); the pool is never the output."""
    pool = _lines(tmp_path / "pool.jsonl", REDUCED)
    before = pool.read_bytes()
    out = pool
    if through_link:
        out = tmp_path / "link.jsonl"
        out.symlink_to(pool)
    src = _lines(tmp_path / "in.jsonl", [THREAD])
    assert main(["analyze", "--no-cache", "--papers", str(pool), str(src), "-o", str(out)]) == 2
    assert pool.read_bytes() == before
    assert capsys.readouterr().err == (
        f"rltracker analyze: -o {out} is the --papers pool {pool}: the analysis would replace "
        "it; give another output file\n")


def test_rules_reads_a_contributing_file_saved_in_utf16_as_its_utf8_copy(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A CONTRIBUTING file saved by a Windows editor in UTF-16 (its byte-order mark says so)
    was read as UTF-8 with replacement: every rule "Not stated in the files read", nothing
    said. Its byte-order mark now says how to read it (UTF-8's, UTF-16's, UTF-32's)."""
    text = ("# Contributing\r\n\r\nEvery pull request needs tests and must pass pre-commit.\r\n"
            "Sign off your commits (DCO).\r\n")
    summaries = {}
    for encoding in ("utf-8", "utf-8-sig", "utf-16", "utf-32"):
        folder = tmp_path / encoding
        folder.mkdir()
        (folder / "CONTRIBUTING.md").write_bytes(text.encode(encoding))
        assert main(["rules", str(folder)]) == 0
        summaries[encoding] = capsys.readouterr().out
    assert "Not stated in the files read: tests" not in summaries["utf-8"]
    assert summaries == {encoding: summaries["utf-8"] for encoding in summaries}


# --- every command that reads files says what its exit statuses mean --------------------------

@pytest.mark.parametrize("command", [["analyze"], ["papers", "import"], ["replay"], ["rules"]],
                         ids=" ".join)
def test_each_command_reading_files_documents_its_exit_statuses(
        command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """`papers import` (0, 1 some lines skipped, 2 FILE unreadable) and `replay` (1 an answer
    not 2xx) said nothing of their exit statuses in their --help, where analyze and rules do."""
    with pytest.raises(SystemExit):
        main([*command, "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "exit status: 0 " in help_text
    assert all(f"; {status} " in help_text for status in (1, 2)), help_text
