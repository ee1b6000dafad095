"""Review concerns are shown to people by their titles (analyzers/catalog/concerns.yaml), as
failure kinds are by the catalog's: the report (Markdown and page), the thread page and the
study page showed the keys with spaces ("design or interface"). The keys stay the keys in
the stored report data and the API. On SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer
from markupsafe import escape
from sqlalchemy import select

from analyzers.catalog import CONTRACT_CONCERN_KEYS, CatalogError, concern_kinds, load_concerns_from
from bot.site.report import render_html, run_report
from bot.store.models import Analysis, Report, Thread
from tests.test_report import DAY1, DAY2, V, at, night_one, night_two, seed

BOTH = ["design_or_interface", "evidence"]


async def _report_of_day_two(ctx: Any) -> Report:
    await night_one(ctx)
    await run_report(ctx, DAY1)
    await night_two(ctx)
    await seed(ctx, V, 3, created=at(DAY1), state="open_replied", replied=True, concerns=BOTH)
    await run_report(ctx, DAY2)
    async with ctx.sessionmaker() as session:
        return await session.scalar(select(Report).where(Report.date == DAY2.isoformat()))


async def test_the_report_names_concerns_by_their_titles(ctx: Any) -> None:
    row = await _report_of_day_two(ctx)
    item = row.data["frameworks"]["verl"]["changes"]["concerns_raised"][1]
    assert item["concerns"] == BOTH  # the data keeps the keys
    assert f"[`{V}#3`]" in row.markdown and "(Design or interface, Evidence)" in row.markdown
    assert "design or interface" not in row.markdown.lower().replace("design or interface,", "")
    html = render_html(row.data)
    meaning = concern_kinds()["design_or_interface"].description
    assert f'<span class="tag" title="{escape(meaning)}">Design or interface</span>' in html
    assert "design or interface" not in html


async def test_the_thread_and_study_pages_name_concerns_by_their_titles(ctx: Any) -> None:
    from bot.app import create_app

    await _report_of_day_two(ctx)
    async with ctx.sessionmaker() as session:  # the thread page shows concerns of a proposal
        analysis = await session.scalar(select(Analysis).join(Thread, Thread.id == Analysis.thread_id)
                                        .where(Thread.repo == V, Thread.number == 3))
        analysis.result = {**analysis.result, "proposal": {"is_proposal": True, "confidence": 0.9}}
        await session.commit()
    async with TestClient(TestServer(create_app(ctx, worker=False))) as client:
        html = await (await client.get(f"/threads/{V}/3")).text()
        assert ">Design or interface</span>" in html and "design or interface" not in html
        data = await (await client.get(f"/api/threads/{V}/3")).json()
        assert data["analysis"]["review"]["concerns"] == BOTH
        study = await (await client.get("/study")).text()
        assert "concern: Design or interface" in study and "concern: design or interface" not in study
        page = await (await client.get("/study/sets/review.merged_prs.concern.design_or_interface")).text()
        assert "Merged method pull requests: concern: Design or interface" in page


def test_every_contract_concern_has_a_title_and_a_meaning(tmp_path: Any) -> None:
    kinds = concern_kinds()
    assert tuple(kinds) == CONTRACT_CONCERN_KEYS
    assert all(k.title and k.description and "\n" not in k.description for k in kinds.values())
    (tmp_path / "concerns.yaml").write_text("concerns:\n  evidence: {title: E, description: D}\n")
    with pytest.raises(CatalogError, match="concern keys"):
        load_concerns_from(tmp_path / "concerns.yaml")
