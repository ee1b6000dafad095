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
