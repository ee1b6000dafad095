"""Where a verdict would teach the failure analyzer most (`/verdicts`' "wanted" section,
`/api/verdicts` `wanted`, `rltracker verdicts wanted`), on SQLite and PostgreSQL: open threads
of installed repositories with no verdict, whose stored failure finding is uncertain (report
confidence near the comment threshold, either side, or a split kind), ranked by the
uncertainty score; confident threads, threads with a verdict, closed or muted threads and
threads of repositories the app is not installed on are left out; titles stay text. Threads
are short ones written for these tests."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy import select, update

from analyzers.failures import threshold
from bot.site.verdicts import BAND, SPLIT_BONUS, wanted_verdicts
from bot.store.models import Analysis, Installation, Repository, Thread
from bot.store.threads import upsert_thread
from bot.store.verdicts import set_verdict
from tests.test_verdicts_shown import client_for, get

HOSTILE_TITLE = "<script>alert('w')</script> KL & \x1b[2J\nrm -rf"
T = threshold()


def _near(delta: float) -> float:
    return round(T + delta, 3)


# (repo, number, kind, state, title, report confidence, kinds listed, muted)
THREADS: list[tuple[str, int, str, str, str, float, list[str], bool]] = [
    ("huggingface/trl", 1, "issue", "open", "Reward flat after warmup", _near(0.01), ["reward_hacking"], False),
    ("huggingface/trl", 2, "issue", "open", "KL and entropy both move", 0.9, ["kl_growth", "entropy_collapse"], False),
    ("huggingface/trl", 3, "issue", "open", "Is lr 1e-6 too low?", _near(-0.03), [], False),
    ("huggingface/trl", 4, "issue", "open", "Entropy drops, KL spikes", _near(0.02),
     ["entropy_collapse", "kl_growth"], False),
    ("huggingface/trl", 5, "issue", "open", "Entropy collapses at step 200", 0.95, ["entropy_collapse"], False),
    ("huggingface/trl", 6, "issue", "open", "How to install with uv", 0.02, [], False),
    ("huggingface/trl", 7, "issue", "open", "Loss goes NaN (has a verdict)", _near(0.0), ["collapse_or_divergence"], False),
    ("huggingface/trl", 8, "issue", "closed", "Loss goes NaN (closed)", _near(0.0), ["collapse_or_divergence"], False),
    ("huggingface/trl", 9, "issue", "open", "Loss goes NaN (muted)", _near(0.0), ["collapse_or_divergence"], False),
    ("huggingface/trl", 10, "pull_request", "open", "Fix KL estimator", 0.0, [], False),
    ("verl-project/verl", 11, "issue", "open", HOSTILE_TITLE, _near(-0.05), [], False),
    ("THUDM/slime", 12, "issue", "open", "Loss goes NaN (not installed)", _near(0.0), ["collapse_or_divergence"], False),
    ("someone/rl-lab", 13, "issue", "open", "Rewards hacked?", _near(0.1), ["reward_hacking"], False),
]


async def seed(ctx: Any) -> None:
    """The threads above with their stored analyses; the app installed on trl and verl (not on
    slime) and on a repository of no framework; a verdict on trl#7; trl#9 muted (`/rltracker stop`)."""
    async with ctx.sessionmaker() as s, s.begin():
        s.add_all([Installation(id=5, account="huggingface"), Installation(id=6, account="verl-project")])
        await s.flush()
        s.add_all([Repository(full_name="huggingface/trl", framework="trl", installation_id=5),
                   Repository(full_name="verl-project/verl", framework="verl", installation_id=6),
                   Repository(full_name="THUDM/slime", framework="slime"),
                   Repository(full_name="someone/rl-lab", installation_id=5)])
        for repo, number, kind, state, title, confidence, kinds, _ in THREADS:
            thread = await upsert_thread(s, {"repo": repo, "number": number, "kind": kind,
                                             "title": title, "state": state, "body": "A run."})
            thread.muted = number == 9
            report = bool(kinds)
            s.add(Analysis(thread_id=thread.id, analyzer_version="test", result={
                "failure": {"is_failure_report": report, "category": kinds[0] if report else None,
                            "categories": kinds, "confidence": confidence, "evidence": []}},
                is_failure_report=report, failure_category=kinds[0] if report else None,
                failure_confidence=confidence, failure_runner_up=kinds[1] if len(kinds) > 1 else None))
        await s.flush()
        seven = await s.scalar(select(Thread).where(Thread.number == 7))
        await set_verdict(s, seven, is_failure_report=True, category="collapse_or_divergence",
                          login="alice", role="author", comment_id=70)


