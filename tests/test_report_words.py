"""The report reads as a person would write it (review report72), on SQLite and PostgreSQL:
failure kinds by the catalog's titles and review states by the site's labels (not keys with
spaces), frameworks by their names and methods by theirs on the page, and a blank line
before the first heading of a baseline."""

from __future__ import annotations

from typing import Any

from markdown_it import MarkdownIt
from sqlalchemy import select

from bot.site.report import render_html, run_report
from bot.store.models import Report
from tests.test_report import DAY1, DAY2, T, V, night_one, night_two


async def stored(ctx: Any, day: Any) -> Report:
    async with ctx.sessionmaker() as session:
        return await session.scalar(select(Report).where(Report.date == day.isoformat()))


async def test_failure_kinds_and_states_are_named_as_the_site_names_them(ctx: Any) -> None:
    """"kl growth 2" and "open replied 2" were keys with spaces; the site and the comments say
    "KL keeps growing" and "open, replied"."""
    await night_one(ctx)
    await run_report(ctx, DAY1)
    await night_two(ctx)
    await run_report(ctx, DAY2)
    row = await stored(ctx, DAY2)
    markdown = row.markdown
    assert ("- Failure reports of the day: Entropy collapse: 1; KL keeps growing: 2 "
            "(1 opened before the report of 2026-11-30 and stored after it).") in markdown
    assert "- Proposals: 3 (open, replied: 2; declined: 1); median time to first reply" in markdown
    assert "- Proposals: 4 (open, no reply: 2; merged: 1; lapsed (stale / inactive): 1)." in markdown
    assert "kl growth" not in markdown and "open replied" not in markdown
    assert "([arXiv:2503.14476](https://arxiv.org/abs/2503.14476), Clip-higher)" in markdown
    html = render_html(row.data)
    assert 'href="/failures/kl_growth">KL keeps growing</a>' in html
    # the chart and its table: frameworks by name, states by the site's labels
    assert '<th scope="row">TRL</th>' in html and '<th scope="row">trl</th>' not in html
    assert '<th scope="col">open, no reply</th>' in html and "open no reply" not in html
    assert 'font-size="13">NeMo-RL</text>' in html
    assert "<title>open, no reply: 2</title>" in html
    # a new proposal's catalog method by its name, linked by its id
    assert '<a class="tag" href="/methods/clip-higher">Clip-higher</a>' in html
    assert f'href="/threads/{T}/13"' in html and f'href="/threads/{V}/20"' in html


async def test_a_baseline_has_a_blank_line_before_its_first_heading(ctx: Any) -> None:
    """The baseline's line ran into "### verl": Markdown needs no blank line before an ATX
    heading, but the raw post read as one paragraph, and the other reports have one."""
    await night_one(ctx)
    await run_report(ctx, DAY1)
    markdown = (await stored(ctx, DAY1)).markdown
    assert "changes are listed from the next report on.\n\n### verl" in markdown
    headings = [t for t in MarkdownIt().parse(markdown) if t.type == "heading_open" and t.tag == "h3"]
    assert len(headings) == 7
