"""The study: exact numbers on a small catalog and thread set written here; /study and
/api/study from the shipped catalog and a seeded database (SQLite and PostgreSQL); the nightly
path against the fake GitHub (a merged pull request naming a method becomes a detected landing
once); `rltracker study --json`."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from collections.abc import AsyncIterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiohttp.test_utils import TestClient, TestServer
from sqlalchemy import select

from analyzers.catalog import CATALOG_DIR, Catalog, load_catalog, load_catalog_from
from analyzers.study import (
    StudyThread,
    commit_date,
    compute_study,
    lands,
    public_date,
    study_methods,
)
from bot.context import AppContext
from bot.store.models import Analysis, JobRun, Report, Thread

V, T, S = "verl-project/verl", "huggingface/trl", "THUDM/slime"

# --- a small catalog ----------------------------------------------------------------------------


def _opt(first_commit: str | None) -> dict[str, Any]:
    return {"name": "opt", "set_by": "opt=1", "keys": ["opt"], "file": "x.py", "status": "found",
            "first_commit": first_commit}


METHODS = [
    # alpha: verl +10, trl +20 (the earlier of two options), slime -9 (code before the paper)
    {"id": "alpha", "name": "Alpha", "first_public": "2025-03-10",
     "options": {"verl": [_opt("aaaaaaa 2025-03-20")],
                 "trl": [_opt("bbbbbbb 2025-04-09 (note naming 2025-01-01)"), _opt("ccccccc 2025-03-30")],
                 "slime": [_opt("ddddddd 2025-03-01 (initial commit)")]}},
    # beta: month-only date = 2025-06-01; trl +10, verl +13
    {"id": "beta", "name": "Beta", "first_public": "2025-06",
     "options": {"trl": [_opt("eeeeeee 2025-06-11")], "verl": [_opt("fffffff 2025-06-14")]}},
    # gamma: verl carries it with no date; trl +30
    {"id": "gamma", "name": "Gamma", "first_public": "2025-08-15",
     "options": {"verl": [_opt(None)], "trl": [_opt("1234567 2025-09-14")]}},
    # delta: first public before 2025, not a study method
    {"id": "delta", "name": "Delta", "first_public": "2024-12-31",
     "options": {"verl": [_opt("abcdef0 2025-01-05")]}},
    # epsilon: carried by no framework
    {"id": "epsilon", "name": "Epsilon", "first_public": "2025-10-01"},
    # zeta: no date at all, not a study method; carried by trl
    {"id": "zeta", "name": "Zeta", "first_public": None, "options": {"trl": [_opt("7654321 2025-02-02")]}},
    # eta: verl and slime on the same day (+6): first anywhere for both
    {"id": "eta", "name": "Eta", "first_public": "2025-05-05",
     "options": {"verl": [_opt("aaaa111 2025-05-11")], "slime": [_opt("bbbb222 2025-05-11")]}},
]


@pytest.fixture(scope="module")
def small_catalog(tmp_path_factory: pytest.TempPathFactory) -> Catalog:
    d = tmp_path_factory.mktemp("catalog")
    shutil.copy(CATALOG_DIR / "failures.yaml", d / "failures.yaml")
    frameworks = [{"id": fid, "name": name, "repo": repo, "verified_commit": "0" * 40}
                  for fid, name, repo in (("verl", "verl", V), ("trl", "TRL", T), ("slime", "slime", S))]
    (d / "frameworks.yaml").write_text(yaml.safe_dump({"frameworks": frameworks}))
    methods = [dict(m, aliases=[], papers=[], failures=[]) for m in METHODS]
    (d / "methods.yaml").write_text(yaml.safe_dump({"methods": methods}))
    return load_catalog_from(d)


def th(repo: str, number: int, kind: str, *, proposal: bool = True, state: str = "open",
       review: str | None = "open_no_reply", methods: tuple[str, ...] = (), replied: bool = False,
       concerns: tuple[str, ...] = (), closed_at: str | None = None) -> StudyThread:
    return StudyThread(repo=repo, number=number, kind=kind, state=state, is_proposal=proposal,
                       review_state=review, methods=methods, replied_from_other=replied,
                       concerns=concerns, closed_at=closed_at)


THREADS = [
    th(V, 1, "issue"),                                                      # no method linked: counts
    th(V, 2, "issue", state="closed", review="declined", methods=("epsilon",), replied=True,
       concerns=("demand",)),
    th(V, 3, "pull_request", state="closed", review="redirected", methods=("epsilon",),
       replied=True, concerns=("placement",)),                              # redirected = declined
    th(V, 4, "issue", state="closed", review="lapsed", methods=("alpha",)),  # alpha is carried
    th(V, 5, "issue", state="closed", review="lapsed"),
    th(V, 6, "issue", review="open_replied", methods=("epsilon", "alpha"), replied=True),
    th(V, 7, "issue", proposal=False),
    th(V, 8, "pull_request", state="merged", review="merged", methods=("zeta",),
       closed_at="2025-03-01T10:00:00Z"),                                   # detected, not a study method
    th(T, 10, "pull_request", state="merged", review="merged", methods=("eta",), replied=True,
       concerns=("tests_or_docs",), closed_at="2025-07-01T08:00:00Z"),
    th(T, 11, "pull_request", state="merged", review="merged", methods=("eta",),
       closed_at="2025-06-20T08:00:00Z"),                                   # the earlier merge lands
    th(T, 12, "pull_request", state="merged", review="merged", methods=("alpha",), replied=True,
       closed_at="2025-05-01T00:00:00Z"),                                   # already in the catalog
    th(T, 13, "pull_request", review="open_replied", methods=("epsilon",), replied=True,
       concerns=("evidence", "placement")),
    th(S, 20, "pull_request", proposal=False, state="merged", review="merged", methods=("beta",),
       closed_at="2025-07-01T00:00:00Z"),                                   # not a proposal
    th(S, 21, "discussion", state="closed", review="closed_other"),
    th("someone/else", 1, "issue"),                                         # not a tracked framework
]


def test_dates_month_only_and_commit_notes() -> None:
    assert public_date("2025-08") == date(2025, 8, 1)
    assert public_date("2025-03-18") == date(2025, 3, 18)
    assert public_date("1991") == date(1991, 1, 1)
    assert public_date(None) is None and public_date("soon") is None
    assert commit_date("21271aabb 2025-10-13 (first option: b8dc5377c 2025-08-26)") == (
        "21271aabb", date(2025, 10, 13))
    assert commit_date("e0be9a075 2025-06-18 (initial commit)") == ("e0be9a075", date(2025, 6, 18))
    assert commit_date(None) == (None, None) and commit_date("no date here") == (None, None)


def test_study_methods_are_2025_or_later_oldest_first(small_catalog: Catalog) -> None:
    assert [m.id for m in study_methods(small_catalog)] == ["alpha", "eta", "beta", "gamma", "epsilon"]


def test_landings_days_and_code_before_the_paper(small_catalog: Catalog) -> None:
    study = compute_study(small_catalog, [])
    verified = {(x["method"], x["framework"]): x for x in study["landings"] if not x["detected"]}
    assert {k: (x["date"], x["days"]) for k, x in verified.items()} == {
        ("alpha", "verl"): ("2025-03-20", 10),
        ("alpha", "trl"): ("2025-03-30", 20),   # the earlier of trl's two options
        ("alpha", "slime"): ("2025-03-01", -9),
        ("eta", "verl"): ("2025-05-11", 6),
        ("eta", "slime"): ("2025-05-11", 6),
        ("beta", "verl"): ("2025-06-14", 13),
        ("beta", "trl"): ("2025-06-11", 10),    # month-only: from 2025-06-01
        ("gamma", "verl"): (None, None),        # carried, no date
        ("gamma", "trl"): ("2025-09-14", 30),
    }
    assert [k for k, x in verified.items() if x["before_paper"]] == [("alpha", "slime")]
    assert verified[("alpha", "trl")]["commit_url"] == f"https://github.com/{T}/commit/ccccccc"
    first = sorted(k for k, x in verified.items() if x["first_anywhere"])
    assert first == [("alpha", "slime"), ("beta", "trl"), ("eta", "slime"), ("eta", "verl"),
                     ("gamma", "trl")]
    assert [m["method"] for m in study["methods"]] == ["alpha", "eta", "beta", "gamma", "epsilon"]
    assert study["methods"][-1]["frameworks"] == [] and study["methods"][-1]["first_landing"] is None


def test_per_framework_numbers(small_catalog: Catalog) -> None:
    fw = compute_study(small_catalog, THREADS)["frameworks"]
    numbers = {fid: (f["methods"], f["first_anywhere"], f["median_days"], f["dated"], f["detected"])
               for fid, f in fw.items()}
    assert numbers == {
        "verl": (4, 1, 10, 3, 1),     # days 10, 6, 13; gamma undated
        "trl": (3, 2, 20, 3, 1),      # days 20, 10, 30
        "slime": (2, 2, -1.5, 2, 0),  # days -9 and 6: an even count, mean of the middle two
    }
    assert fw["verl"]["proposals"] == {"all": 4, "open": 1, "declined": 2, "lapsed": 1}
    assert fw["trl"]["proposals"] == {"all": 1, "open": 1, "declined": 0, "lapsed": 0}
    assert fw["slime"]["proposals"] == {"all": 1, "open": 0, "declined": 0, "lapsed": 0}


def test_every_number_names_what_it_counts(small_catalog: Catalog) -> None:
    study = compute_study(small_catalog, THREADS)
    sets, verl = study["sets"], study["frameworks"]["verl"]
    assert sets[verl["sets"]["methods"]] == ["alpha", "eta", "beta", "gamma"]
    assert sets[verl["sets"]["first_anywhere"]] == ["eta"]
    assert sets[verl["sets"]["median_days"]] == ["alpha", "eta", "beta"]
    assert sets[verl["sets"]["proposals"]["declined"]] == [f"{V}#2", f"{V}#3"]
    assert sets[verl["sets"]["proposals"]["all"]] == [f"{V}#1", f"{V}#2", f"{V}#3", f"{V}#5"]
    for fid, f in study["frameworks"].items():
        assert len(sets[f["sets"]["methods"]]) == f["methods"], fid
        for bucket, n in f["proposals"].items():
            assert len(sets[f["sets"]["proposals"][bucket]]) == n, (fid, bucket)
    for group, r in study["review_records"].items():
        assert len(sets[r["sets"]["replied"]]) == r["replied"], group
        for kind, n in r["concerns"].items():
            assert len(sets[r["sets"]["concerns"][kind]]) == n, (group, kind)


def test_review_records(small_catalog: Catalog) -> None:
    review = compute_study(small_catalog, THREADS)["review_records"]
    summary = {g: (r["threads"], r["replied"], r["with_concern"],
                   {k: n for k, n in r["concerns"].items() if n}) for g, r in review.items()}
    assert summary == {
        "merged_prs": (4, 2, 1, {"tests_or_docs": 1}),             # verl#8, trl#10, #11, #12
        "unmerged_prs": (2, 2, 2, {"placement": 2, "evidence": 1}),  # verl#3, trl#13
        "requests": (5, 2, 1, {"demand": 1}),                      # verl#1, 2, 4, 5, 6
    }


def test_detected_landings_kept_apart(small_catalog: Catalog) -> None:
    seen = {"eta@trl": "2026-01-01T00:00:00Z"}
    study = compute_study(small_catalog, THREADS, seen)
    detected = [x for x in study["landings"] if x["detected"]]
    assert [(x["method"], x["framework"], x["date"], x["days"], x["pull_request"], x["in_study"],
             x["detected_at"]) for x in detected] == [
        ("zeta", "verl", "2025-03-01", None, f"{V}#8", False, None),
        ("eta", "trl", "2025-06-20", 46, f"{T}#11", True, "2026-01-01T00:00:00Z"),
    ]
    assert detected[1]["pull_requests"] == [f"{T}#11", f"{T}#10"]
    # Verified numbers do not move: trl still has three study methods.
    assert study["frameworks"]["trl"]["methods"] == 3
    assert study["sets"]["detected.trl"] == ["eta"]


def test_same_day_merges_land_by_the_earlier_merge_not_by_the_key_string(
        small_catalog: Catalog) -> None:
    """Two pull requests linking eta merged in trl on one day: the landing is the earlier
    merge (#9 at 08:00), not "#10" because the string "trl#10" sorts before "trl#9"."""
    prs = [th(T, 10, "pull_request", state="merged", review="merged", methods=("eta",),
              closed_at="2025-06-20T15:00:00Z"),
           th(T, 9, "pull_request", state="merged", review="merged", methods=("eta",),
              closed_at="2025-06-20T08:00:00Z")]
    [landing] = [x for x in compute_study(small_catalog, prs)["landings"] if x["detected"]]
    assert landing["pull_request"] == f"{T}#9"
    assert landing["pull_requests"] == [f"{T}#9", f"{T}#10"]
    # Merged at the same moment (or dated by the day only): the lower number, as a number.
    same = [dataclasses.replace(p, closed_at="2025-06-20") for p in prs]
    [landing] = [x for x in compute_study(small_catalog, same)["landings"] if x["detected"]]
    assert landing["pull_requests"] == [f"{T}#9", f"{T}#10"]


def test_a_merge_is_dated_by_its_day_in_utc_whatever_offset_it_carries(
        small_catalog: Catalog) -> None:
    """Every day the study counts is a UTC day (the pages, the API, the exports and the report
    all show UTC). A merge time given with an offset was dated by the day written in it:
    01:00 on the 20th at +09:00 is 16:00 on the 19th in UTC, and 21:30 on the 19th at -05:00
    is 02:30 on the 20th; the earlier merge (in time) lands, on its UTC day."""
    tokyo = th(T, 30, "pull_request", state="merged", review="merged", methods=("eta",),
               closed_at="2025-06-20T01:00:00+09:00")
    chicago = th(T, 31, "pull_request", state="merged", review="merged", methods=("eta",),
                 closed_at="2025-06-19T21:30:00-05:00")
    [landing] = [x for x in compute_study(small_catalog, [chicago])["landings"] if x["detected"]]
    assert (landing["date"], landing["days"]) == ("2025-06-20", 46)  # eta: first public 05-05
    [landing] = [x for x in compute_study(small_catalog, [tokyo, chicago])["landings"]
                 if x["detected"]]
    assert (landing["pull_request"], landing["date"], landing["days"]) == (f"{T}#30", "2025-06-19", 45)
    assert landing["pull_requests"] == [f"{T}#30", f"{T}#31"]
    # just before and at midnight UTC: two days
    for closed_at, day in (("2025-06-19T23:59:59Z", "2025-06-19"), ("2025-06-20T00:00:00Z", "2025-06-20")):
        pr = dataclasses.replace(tokyo, closed_at=closed_at)
        [landing] = [x for x in compute_study(small_catalog, [pr])["landings"] if x["detected"]]
        assert landing["date"] == day


def test_shipped_catalog_numbers_follow_the_rules() -> None:
    cat = load_catalog()
    study = compute_study(cat, [])
    clip = next(x for x in study["landings"] if (x["method"], x["framework"]) == ("clip-higher", "verl"))
    assert (clip["date"], clip["days"], clip["detected"]) == ("2025-04-04", 17, False)
    for fid, fw in study["frameworks"].items():
        carried = [m for m in cat.methods.values() if lands(m, fid) and public_date(m.first_public)
                   and public_date(m.first_public).year >= 2025]
        assert fw["methods"] == len(carried), fid
    assert sum(fw["first_anywhere"] for fw in study["frameworks"].values()) >= len(
        [m for m in study["methods"] if m["first_landing"]])
    assert set(study["frameworks"]) == {"verl", "trl", "openrlhf", "nemo-rl", "roll", "slime", "areal"}
    assert "month-only" in study["rules"]["study_methods"]


# --- the pages, on the shipped catalog --------------------------------------------------------


async def seed_threads(ctx: Any) -> None:
    """Proposals in the real frameworks: a declined and a redirected request and an unmerged
    pull request in verl, and a merged OpenRLHF pull request naming CISPO, which the catalog
    does not list for OpenRLHF (a detected landing)."""
    rows = [
        (V, 501, "issue", "closed", "declined", [], True, ["demand"], "Add FancyPO"),
        (V, 502, "issue", "closed", "redirected", [], True, [], "<b>Add</b> OtherPO"),
        (V, 503, "pull_request", "open", "open_replied", [], True, ["evidence"], "New loss"),
        ("OpenRLHF/OpenRLHF", 77, "pull_request", "merged", "merged", ["cispo"], True, [],
         "Add CISPO loss"),
    ]
    async with ctx.sessionmaker() as session:
        for repo, number, kind, state, review, methods, replied, concerns, title in rows:
            thread = Thread(repo=repo, number=number, kind=kind, state=state, title=title,
                            closed_at=datetime(2025, 12, 1, tzinfo=UTC) if state != "open" else None)
            session.add(thread)
            await session.flush()
            session.add(Analysis(thread_id=thread.id, analyzer_version="test", is_proposal=True,
                                 review_state=review, methods=methods,
                                 result={"review": {"state": review, "replied_from_other": replied,
                                                    "concerns": concerns}}))
        await session.commit()


@pytest.fixture
async def client(ctx: AppContext) -> AsyncIterator[TestClient]:
    from bot.app import create_app

    async with TestClient(TestServer(create_app(ctx, worker=False))) as c:
        yield c


async def test_empty_database_says_how_sections_get_filled(client: TestClient) -> None:
    resp = await client.get("/study")
    assert resp.status == 200
    html = await resp.text()
    assert 'id="timeline"' in html and 'id="landings-table"' in html
    assert html.count("<code>rltracker sync</code>") == 2  # proposals and review sections
    assert "GITHUB_TOKEN" in html and "GitHub App is installed" in html
    data = await (await client.get("/api/study")).json()
    assert data["proposals_stored"] == 0 and "rltracker sync" in data["how_to_fill"]
    expected = compute_study(load_catalog(), [])
    for fid, fw in expected["frameworks"].items():
        got = data["frameworks"][fid]
        assert (got["methods"], got["first_anywhere"], got["median_days"]) == (
            fw["methods"], fw["first_anywhere"], fw["median_days"]), fid
    assert {"method": "clip-higher", "framework": "verl", "date": "2025-04-04", "days": 17,
            "detected": False}.items() <= data["landings"][0].items()


async def test_page_and_json_with_stored_proposals(ctx: AppContext, client: TestClient) -> None:
    before = await (await client.get("/api/study")).json()
    assert before["proposals_stored"] == 0
    await seed_threads(ctx)
    data = await (await client.get("/api/study")).json()  # not the study computed before
    assert data["proposals_stored"] == 4
    assert data["frameworks"]["verl"]["proposals"] == {"all": 3, "open": 1, "declined": 2, "lapsed": 0}
    assert data["review_records"]["requests"]["threads"] == 2
    assert data["review_records"]["unmerged_prs"]["concerns"]["evidence"] == 1
    [landing] = [x for x in data["landings"] if x["detected"]]
    assert (landing["method"], landing["framework"], landing["date"]) == ("cispo", "openrlhf", "2025-12-01")
    assert landing["days"] == (date(2025, 12, 1) - date(2025, 6, 16)).days
    assert landing["detected_at"] is None  # the nightly job has not recorded it yet
    assert data["frameworks"]["openrlhf"]["methods"] == compute_study(load_catalog(), [])[
        "frameworks"]["openrlhf"]["methods"]  # a detected landing moves no verified number
    html = await (await client.get("/study")).text()
    assert 'id="detected-table"' in html and 'href="/threads/OpenRLHF/OpenRLHF/77"' in html
    assert "GITHUB_TOKEN" not in html
    assert 'class="mark detected"' in html
    assert "2025-08 <span class=\"small muted\">(month only: from 2025-08-01)</span>" in html  # TIS
    # Every number links to its set; each set page lists what the number counts.
    links = re.findall(r'<a class="num" href="(/study/sets/[^"]+)"[^>]*>(-?[\d.]+)</a>', html)
    assert len(links) >= 7 * 8 + 3 * 11
    declined = await (await client.get("/study/sets/proposals.verl.declined")).text()
    assert "&lt;b&gt;Add&lt;/b&gt; OtherPO" in declined and 'href="/threads/verl-project/verl/501"' in declined
    assert declined.count("<tr data-key=") == 2
    landed = await (await client.get("/study/sets/landed.verl")).text()
    assert landed.count("<tr data-method=") == data["frameworks"]["verl"]["methods"]
    assert (await client.get("/study/sets/nope")).status == 404


async def test_study_command_prints_the_json(ctx: AppContext, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    from bot.cli import main

    await seed_threads(ctx)
    monkeypatch.setenv("DATABASE_URL", ctx.settings.database_url)
    import asyncio

    code = await asyncio.to_thread(main, ["study", "--json"])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert data["frameworks"]["verl"]["proposals"]["declined"] == 2
    assert [x["method"] for x in data["landings"] if x["detected"]] == ["cispo"]


# --- the nightly path against the fake GitHub ---------------------------------------------------


@pytest.fixture
async def nctx(settings: Any, fake_github: Any, shared_dir: Path) -> AsyncIterator[AppContext]:
    from tests.fake_graphql import FakeData, graphql_context

    async with graphql_context(settings, fake_github, shared_dir, FakeData.generate(3, seed=7, long_every=0)) as ctx:
        yield ctx


async def test_nightly_sync_makes_a_merged_pr_a_detected_landing_once(nctx: AppContext) -> None:
    from bot.scheduler import nightly_job
    from bot.site.report import run_report
    from bot.site.study import build_study

    assert not load_catalog().methods["cispo"].has("openrlhf")
    data = nctx.extras["data"]
    pr = data.add_thread("OpenRLHF/OpenRLHF", "pull_request", closed=False,
                         body="This PR adds the CISPO policy loss (arXiv:2506.13585) as a new "
                              "--policy_loss_type cispo option.")
    pr["title"] = "[Feature] Add CISPO loss"
    merged_at = pr["createdAt"]
    pr.update(state="MERGED", merged=True, mergedAt=merged_at, closedAt=merged_at,
              mergedBy={"__typename": "User", "login": "maintainer"})
    key = f"OpenRLHF/OpenRLHF#{pr['number']}"

    first = await nightly_job(nctx)
    assert first["counts"]["study"]["new_detected"] == ["cispo@openrlhf"], first["counts"]
    assert first["counts"]["report"]["new_landings"] == 1
    async with nctx.sessionmaker() as session:
        study, _ = await build_study(session)
        report = await session.scalar(select(Report))
    [landing] = [x for x in study["landings"] if x["detected"]]
    assert (landing["method"], landing["framework"], landing["pull_request"]) == ("cispo", "openrlhf", key)
    assert landing["date"] == merged_at[:10] and landing["detected_at"]
    # the posted Markdown links the tracker's page, never GitHub (no "mentioned this" there)
    public = nctx.settings.public_url
    assert (f"CISPO in [`{key}`]({public}/threads/OpenRLHF/OpenRLHF/{pr['number']})"
            in report.markdown)
    assert "New landings" in report.markdown
    from bot.site.report import render_html

    html = render_html(report.data)
    assert f'<li data-method="cispo"><a href="/methods/cispo">CISPO</a> in <a href="/threads/OpenRLHF/OpenRLHF/{pr["number"]}">' in html
    from bot.app import create_app

    async with TestClient(TestServer(create_app(nctx, worker=False))) as client:
        page = await (await client.get("/study")).text()
    detected = re.search(r'<table id="detected-table">.*?</table>', page, re.S)
    assert detected is not None and f'href="/threads/OpenRLHF/OpenRLHF/{pr["number"]}"' in detected.group(0)
    assert landing["detected_at"] in detected.group(0)  # first seen by the nightly job

    # A second night: the same landing, recorded once; the next day's report does not list it again.
    second = await nightly_job(nctx)
    assert second["counts"]["study"]["new_detected"] == [] and second["counts"]["study"]["detected"] == 1
    async with nctx.sessionmaker() as session:
        runs = list(await session.scalars(select(JobRun).where(JobRun.name == "study").order_by(JobRun.id)))
        study2, _ = await build_study(session)
    assert len(runs) == 2
    assert [x["detected_at"] for x in study2["landings"] if x["detected"]] == [landing["detected_at"]]
    tomorrow = datetime.now(UTC).date() + timedelta(days=1)
    later = await run_report(nctx, tomorrow)
    assert later["new_landings"] == 0
    async with nctx.sessionmaker() as session:
        row = await session.scalar(select(Report).where(Report.date == tomorrow.isoformat()))
    assert "New landings" not in row.markdown


async def test_a_set_page_on_a_fresh_install_says_what_fills_it(client: TestClient) -> None:
    """A set page of stored threads said "None." on a fresh install, with nothing on what
    would appear there nor when: it says what the set holds and how proposals come in."""
    sets = (await (await client.get("/api/study")).json())["sets"]
    for name in ("proposals.verl.declined", "detected.verl"):
        if name not in sets:
            continue
        resp = await client.get(f"/study/sets/{name}")
        assert resp.status == 200, name
        html = await resp.text()
        assert "<p class=\"muted\">None.</p>" not in html, name
        assert "rltracker sync" in html and "nightly" in html, name
    landed = [n for n in sets if n.startswith("review.")]
    assert landed, sorted(sets)[:20]
    html = await (await client.get(f"/study/sets/{landed[0]}")).text()
    assert "rltracker sync" in html


async def test_a_landing_a_day_from_its_paper_is_one_day(client: TestClient) -> None:
    """The timeline's marks and the landings table named a landing a day after its method's
    first public version "1 days" (TRL's Clip-higher: "Clip-higher in TRL: 2025-03-19, 1
    days"), as a screen reader and a pointer's tooltip read it."""
    import re

    data = await (await client.get("/api/study")).json()
    if not any(x["days"] in (1, -1) for x in data["landings"]):
        pytest.skip("no landing a day from its method's first public version in this catalog")
    html = await (await client.get("/study")).text()
    assert re.search(r"\b1 days\b", html) is None, re.search(r".{80}\b1 days\b.{20}", html)
    assert re.search(r"\b1 day\b", html)


async def test_a_set_spelled_otherwise_moves_to_its_canonical_url(client: TestClient) -> None:
    """/study/sets/landed.VERL was a 404 where /frameworks/VERL is a 301 to /frameworks/verl
    (left76): another spelling of a set name is the same 301, its query kept; a name that
    means no set is still the 404."""
    sets = (await (await client.get("/api/study")).json())["sets"]
    assert {"landed.verl", "proposals.nemo-rl.declined"} <= set(sets)
    for typed, canonical in (("landed.VERL", "/study/sets/landed.verl"),
                             ("Detected.verl", "/study/sets/detected.verl"),
                             ("proposals.NeMo_RL.declined", "/study/sets/proposals.nemo-rl.declined"),
                             ("landed.TRL?from=a%26b", "/study/sets/landed.trl?from=a%26b")):
        moved = await client.get(f"/study/sets/{typed}", allow_redirects=False)
        assert moved.status == 301, typed
        assert moved.headers["Location"] == canonical
        assert (await client.get(canonical)).status == 200
    assert (await client.get("/study/sets/landed.nope", allow_redirects=False)).status == 404