def numbers(found: dict[str, Any]) -> dict[str | None, list[int]]:
    return {f["framework"]: [t["number"] for t in f["threads"]] for f in found["frameworks"]}


async def test_ranking_and_the_api_key(ctx: Any) -> None:
    """Near-threshold and split-kind threads, highest score first (both, then nearest, then a
    confident split kind); confident, decided, closed, muted and uninstalled ones absent."""
    await seed(ctx)
    async with client_for(ctx) as client:
        found = (await get(client, "/api/verdicts"))["wanted"]
    assert numbers(found) == {"trl": [4, 1, 3, 2], "verl": [11], None: [13]}
    assert [f["framework"] for f in found["frameworks"]] == ["trl", "verl", None]
    assert (found["threshold"], found["band"], found["split_bonus"], found["limit"]) == (
        T, BAND, SPLIT_BONUS, 100)
    rows = {t["number"]: t for f in found["frameworks"] for t in f["threads"]}
    assert rows[4] == {
        "repo": "huggingface/trl", "number": 4, "kind": "issue", "title": "Entropy drops, KL spikes",
        "url": "https://github.com/huggingface/trl/issues/4", "page": "/threads/huggingface/trl/4",
        "analyzer_version": "test", "is_failure_report": True, "category": "entropy_collapse",
        "runner_up": "kl_growth", "category_title": "Entropy collapse", "runner_up_title": "KL keeps growing",
        "confidence": _near(0.02),
        "score": round(1 - abs(_near(0.02) - T) / BAND + SPLIT_BONUS, 3),
        "commands": ["/rltracker kind entropy_collapse", "/rltracker kind kl_growth",
                     "/rltracker not-a-failure"]}
    assert rows[2]["score"] == SPLIT_BONUS and rows[2]["confidence"] == 0.9
    assert rows[1]["runner_up"] is None and rows[1]["commands"] == [
        "/rltracker kind reward_hacking", "/rltracker not-a-failure"]
    assert (rows[3]["is_failure_report"], rows[3]["category"]) == (False, None)
    assert rows[3]["commands"] == ["/rltracker kind <failure>", "/rltracker not-a-failure"]
    # as GitHub shows it: without control characters, the line feed a space (edges62)
    assert rows[11]["title"] == "<script>alert('w')</script> KL & [2J rm -rf"


async def test_framework_and_limit(ctx: Any) -> None:
    """The limit is of all frameworks together: the least sure threads first, wherever they
    are (trl#4 1.37, trl#1 0.93, trl#3 0.8, verl#11 0.67, trl#2 0.5, #13 0.33), then grouped."""
    await seed(ctx)
    async with ctx.sessionmaker() as s:
        assert numbers(await wanted_verdicts(s, limit=2)) == {"trl": [4, 1]}
        assert numbers(await wanted_verdicts(s, limit=4)) == {"trl": [4, 1, 3], "verl": [11]}
        assert numbers(await wanted_verdicts(s, framework="verl")) == {"verl": [11]}
        assert numbers(await wanted_verdicts(s, framework="trl", limit=1)) == {"trl": [4]}
        assert numbers(await wanted_verdicts(s, framework="slime")) == {}


