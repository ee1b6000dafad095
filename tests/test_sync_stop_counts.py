"""`rltracker sync` stopped by GitHub (exit 1): what it did before the stop is printed, not
only logged (sched61)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from tests.fake_graphql import FakeData, FakeGraphQL, answering_then_down
from tests.test_cli_errors import CLEAN_ENV

HANG_GUARD = 120  # seconds: only so a broken test ends


async def test_a_sync_stopped_by_github_prints_what_it_did(
        db_url: str, fake_github: Any, shared_dir: Path) -> None:
    """The first answers are GitHub's, then every request fails: the sync stops (exit 1)
    after storing threads. It printed the error alone; the counts of what was stored (and
    deleted, moved) before the stop were only in the log."""
    data = FakeData()
    for _ in range(130):  # more than a page (100): the second request is refused
        data.add_thread("verl-project/verl", "issue", n_comments=0, closed=False,
                        body="Loss spikes at step 9.")
    responder = FakeGraphQL(data, shared_dir / "fixtures" / "github-api" / "schema.graphql")
    fake_github.graphql_handler = answering_then_down(responder)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot.cli", "sync", "--repo", "verl-project/verl",
        env={**CLEAN_ENV, "DATABASE_URL": db_url, "GITHUB_API_URL": fake_github.url,
             "GITHUB_TOKEN": fake_github.user_token},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), HANG_GUARD)
    assert proc.returncode == 1, err.decode()[-2000:]
    assert "Traceback" not in err.decode()
    assert "rltracker sync: stopped:" in err.decode()
    counts = json.loads(out.decode())  # what was done before the stop, as a finished sync prints it
    assert 0 < counts["threads"] < 130 and counts["requests"] >= 2, counts
    assert "deleted" in counts and "failed_streams" in counts


async def test_a_rate_limit_that_outlasts_the_waits_stops_the_sync_as_an_error_does(
        sync_ctx: Any, fake_github: Any, shared_dir: Path) -> None:
    """GitHub answers a secondary rate limit to every request after the first page, beyond
    the sync's RATE_LIMIT_WAITS: gidgethub's BadRequest left the sync itself, not a SyncError,
    so `rltracker sync` printed the error alone (the counts of what it stored lost, as before
    sched61) and the nightly step recorded the error without the sync's counts. It stops as
    GitHub kept failing (SyncFailed), the counts kept."""
    from bot.github.sync import RATE_LIMIT_WAITS, Syncer, SyncFailed
    from tests.fakegithub import no_sleep

    data = FakeData()
    for _ in range(130):  # more than a page (100): the second request is refused
        data.add_thread("verl-project/verl", "issue", n_comments=0, closed=False,
                        body="Loss spikes at step 9.")
    responder = FakeGraphQL(data, shared_dir / "fixtures" / "github-api" / "schema.graphql")
    answered = [0]

    def then_limited(query: str, variables: dict[str, Any]) -> Any:
        answered[0] += 1
        if answered[0] == 1:
            fake_github.secondary_rate_limit("POST", r"^/graphql$", times=100, retry_after=900)
        return responder(query, variables)

    fake_github.graphql_handler = then_limited
    syncer = Syncer(sync_ctx, ["verl-project/verl"], sleep=no_sleep)
    try:
        await syncer.run()
    except SyncFailed as exc:
        assert "rate limit" in str(exc).lower() or "403" in str(exc), exc
    else:
        raise AssertionError("the sync did not stop")
    assert 0 < syncer.stats.threads < 130
    assert syncer.stats.waited_for_rate_limit >= RATE_LIMIT_WAITS * 900
