"""What the study's pages show, figure for figure, against ../shared/data/catalog.json (review
study82; skipped when absent), on SQLite and PostgreSQL.

A store seeded with threads written here (through the store's own `upsert_thread`: one of them
first stored under verl's former name), then /study, every /study/sets/{name}, /api/study,
the framework pages and one nightly report (its page and its Markdown) are read as a reader
gets them, and each figure they show is compared with the figure computed here, from the
shared file alone (the landings: dates, days, first anywhere, medians, the frameworks each
method reached) and from the thread list below (proposals per review state, review records per
concern). No figure expected is computed by `analyzers.study` (the landings' dates are read
from the shared first commits by tests/test_study_live.py's reader, which picks the study
methods with `analyzers.study.public_date`; the page's first public dates are checked here
with a reader of this file's own).
"""

from __future__ import annotations

import html
import json
import re
import statistics
from collections.abc import AsyncIterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from tests.test_study_live import _shared_landings

V, OLD_V, ORLHF, T = "verl-project/verl", "volcengine/verl", "OpenRLHF/OpenRLHF", "huggingface/trl"

# --- the expected figures, from the shared file alone --------------------------------------


def _first_public(text: str | None) -> date | None:
    """`2025-03-18`, `2025-08` (the 1st), `2025` (1 January); None otherwise."""
    parts = (text or "").split("-")
    if not parts[0].isdigit() or len(parts[0]) != 4 or len(parts) > 3:
        return None
    return date(int(parts[0]), int(parts[1]) if len(parts) > 1 else 1,
                int(parts[2]) if len(parts) > 2 else 1)


def expected_landings(shared: dict[str, Any]) -> dict[str, Any]:
    """Per study method (first public 2025 or later): its first public day and, per framework
    where an option is found (not one the shared data calls related), the landing day (None:
    undated; read from the shared first commits as tests/test_study_live.py reads them),
    days, and whether it is the method's earliest dated landing."""
    landed = _shared_landings(shared)
    out: dict[str, Any] = {}
    for m in shared["methods"]:
        start = _first_public(m.get("first_public"))
        if start is None or start.year < 2025:
            continue
        where = {fw: when for (mid, fw), when in landed.items() if mid == m["id"]}
        earliest = min((d for d in where.values() if d is not None), default=None)
        out[m["id"]] = {
            "name": m["name"], "first_public": m["first_public"], "start": start,
            "landings": {fw: {"date": d, "days": (d - start).days if d else None,
                              "first": d is not None and d == earliest}
                         for fw, d in where.items()},
        }
    return out


