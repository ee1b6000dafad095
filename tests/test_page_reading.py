"""The pages as a reader meets them in a browser, at a phone's 375 px (headless Chromium
through the one fixture, tests/browser.py; SQLite only: the pages are the same on both
databases): a link in running text is told from the words around it by more than its colour,
and a chart too wide for the phone scrolls at its own size instead of shrinking its labels
below reading size."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from bot.site.report import run_report
from tests.browser import chromium, serving  # noqa: F401 - the fixture
from tests.test_report import seed
from tests.test_study import seed_threads

pytestmark = pytest.mark.chromium
VERL = "verl-project/verl"

# Links in paragraphs, list items and the footer whose only mark is their colour. The link
# blue (#0b57d0) against the text (#1b1f24) is 2.6:1, under the 3:1 that colour alone needs
# (WCAG 1.4.1), so a reader who does not see the hue reads "see the same data as JSON" with
# no idea that "JSON" is a link.
PLAIN_LINKS = r"""
const links = [...document.querySelectorAll('main p a, main li a, main dd a, footer a')];
return links.filter(a => !getComputedStyle(a).textDecorationLine.includes('underline'))
            .map(a => a.textContent.trim().slice(0, 40));
"""

# Each chart in a scroll box: its drawn width and the width it is drawn for.
CHART_WIDTHS = r"""
return [...document.querySelectorAll('.scroll > svg')].map(
    s => [s.id, Math.round(s.getBoundingClientRect().width), +s.getAttribute('width')]);
"""


async def _pages(ctx: Any) -> list[str]:
    now = datetime.now(UTC)
    await seed_threads(ctx)
    await seed(ctx, VERL, 1, created=now - timedelta(hours=3), title="A proposal",
               arxiv=["2503.14476"])
    await seed(ctx, VERL, 2, created=now - timedelta(hours=2), failure="entropy_collapse",
               proposal=False, title="Entropy falls to zero")
    await run_report(ctx, now.date())
    return ["/", "/study", "/proposals", "/verdicts", "/repos/", "/frameworks/verl",
            "/methods/clip-higher", "/failures/entropy_collapse", f"/threads/{VERL}/1",
            f"/threads/{VERL}/2", "/reports/", f"/reports/{now.date().isoformat()}"]


async def test_links_in_text_are_not_marked_by_colour_alone(sqlite_ctx: Any, chromium: Any) -> None:  # noqa: F811
    pages = await _pages(sqlite_ctx)
    async with serving(sqlite_ctx) as server:
        base = f"http://127.0.0.1:{server.port}"
        found = await chromium.evaluate([base + p for p in pages], PLAIN_LINKS, width=375)
    plain = {url.removeprefix(base): links for url, links in found.items() if links}
    assert plain == {}, "links told from their text by colour alone"


async def test_charts_scroll_on_a_phone_instead_of_shrinking(sqlite_ctx: Any, chromium: Any) -> None:  # noqa: F811
    """The study's timeline is 890 px wide, with 11-12 px labels: shrunk into a 343 px column it
    drew them under 5 px, unreadable, and its scroll box never scrolled. The report's chart
    likewise (640 px)."""
    pages = await _pages(sqlite_ctx)
    charted = ["/study", pages[-1]]
    async with serving(sqlite_ctx) as server:
        base = f"http://127.0.0.1:{server.port}"
        found = await chromium.evaluate([base + p for p in charted], CHART_WIDTHS, width=375)
        widths = await chromium.page_widths([base + p for p in charted], width=375)
    drawn = {url.removeprefix(base): charts for url, charts in found.items()}
    assert all(drawn.values()), drawn  # each page has its chart
    shrunk = {url: [c for c in charts if c[1] < c[2]] for url, charts in drawn.items()}
    assert shrunk == {"/study": [], charted[1]: []}, "charts drawn smaller than their size"
    # ... and the page itself still fits the phone: the chart's box scrolls, not the page
    assert all(w[0] <= w[1] for w in widths.values()), widths


# The report chart's bars, each [framework, state, count], and what a table outside the
# chart says for the same framework and state.
CHART_STATES = r"""
const bars = [...document.querySelectorAll('#chart g.row rect.bar')].map(r => [
  r.closest('g.row').dataset.framework, r.dataset.state,
  r.querySelector('title').textContent.split(': ').pop()]);
const table = document.querySelector('#chart-table');
const said = bars.map(([fw, state]) => {
  if (!table) return null;
  const row = table.querySelector(`tr[data-framework="${fw}"]`);
  const cell = row && row.querySelector(`td[data-state="${state}"]`);
  return cell && cell.textContent.trim();
});
return [bars, said];
"""


async def test_the_report_chart_states_are_not_told_by_colour_alone(sqlite_ctx: Any, chromium: Any) -> None:  # noqa: F811
    """The report's stacked bars told proposal states apart by colour only (merged green,
    declined red, waiting orange: the three a red-green colour-blind reader confuses), their
    counts in hover tooltips a phone or a keyboard never shows and a screen reader skips
    (the chart is one image). The same counts are in a table beside it."""
    report = (await _pages(sqlite_ctx))[-1]
    async with serving(sqlite_ctx) as server:
        url = f"http://127.0.0.1:{server.port}{report}"
        bars, said = (await chromium.evaluate([url], CHART_STATES, width=375))[url]
    assert {b[1] for b in bars} >= {"declined", "open_no_reply"}, bars
    assert said == [b[2] for b in bars], list(zip(bars, said, strict=True))
