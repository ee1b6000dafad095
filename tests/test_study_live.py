"""The study's tables kept live (review study66), on SQLite and PostgreSQL where a store is
involved:

- the per-framework numbers computed here, independently of `analyzers.study`, from
  ../shared/data/catalog.json (skipped when absent), against the study the shipped catalog
  gives: methods landed, first anywhere, median days, dated landings, and the frameworks each
  method of the paper's Table 11 reached;
- what a new live thread does to the tables: GitHub's own webhook payloads
  (../shared/fixtures/webhooks/pull_request/*.json, issues/opened.json) adapted to OpenRLHF and
  CISPO (which the catalog does not list for OpenRLHF), handled as the worker handles them;
  /api/study and /study follow at once; the nightly study step records the landing once and
  the night's report lists it once.
"""

from __future__ import annotations

import copy
import json
import re
import statistics
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer
from gidgethub import sansio

from analyzers.catalog import load_catalog
from analyzers.study import compute_study, public_date
from bot.webhooks import events
from tests.test_study_facts import shared_options

OPENRLHF = "OpenRLHF/OpenRLHF"
CISPO_PUBLIC = date(2025, 6, 16)

# --- the numbers, computed independently from the shared catalog ----------------------------

# "<sha> <date>" at the start of a shared first-commit string (the commit adding the option)
_FIRST = re.compile(r"^\s*([0-9a-f]{7,40}) (\d{4}-\d{2}-\d{2})\b")
# the note naming the commit that brought the same method first under another option name:
# "(first TIS option tis_imp_ratio_cap: b8dc5377c 2025-08-26)"
_FIRST_UNDER_OTHER_NAME = re.compile(r"\(first [^():]* option [^():]*: ([0-9a-f]{7,40}) "
                                     r"(\d{4}-\d{2}-\d{2})\)")


def _shared_landings(shared: dict[str, Any]) -> dict[tuple[str, str], date | None]:
    """(method, framework) -> landing date (None: landed, undated), for methods first public
    in 2025 or later, from the shared data's first commits (and a note naming the commit that
    brought the method first under another option name)."""
    out: dict[tuple[str, str], date | None] = {}
    for m, fw, _, present in shared_options(shared):
        if not present:
            continue
        dates = []
        for x in present:
            text = x.get("first_commit_with_string") or ""
            for found in (_FIRST.match(text), _FIRST_UNDER_OTHER_NAME.search(text)):
                if found:
                    dates.append(date.fromisoformat(found.group(2)))
        out[(m["id"], fw)] = min(dates) if dates else None
    return out


@pytest.fixture(scope="module")
def shared(shared_dir: Path) -> dict[str, Any]:
    return json.loads((shared_dir / "data" / "catalog.json").read_text(encoding="utf-8"))


def test_the_per_framework_numbers_are_the_shared_catalogs(shared: dict[str, Any]) -> None:
    """Methods landed, first anywhere (a tie counts for each), median days (the mean of the
    two middle ones for an even count) and dated landings per framework, and the number of
    study methods that reached any framework: counted here from the shared data alone."""
    landings = _shared_landings(shared)
    starts = {m["id"]: public_date(m.get("first_public")) for m in shared["methods"]}
    earliest: dict[str, date] = {}
    for (mid, _), when in landings.items():
        if when is not None and (mid not in earliest or when < earliest[mid]):
            earliest[mid] = when
    expected = {}
    for fw in (f["id"] for f in shared["frameworks"]):
        mine = {mid: when for (mid, f), when in landings.items() if f == fw}
        days = [(when - starts[mid]).days for mid, when in mine.items() if when is not None]
        median = statistics.median(days) if days else None
        expected[fw] = (len(mine), sum(1 for mid, when in mine.items() if when == earliest.get(mid)
                                       and when is not None),
                        median, len(days))
    study = compute_study(load_catalog(), [])
    got = {fw: (f["methods"], f["first_anywhere"], f["median_days"], f["dated"])
           for fw, f in study["frameworks"].items()}
    assert got == expected
    reached = {mid for mid, _ in landings}
    assert {m["method"] for m in study["methods"] if m["frameworks"]} == reached
    # verl's median is the paper's (Table 2: 25 days) once TIS counts from its first name
    assert got["verl"][2] == shared["frameworks"][0]["paper_table2"]["median_days"] == 25


