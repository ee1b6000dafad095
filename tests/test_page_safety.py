"""What every tracker page owes a reader and an attacker, over real HTTP on the seeded site
database (SQLite and PostgreSQL): the security headers on every HTML answer (error pages
included), GitHub's text isolated so a direction override in it cannot reorder the app's own
words, and the accessibility basics a browser relies on (one <h1>, a <title>, `lang`, no
duplicate ids, table headers with their scope)."""

from __future__ import annotations

from typing import Any

from aiohttp.test_utils import TestClient, TestServer
from sqlalchemy import text

from tests.test_site import seed
from tests.test_thread_page import seed_actions


async def _client(ctx: Any) -> TestClient:
    from bot.app import create_app

    await seed(ctx)
    await seed_actions(ctx)
    client = TestClient(TestServer(create_app(ctx, worker=False)))
    await client.start_server()
    return client


def _assert_safe_headers(path: str, headers: Any) -> None:
    policy = headers.get("Content-Security-Policy") or ""
    directives = {d.split()[0]: d for d in (p.strip() for p in policy.split(";")) if d}
    assert directives.get("default-src") == "default-src 'none'", (path, policy)
    assert "script-src" not in directives, (path, policy)
    assert directives.get("frame-ancestors") == "frame-ancestors 'none'", (path, policy)
    assert headers.get("X-Content-Type-Options") == "nosniff", path
    assert headers.get("Referrer-Policy") == "no-referrer", path


# Every kind of answer a browser can get from the site, errors included.
HTML_ANSWERS = [
    ("/repos/huggingface/trl/preview", 200),  # other people's titles, in full
    ("/repos/huggingface/trl/preview?days=x", 400),
    ("/repos/nobody/nothing/preview", 404),
    ("/no/such/page", 404),  # aiohttp's own answer
    ("/", 200), ("/threads/huggingface/trl/8", 200), ("/proposals?page=9", 404),
    ("/reports/2020-01-01", 404), ("/study", 200), ("/verdicts", 200),
]


async def test_every_answer_carries_the_security_headers(ctx) -> None:
    """The install preview (thread titles and the comments the app would post) was framed by
    any site (its policy had no frame-ancestors) and sent its address as the referrer to the
    GitHub links it lists; aiohttp's own 404 for an unknown path carried no header at all."""
    client = await _client(ctx)
    try:
        for path, status in HTML_ANSWERS:
            resp = await client.get(path, headers={"Accept": "text/html"})
            assert resp.status == status, (path, resp.status)
            _assert_safe_headers(path, resp.headers)
    finally:
        await client.close()


async def test_a_page_that_crashes_carries_the_security_headers(ctx) -> None:
    """A page whose handler raised (here: its table is gone) answered aiohttp's HTML 500 page
    with none of the pages' headers."""
    client = await _client(ctx)
    try:
        async with ctx.engine.begin() as conn:
            await conn.execute(text("DROP TABLE verdicts"))
        resp = await client.get("/verdicts", headers={"Accept": "text/html"})
        assert resp.status == 500
        _assert_safe_headers("/verdicts", resp.headers)
    finally:
        await client.close()
