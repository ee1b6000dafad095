"""POST /webhook throughput and latency: rltracker's endpoint (signature check + group-commit
store in SQLite) next to a bare aiohttp + gidgethub handler that only verifies and answers 202,
measured with the same client in the same run.

    .venv/bin/python benchmarks/webhook_throughput.py [--requests 4000] [--concurrency 32]
        [--worker] [--worker-processes N] [--drain N]

Each server runs in its own process; the client (aiohttp, `--concurrency` connections) runs in
this one. Prints deliveries/s, p50 and p99 of each, and the ratio (goal: >= 0.30, p99 <= 50 ms).
With `--worker` the inbox worker runs inside the web process (the default `serve`); with
`--worker-processes N` it runs in N processes of its own (`serve --workers N`) and the web
process only answers. Afterwards it checks that every delivery sent to rltracker is in the
database, and how many the worker finished meanwhile. `--drain N`
then measures how fast the worker drains a backlog of N stored deliveries of real payload
shapes (benchmarks/drain.py: SQLite with one worker process, PostgreSQL with one and two).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import json
import multiprocessing
import os
import socket
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SECRET = "benchmark-secret"
EXAMPLE = ROOT.parent / "shared" / "fixtures" / "webhooks" / "issues" / "opened.json"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_bare(port: int) -> None:
    from aiohttp import web
    from gidgethub import ValidationFailure, sansio

    async def webhook(request: web.Request) -> web.Response:
        body = await request.read()
        try:
            event = sansio.Event.from_http(request.headers, body, secret=SECRET)
        except ValidationFailure:
            return web.Response(status=401)
        return web.json_response({"delivery": event.delivery_id}, status=202)

    async def healthz(request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    app = web.Application(client_max_size=25 * 1024 * 1024)
    app.router.add_post("/webhook", webhook)
    app.router.add_get("/healthz", healthz)
    web.run_app(app, host="127.0.0.1", port=port, access_log=None, print=None)


def _settings(database_url: str) -> object:
    from bot.config import Settings

    return Settings.from_env({}, database_url=database_url, webhook_secret=SECRET, dry_run=True)


def run_rltracker(port: int, database_url: str, worker: bool) -> None:
    from aiohttp import web

    from bot.app import create_app
    from bot.config import Settings
    from bot.context import AppContext
    from bot.logs import configure_logging

    configure_logging("ERROR")
    settings = Settings.from_env({}, database_url=database_url, webhook_secret=SECRET)
    ctx = AppContext.create(settings)
    app = create_app(ctx, worker=worker)
    web.run_app(app, host="127.0.0.1", port=port, access_log=None, print=None)


def payload() -> bytes:
    if EXAMPLE.is_file():
        return EXAMPLE.read_bytes()
    return json.dumps({"action": "opened", "issue": {"number": 1, "body": "x" * 6000},
                       "repository": {"full_name": "o/r"}}).encode()


async def wait_ready(url: str) -> None:
    import aiohttp

    async with aiohttp.ClientSession() as session:
        for _ in range(600):
            try:
                async with session.get(url + "/healthz") as resp:
                    if resp.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.05)
    raise RuntimeError(f"{url} never became ready")


async def load(url: str, requests: int, concurrency: int, body: bytes) -> tuple[float, list[float]]:
    """Send `requests` signed deliveries over `concurrency` connections; (seconds, latencies)."""
    import aiohttp

    signature = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    latencies: list[float] = []
    remaining = requests
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def client() -> None:
            nonlocal remaining
            while remaining > 0:
                remaining -= 1
                headers = {"Content-Type": "application/json", "X-GitHub-Event": "issues",
                           "X-GitHub-Delivery": str(uuid.uuid4()),
                           "X-Hub-Signature-256": signature,
                           "User-Agent": "GitHub-Hookshot/bench"}
                started = time.perf_counter()
                async with session.post(url + "/webhook", data=body, headers=headers) as resp:
                    await resp.read()
                    if resp.status != 202:
                        raise RuntimeError(f"unexpected status {resp.status}")
                latencies.append(time.perf_counter() - started)

        started = time.perf_counter()
        await asyncio.gather(*(client() for _ in range(concurrency)))
        return time.perf_counter() - started, latencies


def cpu_seconds(pid: int | None) -> float:
    """User + system CPU time of a process (Linux /proc), 0 elsewhere. CPU per delivery does not
    depend on what else the machine is doing, unlike deliveries/s and latency."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


def p(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=1000)[int(q * 1000) - 1] if len(values) > 1 else values[0]