def test_each_table_11_method_reached_the_frameworks_the_paper_says(
        shared: dict[str, Any]) -> None:
    """Where the shared data says for every framework whether the paper lists the method
    (its Table 11), the study's frameworks are those, as many as the paper counts."""
    rows = {m["method"]: m for m in compute_study(load_catalog(), [])["methods"]}
    checked = 0
    for m in shared["methods"]:
        said = {fw: e.get("paper_lists_framework") for fw, e in m["frameworks"].items()}
        if m["id"] not in rows or None in said.values():
            continue
        listed = sorted(fw for fw, yes in said.items() if yes)
        assert sorted(rows[m["id"]]["frameworks"]) == listed, m["id"]
        assert len(listed) == m["paper"]["frameworks_count"], m["id"]
        checked += 1
    assert checked == 6  # clip-higher, GSPO, dynamic sampling, Dr. GRPO, CISPO, TIS


# --- a new live thread, from GitHub's own webhook payloads -----------------------------------

BODY = ("This PR adds the CISPO policy loss (arXiv:2506.13585) as a new --policy_loss_type "
        "cispo option.")


def _payload(shared_dir: Path, name: str) -> dict[str, Any]:
    return copy.deepcopy(json.loads((shared_dir / "fixtures" / "webhooks" / name).read_text()))


def _in_openrlhf(payload: dict[str, Any]) -> dict[str, Any]:
    owner, name = OPENRLHF.split("/")
    payload["repository"].update(full_name=OPENRLHF, name=name)
    payload["repository"]["owner"]["login"] = owner
    return payload


def pull_request(shared_dir: Path, number: int, opened: str, *, closed: str | None = None,
                 merged: bool = False) -> tuple[str, dict[str, Any]]:
    """GitHub's `pull_request` opened (or closed) payload, made OpenRLHF's pull request
    `number` adding CISPO, opened at `opened`, closed (merged) at `closed`."""
    payload = _in_openrlhf(_payload(shared_dir, f"pull_request/{'closed' if closed else 'opened'}.json"))
    payload["number"] = number
    payload["pull_request"].update(
        number=number, id=700000 + number, node_id=f"PR_{number}",
        title="[Feature] Add CISPO loss", body=BODY, created_at=opened,
        updated_at=closed or opened, closed_at=closed, merged=merged,
        merged_at=closed if merged else None, state="closed" if closed else "open",
        html_url=f"https://github.com/{OPENRLHF}/pull/{number}")
    return "pull_request", payload


def request_issue(shared_dir: Path, number: int, opened: str) -> tuple[str, dict[str, Any]]:
    payload = _in_openrlhf(_payload(shared_dir, "issues/opened.json"))
    payload["issue"].update(
        number=number, id=800000 + number, node_id=f"I_{number}",
        title="[Feature request] Support CISPO",
        body="Please add the CISPO loss (arXiv:2506.13585) as a policy loss option.",
        created_at=opened, updated_at=opened, html_url=f"https://github.com/{OPENRLHF}/issues/{number}")
    return "issues", payload


async def deliver(ctx: Any, delivery: tuple[str, dict[str, Any]]) -> None:
    event, payload = delivery
    await events.router.dispatch(sansio.Event(payload, event=event,
                                              delivery_id=str(uuid.uuid4())), ctx)


@pytest.fixture
async def client(ctx: Any) -> AsyncIterator[TestClient]:
    from bot.app import create_app

    async with TestClient(TestServer(create_app(ctx, worker=False))) as c:
        yield c


def _detected(study: dict[str, Any]) -> list[dict[str, Any]]:
    return [x for x in study["landings"] if x["detected"]]


