"""What the tracker shows once people gave verdicts (`/rltracker kind`, `not-a-failure`), on
SQLite and PostgreSQL: the failure-kind pages, the JSON API, the exports, the nightly report
and the install preview follow the person's finding (marked as theirs) and keep the
analyzer's beside it; the live agreement figure (/verdicts, /api/verdicts, the report) counts
what the analyzer said when each verdict was given; logins and titles stay text; and
benchmarks/evaluate_verdicts.py scores an exported file with the current models. Threads are
short ones written for these tests."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient, TestServer
from sqlalchemy import select, update

from bot.store.models import Analysis, Thread
from bot.store.threads import upsert_thread
from bot.store.verdicts import count_agreement, set_verdict
from tests.test_site import seed

HOSTILE_LOGIN = '<img src=x onerror=alert(1)>"eve'
HOSTILE_TITLE = "<script>alert('v')</script> KL & entropy"
TRL8, SLIME9 = ("huggingface/trl", 8), ("THUDM/slime", 9)  # seeded by tests.test_site.seed


async def give(ctx: Any, where: tuple[str, int], kind: str | None, *, login: str = "eve",
               role: str = "maintainer", comment_id: int = 1) -> None:
    """Store a verdict on the thread `where` (repo, number): a kind, or None for not-a-failure."""
    async with ctx.sessionmaker() as s:
        thread = await s.scalar(select(Thread).where(Thread.repo == where[0], Thread.number == where[1]))
        await set_verdict(s, thread, is_failure_report=kind is not None, category=kind,
                          login=login, role=role, comment_id=comment_id)
        await s.commit()


def client_for(ctx: Any) -> TestClient:
    from bot.app import create_app

    return TestClient(TestServer(create_app(ctx, worker=False)))


async def get(client: TestClient, path: str) -> Any:
    resp = await client.get(path)
    assert resp.status == 200, (path, resp.status)
    return await (resp.json() if resp.content_type == "application/json" else resp.text())


def by_number(rows: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    return {r["number"]: r for r in rows}


async def test_kind_pages_and_api_follow_a_verdict(ctx: Any) -> None:
    """The analyzer said entropy collapse on trl#8; a maintainer set KL growth. The thread
    moves to KL growth's page and API, marked as set by a person, with the analyzer's own
    finding kept beside it; /api/threads, the front page and the exports say the same."""
    await seed(ctx)
    await give(ctx, TRL8, "kl_growth", login=HOSTILE_LOGIN)
    async with client_for(ctx) as client:
        entropy = await get(client, "/api/failures/entropy_collapse")
        assert entropy["recent_reports"] == [] and entropy["reports_total"] == 0
        kl = await get(client, "/api/failures/kl_growth")
        assert kl["reports_total"] == 2
        rows = by_number(kl["recent_reports"])
        assert rows[8]["failure_category"] == "kl_growth" and rows[8]["failure_set_by"] == "maintainer"
        assert rows[8]["failure_confidence"] is None  # a person's, not the model's
        assert rows[8]["analyzer_failure"] == {"is_failure_report": True, "category": "entropy_collapse",
                                               "confidence": 0.9}
        assert rows[9]["failure_set_by"] is None and rows[9]["failure_confidence"] == 0.9

        html = await get(client, "/failures/kl_growth")
        assert 'href="/threads/huggingface/trl/8"' in html and 'href="/threads/THUDM/slime/9"' in html
        assert html.count("set by a person (maintainer)") == 1
        assert 'href="/threads/huggingface/trl/8"' not in await get(client, "/failures/entropy_collapse")

        thread = await get(client, "/api/threads/huggingface/trl/8")
        assert thread["failure"] == {"is_failure_report": True, "category": "kl_growth", "set_by": "maintainer"}
        assert thread["analysis"]["failure"]["category"] == "entropy_collapse"  # the analyzer's own
        assert thread["verdict"]["login"] == HOSTILE_LOGIN
        assert thread["verdict"]["analyzer_category"] == "entropy_collapse"
        assert (await get(client, "/api/threads/THUDM/slime/9"))["verdict"] is None

        front = await get(client, "/")
        row = front.split(">huggingface/trl#8</a>")[1].split("</tr>")[0]
        assert "set by a person (maintainer)" in row and 'href="/failures/kl_growth">kl growth</a>' in row
        assert front.count("set by a person (maintainer)") == 1
        assert HOSTILE_LOGIN not in front  # lists name the role, never the login

        exported = by_number((await get(client, "/api/export.json"))["threads"])
        assert (exported[8]["failure_category"], exported[8]["failure_set_by"]) == ("kl_growth", "maintainer")
        text = await (await client.get("/api/export.csv")).text()
        csv_rows = {int(r["number"]): r for r in csv.DictReader(io.StringIO(text))}
        assert csv_rows[8]["failure_category"] == "kl_growth"
        assert csv_rows[8]["failure_set_by"] == "maintainer"
        assert csv_rows[8]["analyzer_failure_category"] == "entropy_collapse"
        assert csv_rows[8]["analyzer_is_failure_report"] == "true"
        assert csv_rows[9]["failure_set_by"] == "" and csv_rows[9]["analyzer_failure_category"] == "kl_growth"


async def test_not_a_failure_takes_a_thread_off_its_kind(ctx: Any) -> None:
    """`not-a-failure` on slime#9 (the analyzer: KL growth) takes it off KL growth's page, the
    API's count and the front page's recent reports; a kind set on a thread the analyzer did
    not call a report (trl#7, a proposal) puts it on that kind's page; proposals stay."""
    await seed(ctx)
    await give(ctx, SLIME9, None, role="author")
    await give(ctx, ("huggingface/trl", 7), "response_length_drift", role="author", comment_id=2)
    async with client_for(ctx) as client:
        kl = await get(client, "/api/failures/kl_growth")
        assert kl["recent_reports"] == [] and kl["reports_total"] == 0
        assert 'href="/threads/THUDM/slime/9"' not in await get(client, "/failures/kl_growth")
        front = await get(client, "/")
        assert 'href="/threads/huggingface/trl/8"' in front  # the analyzer's report stays
        assert 'href="/threads/THUDM/slime/9"' not in front
        drift = await get(client, "/api/failures/response_length_drift")
        assert [(r["number"], r["failure_set_by"], r["analyzer_failure"]["is_failure_report"])
                for r in drift["recent_reports"]] == [(7, "author", False)]
        assert "Add CISPO loss" in await get(client, "/failures/response_length_drift")
        proposals = await get(client, "/api/proposals")
        assert 7 in {r["number"] for r in proposals}  # still a proposal: verdicts are about failures
        exported = by_number((await get(client, "/api/export.json"))["threads"])
        assert exported[9]["is_failure_report"] is False and exported[9]["failure_category"] is None
        assert exported[9]["analyzer_failure"]["category"] == "kl_growth"


def test_count_agreement() -> None:
    rows = [
        ("v2", True, "entropy_collapse", True, "entropy_collapse"),  # kind right
        ("v2", True, "entropy_collapse", True, "kl_growth"),  # kind wrong
        ("v1", True, "kl_growth", False, None),  # not a failure per the person
        ("v1", False, None, True, "kl_growth"),  # missed: a failure per the person
        ("v1", False, None, False, None),  # agreed: none
        (None, None, None, True, "kl_growth"),  # not analysed when the verdict was given
    ]
    out = {r["version"]: r for r in count_agreement(rows)}
    assert list(out) == ["v2", "v1", None, "all"]
    assert {k: out["v2"][k] for k in ("verdicts", "called", "kind_right", "kind_wrong",
                                      "not_failure_per_person", "not_called")} == {
        "verdicts": 2, "called": 2, "kind_right": 1, "kind_wrong": 1, "not_failure_per_person": 0,
        "not_called": 0}
    assert (out["v2"]["precision"], out["v2"]["kind_accuracy"], out["v2"]["recall"]) == (1.0, 0.5, 1.0)
    assert (out["v1"]["called"], out["v1"]["not_failure_per_person"], out["v1"]["not_called"],
            out["v1"]["failure_per_person"], out["v1"]["agreed_not_failure"]) == (1, 1, 2, 1, 1)
    assert (out["v1"]["precision"], out["v1"]["kind_accuracy"], out["v1"]["recall"]) == (0.0, None, 0.0)
    assert (out[None]["verdicts"], out[None]["not_analysed"]) == (1, 1)
    assert (out["all"]["verdicts"], out["all"]["called"], out["all"]["kind_right"],
            out["all"]["not_analysed"]) == (6, 3, 1, 1)
    assert count_agreement([]) == [{"version": "all", **{k: 0 for k in out["all"]
                                                           if k not in ("version", "precision", "kind_accuracy", "recall")},
                                    "precision": None, "kind_accuracy": None, "recall": None}]



def test_count_agreement_lists_versions_newest_first_by_their_numbers() -> None:
    """The analyzer's versions are `YYYY.MM.DD-N` with N past 9 on a busy day: -10 is newer
    than -9 (and -44 than -5), which a comparison of the strings gets wrong."""
    rows = [(v, True, "kl_growth", True, "kl_growth")
            for v in ("2026.12.03-5", "2026.12.03-44", "2026.12.02-9", "2026.12.03-10")]
    assert [r["version"] for r in count_agreement(rows)] == [
        "2026.12.03-44", "2026.12.03-10", "2026.12.03-5", "2026.12.02-9", "all"]

AGREEMENT_THREADS = [  # number, analyzer version, analyzer kind (None: no report), person's kind
    (1, "v2", "entropy_collapse", "entropy_collapse"),
    (2, "v2", "entropy_collapse", "kl_growth"),
    (3, "v1", "kl_growth", None),
    (4, "v1", None, "kl_growth"),
    (5, "v1", None, None),
]


async def agreement_seed(ctx: Any, created: datetime) -> None:
    """Five verl issues analysed by two analyzer versions, one verdict each, and a sixth issue
    with a verdict and no analysis; #2 has a hostile title and its verdict a hostile login."""
    repo = "verl-project/verl"
    async with ctx.sessionmaker() as s:
        for number, version, kind, person in [*AGREEMENT_THREADS, (6, None, None, "kl_growth")]:
            thread = await upsert_thread(s, {
                "repo": repo, "number": number, "kind": "issue", "state": "open",
                "title": HOSTILE_TITLE if number == 2 else f"Run {number} goes wrong",
                "created_at": created.isoformat()})
            if version is not None:
                s.add(Analysis(thread_id=thread.id, analyzer_version=version,
                               result={"failure": {"is_failure_report": kind is not None, "category": kind,
                                                   "confidence": 0.8 if kind else 0.1}},
                               is_failure_report=kind is not None, failure_category=kind))
                await s.flush()
            await set_verdict(s, thread, is_failure_report=person is not None, category=person,
                              login=HOSTILE_LOGIN if number == 2 else f"user{number}",
                              role="author", comment_id=number)
        await s.commit()


async def test_agreement_page_api_and_report(ctx: Any) -> None:
    """The counts per analyzer version on /api/verdicts, /verdicts and in the nightly report,
    against what the analyzer said when each verdict was given: a later re-analysis does not
    move them. Logins and titles are escaped on the page and kept out of the posted Markdown."""
    from bot.site.report import build_report, render_html, render_markdown

    now = datetime.now(UTC)
    await agreement_seed(ctx, now - timedelta(days=3))
    async with ctx.sessionmaker() as s:  # the nightly re-analysis, by a newer version
        await s.execute(update(Analysis).values(analyzer_version="v3", failure_category="kl_growth",
                                                is_failure_report=True))
        await s.commit()
    async with client_for(ctx) as client:
        data = await get(client, "/api/verdicts")
        figures = {r["version"]: r for r in data["agreement"]}
        assert list(figures) == ["v2", "v1", None, "all"]
        assert (figures["v2"]["kind_right"], figures["v2"]["kind_wrong"]) == (1, 1)
        assert (figures["v1"]["not_failure_per_person"], figures["v1"]["failure_per_person"],
                figures["v1"]["agreed_not_failure"]) == (1, 1, 1)
        assert figures[None]["not_analysed"] == 1 and figures["all"]["verdicts"] == data["total"] == 6
        latest = by_number(data["latest"])
        assert latest[2]["login"] == HOSTILE_LOGIN and latest[2]["title"] == HOSTILE_TITLE
        assert (latest[2]["category"], latest[2]["analyzer_category"], latest[2]["analyzer_version"]) == (
            "kl_growth", "entropy_collapse", "v2")

        html = await get(client, "/verdicts")
        assert "<script>alert" not in html and "<img src=x" not in html
        assert "&lt;script&gt;alert(&#39;v&#39;)&lt;/script&gt; KL &amp; entropy" in html
        assert "@&lt;img src=x onerror=alert(1)&gt;&#34;eve" in html
        assert '<tr data-version="v2"><td><code>v2</code></td><td>2</td><td>2</td><td>1</td><td>1</td><td>0</td>' in html
        assert 'href="/verdicts"' in await get(client, "/study")

    report = await build_report(ctx, now.date())
    assert report["agreement"] == data["agreement"]
    markdown = render_markdown(report, "https://tracker.example")
    assert ("- `v2`: 2 verdicts; called a failure report 2 (kind right 1, kind wrong 1, not a "
            "failure per the person 0); did not call one 0 (a failure per the person 0).") in markdown
    assert "- No analysis then: 1 verdict;" in markdown and "not analysed then 1" in markdown
    assert "onerror" not in markdown and "<script>" not in markdown  # no people's text posted
    assert "user1" not in markdown and "Run 1 goes wrong" not in markdown
    page = render_html(report)
    assert 'id="agreement"' in page and "<script>alert" not in page


async def test_report_counts_the_days_failures_by_the_verdict(ctx: Any) -> None:
    """Failure reports of the day by the finding shown: a kind a person set counts under it
    (and is marked), a thread a person called no report does not count."""
    from bot.site.report import build_report, render_html, render_markdown

    now = datetime.now(UTC)
    await agreement_seed(ctx, now.replace(hour=0, minute=0, second=0, microsecond=0))
    report = await build_report(ctx, now.date())
    verl = report["frameworks"]["verl"]
    assert verl["failures_today"] == {
        "entropy_collapse": ["verl-project/verl#1"],
        "kl_growth": ["verl-project/verl#2", "verl-project/verl#4", "verl-project/verl#6"]}
    assert verl["failures_today_set_by"] == [f"verl-project/verl#{n}" for n in (1, 2, 4, 6)]
    assert report["snapshot"]["verl-project/verl#2"]["set_by"] == "author"
    assert "verl-project/verl#3" not in report["snapshot"]  # no report per the person, no proposal
    markdown = render_markdown(report, "https://tracker.example")
    assert ("Failure reports of the day: Entropy collapse: 1; KL keeps growing: 3 (4 of them with the kind "
            "a person set).") in markdown
    assert render_html(report).count("set by a person") == 4


async def test_preview_follows_a_verdict(ctx: Any, fake_github: Any) -> None:
    """The install preview decides with a person's verdict as a recheck would: their kind,
    said as theirs, with no confidence bar; `not-a-failure` is no comment, and says whose."""
    from bot.speaking.preview import compute_preview
    from tests.test_actions_e2e import FAILURE, NOT_FAILURE, VERL, install
    from tests.test_preview import _preview_app, store

    await install(ctx, fake_github)
    await store(ctx, 1, FAILURE, title="entropy falls")
    await store(ctx, 2, FAILURE, title="entropy falls again")
    await store(ctx, 3, NOT_FAILURE, title=HOSTILE_TITLE)
    await give(ctx, (VERL, 1), "kl_growth", role="author")
    await give(ctx, (VERL, 2), None, role="maintainer")
    await give(ctx, (VERL, 3), "kl_growth", login=HOSTILE_LOGIN, role="author")
    preview = await compute_preview(ctx, VERL)
    comments = {c["number"]: c for c in preview["comments"]}
    assert sorted(comments) == [1, 3]
    assert (comments[1]["category"], comments[1]["set_by"], comments[1]["confidence"]) == (
        "kl_growth", "author", None)
    assert "/failures/kl_growth" in comments[1]["body"] and "/failures/entropy_collapse" not in comments[1]["body"]
    assert [(s["number"], s["reason"]) for s in preview["skipped"]] == [
        (2, "not a training-failure report, per a person (maintainer)")]
    async with TestClient(TestServer(_preview_app(ctx))) as client:
        html = await (await client.get(f"/repos/{VERL}/preview")).text()
    assert "kl_growth · kind set by a person (author)" in html
    assert "<script>alert" not in html and HOSTILE_LOGIN not in html


def test_evaluate_verdicts_scores_an_exported_file(tmp_path: Path) -> None:
    """benchmarks/evaluate_verdicts.py on a tiny file in the export's shape: the current
    models score it through evaluate_written's scoring; the file's record of the analyzer then
    is counted as /verdicts counts it; a thread of the sealed slice is left out."""
    from benchmarks.evaluate_verdicts import score_file
    from training.data import is_sealed

    def ids(sealed: bool) -> Any:
        n = 910_000
        while True:
            n += 1
            if is_sealed(f"verl-project/verl#{n}") == sealed:
                yield n

    open_ids, sealed_ids = ids(False), ids(True)
    threads = [
        ("Entropy collapses to almost zero after 300 GRPO steps",
         "The policy entropy falls from 0.6 to 0.01 by step 300 and every rollout of a prompt is "
         "the same answer; the reward stops improving.", "entropy_collapse", "entropy_collapse"),
        ("KL divergence keeps growing during training",
         "With kl_coef=0.001 the KL to the reference model climbs from 0.001 to 45 over 500 steps "
         "and the outputs drift into gibberish.", "kl_growth", "entropy_collapse"),
        ("How do I set a cosine learning-rate schedule?",
         "Which option sets the learning-rate schedule of the actor? I could not find it in the docs.",
         None, "other_failure"),
    ]
    lines = []
    for i, (title, body, gold, then) in enumerate(threads):
        number = next(sealed_ids) if i == 0 else next(open_ids)
        for n in ([number, next(open_ids)] if i == 0 else [number]):  # the first also sealed
            lines.append({
                "id": f"verl-project/verl#{n}", "repo": "verl-project/verl", "number": n,
                "kind": "issue", "url": f"https://github.com/verl-project/verl/issues/{n}",
                "title": title, "state": "open", "author": "ana", "created_at": "2026-11-01",
                "body": body, "comments": [], "complete": True,
                "labels": {"is_failure_report": gold is not None, "category": gold},
                "verdict": {"login": "ana", "role": "author", "comment_id": n, "given_at": "2026-11-02T00:00:00Z",
                            "analyzer_is_failure_report": True, "analyzer_category": then,
                            "analyzer_version": "v1"}})
    path = tmp_path / "verdicts.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    out = score_file(path, quiet=True)
    assert out["sealed_left_out"] == 1 and out["threads"] == 3
    assert out["tp"] + out["fn"] == 2  # the two reports people named
    for key in ("precision", "recall", "kind_accuracy", "comment_right_on_kind"):
        assert 0.0 <= out[key] <= 1.0
    assert out["comments_right"] <= out["comments"]
    then = {r["version"]: r for r in out["at_verdict"]}
    assert (then["v1"]["called"], then["v1"]["kind_right"], then["v1"]["kind_wrong"],
            then["v1"]["not_failure_per_person"]) == (3, 1, 1, 1)