def expected_frameworks(shared: dict[str, Any], methods: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for f in shared["frameworks"]:
        mine = {mid: m["landings"][f["id"]] for mid, m in methods.items() if f["id"] in m["landings"]}
        days = sorted(x["days"] for x in mine.values() if x["days"] is not None)
        median = statistics.median(days) if days else None
        out[f["id"]] = {
            "name": f["name"], "landed": sorted(mine),
            "first": sorted(mid for mid, x in mine.items() if x["first"]),
            "dated": sorted(mid for mid, x in mine.items() if x["days"] is not None),
            "median": None if median is None else (int(median) if median == int(median) else median),
        }
    return out


# --- the threads, and what they should count ------------------------------------------------

# (repo, number, kind, state, review state, linked methods, replied by another, concerns,
#  title, merged/closed at)
THREADS: list[tuple[Any, ...]] = [
    (V, 501, "issue", "closed", "declined", [], True, ["demand"], "Add FancyPO", "2025-12-01T10:00:00Z"),
    (V, 502, "issue", "closed", "redirected", [], True, [], "Add OtherPO", "2025-12-02T10:00:00Z"),
    (V, 503, "pull_request", "open", "open_replied", [], True, ["evidence", "placement"],
     "New loss", None),
    (V, 504, "issue", "open", "open_no_reply", [], False, [], "Add ThirdPO", None),
    (V, 505, "issue", "closed", "lapsed", [], False, [], "Add FourthPO", "2025-12-03T10:00:00Z"),
    # a carried method proposed: not in "proposals for methods no framework carries"
    (V, 506, "issue", "open", "open_no_reply", ["clip-higher"], False, [], "Support clip-higher",
     None),
    # stored under verl's former name first, then under its name: one thread
    (OLD_V, 510, "issue", "open", "open_replied", [], True, ["design_or_interface"],
     "Add RenamedPO", None),
    (T, 601, "pull_request", "closed", "declined", [], True, ["maintenance_burden", "demand"],
     "Add SomePO trainer", "2025-12-04T10:00:00Z"),
    # two merged pull requests adding CISPO in OpenRLHF, which the catalog does not list there:
    # the landing is the earlier merge, one second before midnight UTC
    (ORLHF, 77, "pull_request", "merged", "merged", ["cispo"], True, [], "Add CISPO loss",
     "2025-11-30T23:59:59Z"),
    (ORLHF, 78, "pull_request", "merged", "merged", ["cispo"], False, ["tests_or_docs"],
     "Add CISPO loss (again)", "2025-12-01T00:00:00Z"),
]
CONCERNS = ("design_or_interface", "tests_or_docs", "maintenance_burden", "evidence",
            "placement", "demand", "already_covered", "other")


def _key(repo: str, number: int) -> str:
    return f"{V if repo == OLD_V else repo}#{number}"


def expected_threads() -> dict[str, Any]:
    """Per framework the proposals' buckets, and the review records, from THREADS."""
    framework = {V: "verl", OLD_V: "verl", ORLHF: "openrlhf", T: "trl"}
    carried = {"clip-higher", "cispo"}  # (cispo is carried by six frameworks)
    buckets: dict[str, dict[str, list[str]]] = {}
    groups: dict[str, dict[str, list[str]]] = {
        g: {"threads": [], "replied": [], "with_concern": [], **{c: [] for c in CONCERNS}}
        for g in ("merged_prs", "unmerged_prs", "requests")}
    for repo, number, kind, state, review, methods, replied, concerns, *_ in THREADS:
        key = _key(repo, number)
        b = buckets.setdefault(framework[repo], {"all": [], "open": [], "declined": [], "lapsed": []})
        if not set(methods) & carried:
            b["all"].append(key)
            bucket = {"open_no_reply": "open", "open_replied": "open", "declined": "declined",
                      "redirected": "declined", "lapsed": "lapsed"}.get(review)
            if bucket:
                b[bucket].append(key)
        group = ("merged_prs" if state == "merged" else "unmerged_prs") \
            if kind == "pull_request" else "requests"
        g = groups[group]
        g["threads"].append(key)
        if replied:
            g["replied"].append(key)
        if concerns:
            g["with_concern"].append(key)
        for c in concerns:
            g[c].append(key)
    return {"buckets": buckets, "groups": groups}


async def seed(ctx: Any) -> None:
    from bot.store.models import Analysis
    from bot.store.threads import upsert_thread

    async with ctx.sessionmaker() as session:
        for repo, number, kind, state, review, methods, replied, concerns, title, closed in THREADS:
            record = {"repo": repo, "number": number, "kind": kind, "state": state,
                      "title": title, "body": "", "created_at": "2025-11-01T09:00:00Z",
                      "closed_at": closed}
            thread = await upsert_thread(session, record)
            session.add(Analysis(thread_id=thread.id, analyzer_version="test", is_proposal=True,
                                 review_state=review, methods=methods,
                                 result={"review": {"state": review, "replied_from_other": replied,
                                                    "concerns": concerns}}))
        await session.flush()
        # the renamed repository's thread delivered again under the name it has now
        again = await upsert_thread(session, {"repo": V, "number": 510, "kind": "issue",
                                              "title": "Add RenamedPO"})
        await session.commit()
        assert again.repo in (V, OLD_V)


# --- reading the pages ----------------------------------------------------------------------


def text(fragment: str) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", fragment))).strip()


def table(page: str, table_id: str) -> str:
    found = re.search(rf'<table id="{table_id}">(.*?)</table>', page, re.S)
    assert found is not None, table_id
    return found.group(1)


def cells(row: str) -> list[str]:
    return [text(c) for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.S)]


