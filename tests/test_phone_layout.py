"""The tracker is readable on a phone: no page is wider than a 390 px window, whatever GitHub
text it shows (a title that is one 2,000-character word, CJK without spaces), the longest
catalog names, or the report's chart. Laid out by headless Chromium (SQLite only: the pages
are the same on both databases)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select

from bot.site.report import run_report
from bot.store.models import Thread
from bot.store.verdicts import set_verdict
from tests.browser import chromium, serving  # noqa: F401 - the fixture
from tests.test_report import seed

LONG_WORD = "A" * 2000
CJK = "训练两百步之后熵降到接近零奖励也不再上升" * 20
VERL = "verl-project/verl"


@pytest.mark.parametrize("width", [390, 320])
async def test_no_page_is_wider_than_a_phone(sqlite_ctx: Any, chromium: Any,  # noqa: F811
                                             width: int) -> None:
    """390 px: a phone; 320 px: WCAG 1.4.10's reflow width (a 1,280 px window zoomed to
    400 %, or 640 px at 200 %), where a page scrolls one way only: tables and charts
    scroll inside their own boxes, the page does not."""
    now = datetime.now(UTC)
    day_before = now - timedelta(days=1)
    await seed(sqlite_ctx, VERL, 1, created=day_before - timedelta(days=3), title="A proposal")
    await run_report(sqlite_ctx, day_before.date())
    await seed(sqlite_ctx, VERL, 2, created=now - timedelta(hours=2),
               title=f"<b>{LONG_WORD}</b> entropy collapse")
    await seed(sqlite_ctx, VERL, 3, created=now - timedelta(hours=1), title=CJK,
               failure="entropy_collapse", proposal=False)
    async with sqlite_ctx.sessionmaker() as session:  # verdicts: /verdicts and the report's table
        for number, kind in ((2, "kl_growth"), (3, None)):
            thread = await session.scalar(select(Thread).where(Thread.number == number))
            await set_verdict(session, thread, is_failure_report=kind is not None, category=kind,
                              login="L" * 255, role="maintainer", comment_id=number)
        await session.commit()
    await run_report(sqlite_ctx, now.date())
    pages = ["/", "/proposals", "/frameworks/verl", "/failures/entropy_collapse",
             "/methods/masked-importance-sampling", f"/threads/{VERL}/2", f"/threads/{VERL}/3",
             "/reports/", f"/reports/{now.date().isoformat()}", "/study", "/verdicts",
             "/failures/kl_growth"]
    async with serving(sqlite_ctx) as server:
        base = f"http://127.0.0.1:{server.port}"
        widths = await chromium.page_widths([base + p for p in pages], width=width)
    too_wide = {url.removeprefix(base): w for url, w in widths.items() if w[0] > w[1]}
    assert too_wide == {}, "pages wider than the window (scroll width, window width)"


async def test_the_phone_window_is_as_narrow_as_asked(sqlite_ctx: Any, chromium: Any) -> None:  # noqa: F811
    """The widths above are measured in a window of the width asked for: headless Chromium
    will not open a window narrower than 500 px, so a "390 px" window laid pages out at
    500 px and a page 450 px wide passed as fitting a phone."""
    async with serving(sqlite_ctx) as server:
        base = f"http://127.0.0.1:{server.port}"
        widths = await chromium.page_widths([f"{base}/", f"{base}/study"], width=375)
    assert {w[1] for w in widths.values()} == {375}, widths
