"""Two `rltracker serve` processes on one PostgreSQL database share a stream of deliveries:
every delivery is processed by exactly one of them, once.

Evidence: the two processes' logs hold exactly one "done" line per delivery, written by the
worker named in the row's `claimed_by`, and no "lease_lost"; each row's `attempts`
(incremented by every claim, under the row lock) equals the number of attempts logged for it,
so no claim went unaccounted; both workers did part of the work.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import database_backends
from tests.test_crash_recovery import (
    ServeProcess,
    outcomes,
    send_all,
    shared_or_none,
    stream_payloads,
    wait_drained,
)

POSTGRES_ONLY = [p for p in database_backends() if getattr(p, "id", None) == "postgres"]


@pytest.mark.slow
@pytest.mark.parametrize("db_url", POSTGRES_ONLY, indirect=True)
async def test_two_processes_share_a_stream_without_doubles(db_url: str, tmp_path: Path,
                                                            fake_github: Any) -> None:
    # a long lease: no process dies here, so no row may ever change hands
    env = {"GITHUB_API_URL": fake_github.url, "RLTRACKER_WORKER_LEASE": "120"}
    a = ServeProcess(db_url, tmp_path, name="a", extra_env=env)
    b = ServeProcess(db_url, tmp_path, name="b", extra_env=env)
    n = 1000
    items = stream_payloads(shared_or_none(), n)
    await asyncio.gather(a.start(), b.start())
    try:
        first = await send_all([a.url, b.url], items)
        assert all(status == 202 for status in first.values())
        # the same delivery id sent to both replicas at once: stored by exactly one
        pairs = [(str(uuid.uuid4()), "ping", b'{"zen": "twice"}') for _ in range(100)]
        to_a, to_b = await asyncio.gather(send_all([a.url], pairs, concurrency=8),
                                          send_all([b.url], pairs, concurrency=8))
        for delivery, _, _ in pairs:
            assert sorted([to_a[delivery], to_b[delivery]]) == [200, 202]
        rows = await wait_drained(db_url, n + len(pairs))
    finally:
        a.stop()
        b.stop()

    assert len(rows) == n + len(pairs)
    assert Counter(r.status for r in rows) == {"done": len(rows)}
    by_worker = Counter(r.claimed_by for r in rows)
    assert len(by_worker) == 2 and min(by_worker.values()) > 0, by_worker

    logged = outcomes(a, b)
    assert set(logged) == {r.delivery_id for r in rows}
    for r in rows:
        attempts = logged[r.delivery_id]
        # one "done", no stolen lease, and every claim of the row is one logged attempt
        # (a handler error shows as "retry" and is not a second processing)
        assert attempts.count("done") == 1 and "lease_lost" not in attempts, attempts
        assert r.attempts == len(attempts), (r.delivery_id, r.attempts, attempts)
    workers = {}
    for process in (a, b):
        for line in process.log_lines():
            if line.get("outcome") == "done":
                workers[line["delivery"]] = line["worker"]
    assert all(workers[r.delivery_id] == r.claimed_by for r in rows)
    retries = sum(o.count("retry") for o in logged.values())
    print(f"\ntwo processes: {len(rows)} deliveries, split {sorted(by_worker.values())}, "
          f"{retries} handler retries")