async def test_ranked_on_the_stored_uncertainty_the_pipeline_writes(ctx: Any) -> None:
    """The pipeline stores the analysis' failure confidence and the kind it lists second
    beside its JSON (migration 0007's columns), and the list is ranked on those columns."""
    from bot.pipeline import thread_changed

    await seed(ctx)
    async with ctx.sessionmaker() as s:
        await upsert_thread(s, {"repo": "huggingface/trl", "number": 40, "kind": "issue",
                                "title": "Entropy collapses and the KL keeps growing",
                                "state": "open", "author": "alice",
                                "body": "After step 300 the policy entropy falls to 0.01 and the "
                                        "KL divergence to the reference keeps rising."})
        await s.commit()
    result = await thread_changed(ctx, "huggingface/trl", 40, trigger="sync")
    async with ctx.sessionmaker() as s:
        row = await s.scalar(select(Analysis).join(Thread, Thread.id == Analysis.thread_id)
                             .where(Thread.number == 40))
        failure = result["failure"]
        assert row.failure_confidence == failure["confidence"]
        assert row.failure_runner_up == (failure["categories"][1] if len(failure["categories"]) > 1
                                         else None)
        # the columns rank, whatever the JSON says: trl#2 made the least sure of all
        await s.execute(update(Analysis).where(Analysis.thread_id == select(Thread.id).where(
            Thread.number == 2).scalar_subquery()).values(failure_confidence=T))
        await s.execute(update(Analysis).where(Analysis.thread_id == row.thread_id)
                        .values(failure_confidence=None, failure_runner_up=None))
        await s.commit()
        found = await wanted_verdicts(s, limit=2)
    assert numbers(found) == {"trl": [2, 4]}
    assert found["frameworks"][0]["threads"][0]["confidence"] == T


async def test_page_escapes_titles_and_links(ctx: Any) -> None:
    await seed(ctx)
    async with client_for(ctx) as client:
        html = await get(client, "/verdicts")
    section = html[html.index('id="wanted"'):]
    assert "<script>alert" not in html
    assert "&lt;script&gt;alert(&#39;w&#39;)&lt;/script&gt; KL &amp;" in section
    assert section.index('href="/threads/huggingface/trl/4"') < section.index(
        'href="/threads/huggingface/trl/1"') < section.index('href="/threads/huggingface/trl/3"')
    assert 'href="https://github.com/verl-project/verl/issues/11"' in section
    assert "<code>/rltracker kind &lt;failure&gt;</code>" in section
    assert "<code>/rltracker kind kl_growth</code>" in section
    assert '(or <a href="/failures/kl_growth">KL keeps growing</a>)' in section
    for absent in (5, 6, 7, 8, 9, 10):
        assert f'href="/threads/huggingface/trl/{absent}"' not in section
    assert "THUDM/slime" not in section
    assert "Other repositories" in section and 'href="/threads/someone/rl-lab/13"' in section


async def test_page_without_uncertain_threads(ctx: Any) -> None:
    async with client_for(ctx) as client:
        html = await get(client, "/verdicts")
    assert 'id="wanted"' in html and "None: no open thread without a verdict" in html


async def test_cli_prints_the_list(ctx: Any) -> None:
    from tests.test_cli import run_cli

    await seed(ctx)
    env = {"DATABASE_URL": ctx.settings.database_url}
    result = await asyncio.to_thread(run_cli, "verdicts", "wanted", "--framework", "trl",
                                     "--limit", "3", env=env)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "\ntrl:\n" in out and "verl" not in out
    assert [line.split()[1] for line in out.splitlines() if line[:3].strip().isdigit()] == [
        "huggingface/trl#4", "huggingface/trl#1", "huggingface/trl#3"]
    assert ("analyzer: entropy_collapse (or kl_growth), confidence " + str(_near(0.02))) in out
    assert ("type: /rltracker kind entropy_collapse  |  /rltracker kind kl_growth  |  "
            "/rltracker not-a-failure") in out
    assert "https://github.com/huggingface/trl/issues/4  (tracker: /threads/huggingface/trl/4)" in out

    everything = await asyncio.to_thread(run_cli, "verdicts", "wanted", env=env)
    assert everything.returncode == 0, everything.stderr
    assert "\x1b" not in everything.stdout  # a title's control characters are not written
    assert "verl-project/verl#11  <script>alert('w')</script> KL & [2J rm -rf" in everything.stdout

    bad = await asyncio.to_thread(run_cli, "verdicts", "wanted", "--framework", "nope", env=env)
    assert bad.returncode == 2 and "unknown framework 'nope'" in bad.stderr