async def measure(name: str, url: str, args: argparse.Namespace, body: bytes,
                  pid: int | None) -> dict[str, float]:
    await wait_ready(url)
    await load(url, min(500, args.requests), args.concurrency, body)  # warm-up
    cpu_before = cpu_seconds(pid)
    seconds, latencies = await load(url, args.requests, args.concurrency, body)
    cpu = cpu_seconds(pid) - cpu_before
    result = {"rate": args.requests / seconds, "p50": p(latencies, 0.5) * 1000,
              "p99": p(latencies, 0.99) * 1000, "cpu_ms": cpu * 1000 / args.requests}
    print(f"{name:<36} {result['rate']:6.0f} deliveries/s   p50 {result['p50']:6.1f} ms   "
          f"p99 {result['p99']:6.1f} ms   server CPU {result['cpu_ms']:.2f} ms/delivery",
          flush=True)
    return result


async def count_rows(database_url: str, status: str | None = None) -> int:
    from sqlalchemy import func, select

    from bot.store.db import make_engine
    from bot.store.models import Delivery

    engine = make_engine(database_url)
    t = Delivery.__table__
    query = select(func.count()).select_from(t)
    if status is not None:
        query = query.where(t.c.status == status)
    async with engine.connect() as conn:
        n = await conn.scalar(query)
    await engine.dispose()
    return int(n or 0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=4000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--worker", action="store_true",
                        help="also run the inbox worker in the rltracker process")
    parser.add_argument("--worker-processes", type=int, default=0, metavar="N",
                        help="run the inbox worker in N processes beside the web process")
    parser.add_argument("--drain", type=int, default=0, metavar="N",
                        help="then time the worker draining N stored deliveries")
    args = parser.parse_args()

    from bot.store import migrate

    tmp = Path(tempfile.mkdtemp(prefix="rlt-bench-"))
    database_url = f"sqlite+aiosqlite:///{tmp / 'bench.db'}"
    migrate.upgrade(database_url)
    body = payload()
    where = (f"in {args.worker_processes} process(es) of its own" if args.worker_processes
             else "in the web process" if args.worker else "off")
    print(f"payload {len(body)} bytes, {args.requests} requests, {args.concurrency} connections, "
          f"SQLite (WAL) at {tmp}, worker {where}", flush=True)

    spawn = multiprocessing.get_context("spawn")
    bare_port, app_port = free_port(), free_port()
    bare = spawn.Process(target=run_bare, args=(bare_port,), daemon=True)
    app = spawn.Process(target=run_rltracker,
                        args=(app_port, database_url, args.worker and not args.worker_processes),
                        daemon=True)
    from bot.webhooks.worker import worker_process_main

    workers = [spawn.Process(target=worker_process_main,
                             args=(_settings(database_url), None, "ERROR"), daemon=True)
               for _ in range(args.worker_processes)]
    bare.start()
    app.start()
    for w in workers:
        w.start()
    try:
        baseline = asyncio.run(measure("bare aiohttp+gidgethub (verify, 202)",
                                       f"http://127.0.0.1:{bare_port}", args, body, bare.pid))
        ours = asyncio.run(measure("rltracker POST /webhook (stored)",
                                   f"http://127.0.0.1:{app_port}", args, body, app.pid))
    finally:
        bare.terminate()
        app.terminate()
        for w in workers:
            w.terminate()
        for proc in (bare, app, *workers):
            proc.join()
    stored = asyncio.run(count_rows(database_url))
    if args.worker or args.worker_processes:
        done = asyncio.run(count_rows(database_url, status="done"))
        print(f"the worker finished {done} of them while the load ran", flush=True)
    sent = args.requests + min(500, args.requests)
    ratio = ours["rate"] / baseline["rate"]
    print(f"ratio {ratio:.2f} of the bare handler (goal >= 0.30); p99 {ours['p99']:.1f} ms "
          f"(goal <= 50 ms); stored {stored}/{sent} deliveries")
    if baseline["cpu_ms"] and ours["cpu_ms"]:
        print(f"server CPU per delivery: {ours['cpu_ms'] / baseline['cpu_ms']:.2f}x the bare "
              f"handler's (CPU-bound ceiling on one free core: bare "
              f"{1000 / baseline['cpu_ms']:.0f}/s, rltracker {1000 / ours['cpu_ms']:.0f}/s)")
    try:
        print(f"load average during the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    except OSError:
        pass
    if args.drain:
        sys.path.insert(0, str(ROOT / "benchmarks"))
        import drain

        drain.main(["--deliveries", str(args.drain)])
    return 0 if stored == sent else 1


if __name__ == "__main__":
    sys.exit(main())
