"""Whatever a browser, a crawler or a script puts in a URL gets an answer, never a 500: thread
numbers no database column can hold and NUL characters (which PostgreSQL text refuses), on
every page and API route that reads them, on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer

from bot.app import create_app
from bot.config import Settings
from bot.context import AppContext
from bot.store.models import Action
from bot.store.threads import upsert_thread

BEYOND_INT32 = "3000000000"  # fits SQLite's 64-bit integers, not PostgreSQL's INTEGER
BEYOND_INT64 = "99999999999999999999999"


@pytest.fixture
async def client(ctx: AppContext) -> AsyncIterator[TestClient]:
    async with ctx.sessionmaker() as s:
        await upsert_thread(s, {"repo": "verl-project/verl", "number": 7, "kind": "issue",
                                "title": "Entropy drops", "body": None, "state": "open"})
        s.add(Action(repo="verl-project/verl", number=7, kind="failure_comment", status="skipped",
                     reason="not a training-failure report"))
        await s.commit()
    async with TestClient(TestServer(create_app(ctx, worker=False))) as c:
        yield c


@pytest.mark.parametrize("number", [BEYOND_INT32, BEYOND_INT64, "0", "-3"])
async def test_thread_numbers_no_thread_can_have_are_404(client: TestClient, number: str) -> None:
    page = await client.get(f"/threads/verl-project/verl/{number}")
    assert page.status == 404 and "Not found" in await page.text()
    api = await client.get(f"/api/threads/verl-project/verl/{number}")
    assert api.status == 404 and "error" in await api.json()
    # the stored thread still answers
    assert (await client.get("/threads/verl-project/verl/7")).status == 200


@pytest.mark.parametrize("number", [BEYOND_INT32, BEYOND_INT64])
async def test_actions_filter_with_an_impossible_number_is_a_clear_400(client: TestClient,
                                                                      number: str) -> None:
    resp = await client.get(f"/api/actions?number={number}")
    assert resp.status == 400
    assert "number" in (await resp.json())["error"]
    ok = await client.get("/api/actions?number=7")
    assert ok.status == 200 and [a["number"] for a in await ok.json()] == [7]


@pytest.mark.parametrize("path", [
    "/threads/verl%00/verl/7", "/api/threads/verl%00/verl/7", "/api/actions?repo=a%00b",
    "/proposals?paper=%00", "/api/proposals?paper=x%00y", "/repos/a%00/b/preview",
    "/methods/clip%00higher", "/study/sets/x%00",
])
async def test_nul_in_the_url_is_a_clear_400(client: TestClient, path: str) -> None:
    resp = await client.get(path)
    assert resp.status == 400, (path, resp.status)
    assert "NUL" in await resp.text()
    assert (await client.get("/proposals")).status == 200


@pytest.mark.parametrize("typed,canonical", [
    ("/frameworks/VERL", "/frameworks/verl"),
    ("/frameworks/NeMo-RL", "/frameworks/nemo-rl"),
    ("/frameworks/nemo_rl", "/frameworks/nemo-rl"),
    ("/frameworks/AReaL?x=1", "/frameworks/areal?x=1"),
    # the query kept as it was typed: %26 and %2B became %2526 and %252B (a & and a + in
    # a value turned into the text "%26" and "%2B")
    ("/frameworks/VERL?from=a%26b%2Bc&q=%E4%BD%A0", "/frameworks/verl?from=a%26b%2Bc&q=%E4%BD%A0"),
    ("/api/methods/GSPO?x=1%2B1", "/api/methods/gspo?x=1%2B1"),
    ("/methods/Clip-Higher", "/methods/clip-higher"),
    ("/methods/DR_GRPO", "/methods/dr-grpo"),
    ("/failures/Entropy-Collapse", "/failures/entropy_collapse"),
    ("/api/frameworks/TRL", "/api/frameworks/trl"),
    ("/api/methods/GSPO", "/api/methods/gspo"),
    ("/api/failures/KL-Growth", "/api/failures/kl_growth"),
])
async def test_ids_in_another_spelling_redirect_to_the_canonical_url(
        client: TestClient, typed: str, canonical: str) -> None:
    """Hand-typed and old links (`/frameworks/VERL`) were 404: now 301 to the canonical URL,
    which answers 200; an id no spelling matches stays 404."""
    resp = await client.get(typed, allow_redirects=False)
    assert resp.status == 301 and resp.headers["Location"] == canonical
    assert (await client.get(canonical)).status == 200
    assert (await client.get(typed)).status == 200  # followed


@pytest.mark.parametrize("path", ["/frameworks/verlx", "/methods/clip", "/failures/entropy",
                                  "/api/frameworks/v-e-r-l"])
async def test_unknown_ids_stay_404(client: TestClient, path: str) -> None:
    assert (await client.get(path, allow_redirects=False)).status == 404


async def test_framework_filter_in_another_case(client: TestClient) -> None:
    resp = await client.get("/api/proposals", params={"framework": "VERL"})
    assert resp.status == 200
    assert (await client.get("/proposals", params={"framework": "NeMo-RL"})).status == 200


@pytest.mark.parametrize("path,section", [
    ("/frameworks/", "frameworks"), ("/methods/", "methods"), ("/failures/", "failures"),
    ("/frameworks", "frameworks"), ("/methods", "methods"),
])
async def test_a_list_url_with_no_id_goes_to_the_front_pages_list(client: TestClient, path: str,
                                                                   section: str) -> None:
    resp = await client.get(path, allow_redirects=False)
    assert resp.status == 302 and resp.headers["Location"] == f"/#{section}"
    front = await client.get(path)
    assert front.status == 200 and f'id="{section}"' in await front.text()


@pytest.mark.parametrize("method,path,status,message", [
    ("GET", "/api/frameworks/", 404, "no such API route: /api/frameworks/; did you mean /api/frameworks?"),
    ("GET", "/api/methods/", 404, "no such API route: /api/methods/; did you mean /api/methods?"),
    ("GET", "/api/failures/", 404, "no such API route: /api/failures/; did you mean /api/failures?"),
    ("GET", "/api/threads/verl-project/verl", 404, "no such API route: /api/threads/verl-project/verl"),
    ("GET", "/api/nothing", 404, "no such API route: /api/nothing"),
    ("POST", "/api/stats", 405, "POST is not allowed on /api/stats; use GET"),
    ("DELETE", "/api/actions", 405, "DELETE is not allowed on /api/actions; use GET"),
])
async def test_every_api_error_is_json_with_a_clear_message(client: TestClient, method: str,
                                                           path: str, status: int,
                                                           message: str) -> None:
    """aiohttp's own answers under /api/ (no such route, a method not allowed) were plain text
    ("404: Not Found"): a script reading the API's `{"error": ...}` could not parse them."""
    resp = await client.request(method, path, allow_redirects=False)
    assert resp.status == status and resp.content_type == "application/json"
    assert await resp.json() == {"error": message}
    if status == 405:
        assert "GET" in resp.headers["Allow"]
    # pages keep their HTML answers
    page = await client.get("/no-such-page")
    assert page.status == 404 and page.content_type != "application/json"


@pytest.mark.parametrize("url_kind", ["sqlite", "postgres"])
async def test_api_routes_say_in_json_when_the_database_does_not_answer(tmp_path: Path,
                                                                        url_kind: str) -> None:
    url = (f"sqlite+aiosqlite:///{tmp_path}/missing/dir/x.db" if url_kind == "sqlite"
           else "postgresql+asyncpg://nobody:nothing@127.0.0.1:1/none")
    bad = AppContext.create(Settings.from_env({}, database_url=url, webhook_secret="s"))
    try:
        async with TestClient(TestServer(create_app(bad, worker=False))) as c:
            for path in ("/api/stats", "/api/actions", "/api/proposals", "/api/repos",
                         "/api/threads/verl-project/verl/7", "/api/frameworks/verl"):
                resp = await c.get(path)
                assert resp.status == 503 and resp.content_type == "application/json", path
                assert await resp.json() == {
                    "error": "the database did not answer; try again later"}
    finally:
        await bad.close()