@pytest.mark.parametrize("confidence", [round(T + BAND + 0.01, 3), round(T - BAND - 0.01, 3)])
async def test_outside_the_band_is_left_out(ctx: Any, confidence: float) -> None:
    """A single-kind finding further than BAND from the threshold, either side, is not listed."""
    async with ctx.sessionmaker() as s, s.begin():
        s.add(Installation(id=5, account="huggingface"))
        await s.flush()
        s.add(Repository(full_name="huggingface/trl", framework="trl", installation_id=5))
        thread = await upsert_thread(s, {"repo": "huggingface/trl", "number": 1, "kind": "issue",
                                         "title": "A run", "state": "open"})
        report = confidence >= T
        s.add(Analysis(thread_id=thread.id, analyzer_version="test", result={"failure": {
            "is_failure_report": report, "category": "kl_growth" if report else None,
            "categories": ["kl_growth"] if report else [], "confidence": confidence}},
            is_failure_report=report, failure_category="kl_growth" if report else None))
    async with ctx.sessionmaker() as s:
        assert numbers(await wanted_verdicts(s)) == {}


async def test_cli_prints_a_chinese_title_whatever_the_locale(ctx: Any) -> None:
    """Titles are often Chinese in these repositories. Under a locale that is not UTF-8
    (PYTHONIOENCODING=latin-1, a redirected Windows console) `rltracker verdicts wanted`
    stopped at the first such title with a UnicodeEncodeError traceback reported as a bug,
    exit 1, the list lost. A character the locale cannot write is now escaped (\\uXXXX)."""
    import subprocess
    import sys

    from tests.test_cli import CLEAN_ENV

    await seed(ctx)
    async with ctx.sessionmaker() as s, s.begin():
        await s.execute(update(Thread).where(Thread.number == 4).values(title="熵崩溃，KL 飙升"))
    result = await asyncio.to_thread(
        subprocess.run, [sys.executable, "-m", "bot.cli", "verdicts", "wanted", "--framework", "trl"],
        env={**CLEAN_ENV, "DATABASE_URL": ctx.settings.database_url, "PYTHONIOENCODING": "latin-1"},
        capture_output=True, timeout=60)
    assert result.returncode == 0, result.stderr.decode("utf-8", "replace")
    out = result.stdout.decode("latin-1")
    assert "huggingface/trl#4  \\u71b5\\u5d29\\u6e83\\uff0cKL \\u98d9\\u5347" in out
    assert "huggingface/trl#1" in out  # the threads after it are listed too


async def test_cli_limit_past_what_a_database_counts_is_one_line(ctx: Any) -> None:
    """`--limit` took any integer (type=int): 2**64 reached the database with the list
    (SQLite's OverflowError, asyncpg's int64 error): a traceback and "this is a bug" (ops61).
    It is read as the other commands' --limit (bot.cli.MAX_LIMIT at most): one line, exit 2."""
    from tests.test_cli import run_cli

    await seed(ctx)
    env = {"DATABASE_URL": ctx.settings.database_url}
    result = await asyncio.to_thread(run_cli, "verdicts", "wanted", "--limit", str(2**64), env=env)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr and "bug" not in result.stderr, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("rltracker verdicts wanted: argument --limit:"), lines
    zero = await asyncio.to_thread(run_cli, "verdicts", "wanted", "--limit", "0", env=env)
    assert zero.returncode == 2 and zero.stderr.startswith("rltracker verdicts wanted:"), zero.stderr


async def test_a_split_kind_of_unknown_confidence_says_no_number(ctx: Any) -> None:
    """An analysis stored without a report confidence (before the column was filled: migration
    0007 reads it from the stored result, which may lack it) whose kinds are split is listed
    by its split alone; /verdicts printed 'confidence None' under it."""
    await seed(ctx)
    async with ctx.sessionmaker() as s, s.begin():
        await s.execute(update(Analysis).where(Analysis.thread_id == select(Thread.id).where(
            Thread.number == 2).scalar_subquery()).values(failure_confidence=None))
    async with client_for(ctx) as client:
        page = await get(client, "/verdicts")
        rows = {t["number"]: t for f in (await get(client, "/api/verdicts"))["wanted"]["frameworks"]
                for t in f["threads"]}
    assert rows[2]["confidence"] is None and rows[2]["score"] == SPLIT_BONUS
    assert "None" not in page
    assert "confidence not recorded" in page