async def test_a_merged_pull_request_delivered_by_webhook_lands_in_the_tables(
        ctx: Any, client: TestClient, shared_dir: Path) -> None:
    """A request issue for CISPO in OpenRLHF, then two pull requests adding it: #902 opened
    first and merged last, #903 opened later and merged first, at 23:30 on 1 March at -05:00
    (04:30 on 2 March in UTC), and #904 closed unmerged. The landing is the earliest merge
    (#903, on its UTC day, 259 days after CISPO's 2025-06-16), #902 listed beside it; the
    request and the unmerged one are none. The pages follow each delivery (the study is
    computed again when the store changed); the verified numbers do not move."""
    from bot.site.study import refresh_study

    verified = compute_study(load_catalog(), [])["frameworks"]["openrlhf"]
    await deliver(ctx, request_issue(shared_dir, 901, "2026-01-10T09:00:00Z"))
    await deliver(ctx, pull_request(shared_dir, 902, "2026-01-20T09:00:00Z"))
    await deliver(ctx, pull_request(shared_dir, 903, "2026-02-01T09:00:00Z"))
    before = await (await client.get("/api/study")).json()  # (the page's cache is filled)
    assert _detected(before) == [] and before["proposals_stored"] == 3

    await deliver(ctx, pull_request(shared_dir, 903, "2026-02-01T09:00:00Z",
                                    closed="2026-03-01T23:30:00-05:00", merged=True))
    await deliver(ctx, pull_request(shared_dir, 902, "2026-01-20T09:00:00Z",
                                    closed="2026-03-10T01:00:00Z", merged=True))
    await deliver(ctx, pull_request(shared_dir, 904, "2026-02-02T09:00:00Z",
                                    closed="2026-02-03T09:00:00Z"))
    study = await (await client.get("/api/study")).json()
    [landing] = _detected(study)
    assert {k: landing[k] for k in ("method", "framework", "date", "days", "before_paper",
                                    "pull_request", "pull_requests", "in_study", "detected_at")} == {
        "method": "cispo", "framework": "openrlhf", "date": "2026-03-02",
        "days": (date(2026, 3, 2) - CISPO_PUBLIC).days, "before_paper": False,
        "pull_request": f"{OPENRLHF}#903", "pull_requests": [f"{OPENRLHF}#903", f"{OPENRLHF}#902"],
        "in_study": True, "detected_at": None}
    assert landing["days"] == 259
    assert study["frameworks"]["openrlhf"]["detected"] == 1
    assert study["sets"]["detected.openrlhf"] == ["cispo"]
    got = study["frameworks"]["openrlhf"]
    assert (got["methods"], got["first_anywhere"], got["median_days"]) == (
        verified["methods"], verified["first_anywhere"], verified["median_days"])
    assert study["review_records"]["merged_prs"]["threads"] == 2
    assert study["review_records"]["requests"]["threads"] == 1
    page = await (await client.get("/study")).text()
    table = re.search(r'<table id="detected-table">.*?</table>', page, re.S)
    assert table is not None
    assert f'href="/threads/{OPENRLHF}/903" aria-label="2026-03-02: {OPENRLHF}#903 merged">2026-03-02<' in table.group(0)
    assert 'data-days="259"' in page  # its mark on the timeline

    # The nightly step records it once; the night's report lists it, the next night's not.
    night = await refresh_study(ctx)
    assert night["new_detected"] == ["cispo@openrlhf"]
    assert (await refresh_study(ctx))["new_detected"] == []
    from bot.site.report import build_report, render_markdown, store_report

    day = datetime.now(UTC).date()
    first = await build_report(ctx, day)
    assert [(x["method"], x["pull_request"], x["date"], x["days"])
            for x in first["frameworks"]["openrlhf"]["new_landings"]] == [
        ("cispo", f"{OPENRLHF}#903", "2026-03-02", 259)]
    await store_report(ctx, first, render_markdown(first))
    nxt = await build_report(ctx, day + timedelta(days=1))
    assert nxt["new_landings"] == 0 and nxt["frameworks"]["openrlhf"]["new_landings"] == []