def rows(fragment: str, attribute: str = "data-method") -> list[tuple[dict[str, str], list[str]]]:
    out = []
    for attrs, body in re.findall(rf'<tr ({attribute}="[^"]*"[^>]*)>(.*?)</tr>', fragment, re.S):
        out.append((dict(re.findall(r'([\w-]+)="([^"]*)"', attrs)), cells(body)))
    return out


def number(value: float | int | None) -> str:
    return "–" if value is None else str(value)


@pytest.fixture(scope="module")
def shared(shared_dir: Path) -> dict[str, Any]:
    return json.loads((shared_dir / "data" / "catalog.json").read_text(encoding="utf-8"))


@pytest.fixture
async def client(ctx: Any) -> AsyncIterator[TestClient]:
    from bot.app import create_app

    async with TestClient(TestServer(create_app(ctx, worker=False))) as c:
        yield c


async def test_every_figure_the_study_pages_show_is_the_shared_datas(
        ctx: Any, client: TestClient, shared: dict[str, Any]) -> None:
    from bot.site.study import refresh_study

    methods = expected_landings(shared)
    frameworks = expected_frameworks(shared, methods)
    names = {f["id"]: f["name"] for f in shared["frameworks"]}
    threads = expected_threads()
    await seed(ctx)
    await refresh_study(ctx)
    page = await (await client.get("/study")).text()
    api = await (await client.get("/api/study")).json()

    # The headline: the study methods, how many reached a framework.
    reached = sorted(mid for mid, m in methods.items() if m["landings"])
    assert f"<p>{len(methods)} catalog methods first public in 2025 or later;" in page
    assert sorted(m["method"] for m in api["methods"] if m["frameworks"]) == reached
    headline = re.search(r'<p id="headline">(.*?)</p>', page, re.S)
    assert headline is not None
    assert (f"Live, from the catalog now: {len(reached)} of the {len(methods)} catalog methods "
            "first public in 2025 or later reached") in text(headline.group(1)).replace(" ,", ",")
    assert f"The catalog holds {len(shared['methods'])} methods" in text(headline.group(1))

    # The landings table: one row per (method, framework), each cell the shared data's.
    shown = rows(table(page, "landings-table"))
    expected_rows = {(mid, fw) for mid, m in methods.items() for fw in m["landings"]}
    assert {(a["data-method"], a["data-framework"]) for a, _ in shown} == expected_rows
    assert len(shown) == len(expected_rows)
    for attrs, (method, first_public, framework, first_commit, days) in shown:
        m = methods[attrs["data-method"]]
        x = m["landings"][attrs["data-framework"]]
        assert method == m["name"]
        month_only = m["first_public"].count("-") < 2
        assert first_public == (f"{m['first_public']} (month only: from {m['start'].isoformat()})"
                                if month_only else m["first_public"])
        assert framework == names[attrs["data-framework"]] + (" first anywhere" if x["first"] else "")
        assert first_commit.split(" ")[0] == (x["date"].isoformat() if x["date"] else "date")
        assert days == ("–" if x["days"] is None else
                        f"{x['days']} code before the paper" if x["days"] < 0 else str(x["days"]))

    # The per-framework table, each number linking to the set it counts.
    table_rows = {a["data-framework"]: c for a, c in rows(table(page, "frameworks-table"),
                                                          "data-framework")}
    assert list(table_rows) == [f["id"] for f in shared["frameworks"]]
    for fid, f in frameworks.items():
        b = threads["buckets"].get(fid, {"all": [], "open": [], "declined": [], "lapsed": []})
        detected = 1 if fid == "openrlhf" else 0
        assert table_rows[fid] == [
            f["name"], str(len(f["landed"])), str(len(f["first"])), number(f["median"]),
            str(detected), *(str(len(b[k])) for k in ("all", "open", "declined", "lapsed"))], fid
        got = api["frameworks"][fid]
        assert (got["methods"], got["first_anywhere"], got["median_days"], got["dated"]) == (
            len(f["landed"]), len(f["first"]), f["median"], len(f["dated"])), fid

    # The review records: threads, replied, with a concern, and per concern.
    review = {c[0]: c[1:] for c in (cells(r) for r in re.findall(
        r"<tr>(.*?)</tr>", table(page, "review-table").split("</thead>")[1], re.S))}
    for i, group in enumerate(("merged_prs", "unmerged_prs", "requests")):
        g = threads["groups"][group]
        assert review["threads"][i] == str(len(g["threads"]))
        assert review["replied by someone other than the proposer"][i] == str(len(g["replied"]))
        assert review["with at least one concern"][i] == str(len(g["with_concern"]))
        concern_rows = [v for k, v in review.items() if k.startswith("concern: ")]
        assert len(concern_rows) == len(CONCERNS)
        for concern, shown_row in zip(CONCERNS, concern_rows, strict=True):
            assert shown_row[i] == str(len(g[concern])), (group, concern)

    # The detected landing: the earlier merge, dated by its UTC day (a second before midnight).
    cispo_start = methods["cispo"]["start"]
    [detected] = rows(table(page, "detected-table"))
    assert detected[1][:4] == ["CISPO", "OpenRLHF", "2025-11-30",
                               str((date(2025, 11, 30) - cispo_start).days)]
    assert detected[1][4].startswith(f"{ORLHF}#77 ( on GitHub ), {ORLHF}#78")

    # Every set page lists exactly what its number counts.
    expected_sets: dict[str, list[str]] = {"reached": reached}
    for fid, f in frameworks.items():
        expected_sets[f"landed.{fid}"] = f["landed"]
        expected_sets[f"first.{fid}"] = f["first"]
        expected_sets[f"dated.{fid}"] = f["dated"]
        expected_sets[f"detected.{fid}"] = ["cispo"] if fid == "openrlhf" else []
        for bucket in ("all", "open", "declined", "lapsed"):
            expected_sets[f"proposals.{fid}.{bucket}"] = sorted(
                threads["buckets"].get(fid, {}).get(bucket, []))
    for group, g in threads["groups"].items():
        for what in ("threads", "replied", "with_concern"):
            expected_sets[f"review.{group}.{what}"] = sorted(g[what])
        for concern in CONCERNS:
            expected_sets[f"review.{group}.concern.{concern}"] = sorted(g[concern])
    assert set(api["sets"]) == set(expected_sets)
    for name, members in expected_sets.items():
        set_page = await (await client.get(f"/study/sets/{name}")).text()
        attribute = "data-method" if name.split(".")[0] in (
            "landed", "first", "dated", "detected", "reached") else "data-key"
        # (the renamed repository's thread is listed once, under either of its names)
        listed = [a[attribute].replace(f"{OLD_V}#", f"{V}#")
                  for a, _ in rows(set_page, attribute)] if members else []
        assert sorted(listed) == members, name
        assert f"</code>: {len(members)}." in set_page, name
        if name == "reached":  # each method's first landing anywhere
            for attrs, (_, _, when, days) in rows(set_page, attribute):
                firsts = [x for x in methods[attrs["data-method"]]["landings"].values() if x["first"]]
                assert when == firsts[0]["date"].isoformat(), attrs
                assert days == (f"{firsts[0]['days']} code before the paper"
                                if firsts[0]["days"] < 0 else str(firsts[0]["days"])), attrs
        elif attribute == "data-method" and not name.startswith("detected."):
            fid = name.split(".")[1]
            for attrs, (_, framework, when, days) in rows(set_page, attribute):
                x = methods[attrs["data-method"]]["landings"][fid]
                assert framework == names[fid]
                assert when == (x["date"].isoformat() if x["date"] else "date unknown"), name
                assert days == ("–" if x["days"] is None else f"{x['days']} code before the paper"
                                if x["days"] < 0 else str(x["days"])), name

    # The framework pages: the methods each has are the shared data's found options.
    for f in shared["frameworks"]:
        fw_page = await (await client.get(f"/frameworks/{f['id']}")).text()
        has = fw_page.split("<h2>Methods it has</h2>")[1].split("<h2>Methods it lacks</h2>")[0]
        listed = re.findall(r'<a href="/methods/([^"]+)">', has)
        found = [m["id"] for m in shared["methods"] if any(
            x["status"].startswith("found") for x in m["frameworks"][f["id"]]["verification"])]
        assert sorted(listed) == sorted(found), f["id"]
        for mid in listed:
            related_only = not any(
                x["status"].startswith("found") and "related" not in x["status"]
                for x in next(m for m in shared["methods"] if m["id"] == mid)["frameworks"][
                    f["id"]]["verification"])
            row = has.split(f'<a href="/methods/{mid}">')[1].split("</tr>")[0]
            assert ("not counted as" in row) == related_only, (f["id"], mid)

    # Every proposal by its review state, on the framework pages and the report's chart table.
    states = ("open_no_reply", "open_replied", "merged", "declined", "redirected", "lapsed",
              "closed_by_author", "closed_other")
    labels = {"open_no_reply": "open, no reply", "open_replied": "open, replied",
              "merged": "merged", "declined": "declined", "redirected": "redirected",
              "lapsed": "lapsed (stale / inactive)"}
    by_state: dict[str, dict[str, int]] = {f["id"]: dict.fromkeys(states, 0)
                                           for f in shared["frameworks"]}
    for repo, _, _, _, review, *_ in THREADS:
        by_state[{V: "verl", OLD_V: "verl", ORLHF: "openrlhf", T: "trl"}[repo]][review] += 1
    for fid, counts in by_state.items():
        fw_page = await (await client.get(f"/frameworks/{fid}")).text()
        tags = re.findall(r'class="tag"[^>]*>([^<]*)</', fw_page.split("<h2>Proposals by state</h2>")[1]
                          .split("<h3>")[0])
        assert tags == [f"{labels[k]}: {n}" for k, n in counts.items() if n] or (
            not any(counts.values()) and tags == []), (fid, tags)

    # One nightly report: its page and its Markdown give the landing and the states so.
    from bot.site.report import build_report, render_markdown, store_report

    day = date(2026, 12, 5)
    data = await build_report(ctx, day)
    await store_report(ctx, data, render_markdown(data))
    markdown = await (await client.get(f"/reports/{day}.md")).text()
    report_page = await (await client.get(f"/reports/{day}")).text()
    days = (date(2025, 11, 30) - cispo_start).days
    assert (f"CISPO in [`{ORLHF}#77`](/threads/{ORLHF}/77), merged 2025-11-30, {days} d after the "
            "method's first public version.") in markdown
    assert f"merged 2025-11-30, {days} d after" in text(report_page)
    assert "- Proposals: 7 (open, no reply: 2; open, replied: 2; declined: 1; redirected: 1; " \
           "lapsed (stale / inactive): 1)." in markdown
    chart_rows = {a["data-framework"]: c for a, c in rows(report_page, "data-framework")}
    for fid, counts in by_state.items():
        assert chart_rows[fid][0] == names[fid]
        assert chart_rows[fid][1:10] == [*(str(counts[k]) for k in states),
                                              str(sum(counts.values()))], fid
    assert "- Proposals: 1 (declined: 1)." in markdown
    assert "- Proposals: 2 (merged: 2)." in markdown
