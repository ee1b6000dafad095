"""`rltracker replay`: send payload files as signed deliveries, the way GitHub does."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import os
import sys
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

USER_AGENT = "GitHub-Hookshot/rltracker-replay"


def sign(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


def delivery_headers(event: str, body: bytes, secret: str, delivery_id: str | None = None
                     ) -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery_id or str(uuid.uuid4()),
        "X-GitHub-Hook-ID": "0",
        "X-Hub-Signature-256": sign(secret, body),
    }


def payload_files(paths: list[str]) -> Iterator[Path]:
    """Files as given; folders recursively (*.json, sorted so replays are repeatable)."""
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            yield from sorted(p for p in path.rglob("*.json") if p.is_file())
        else:
            yield path


async def replay(paths: list[str], url: str, secret: str, event: str | None = None
                 ) -> list[tuple[Path, int | str]]:
    import aiohttp

    results: list[tuple[Path, int | str]] = []
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as session:
        for path in payload_files(paths):
            body = path.read_bytes()
            name = event or path.parent.name
            try:
                async with session.post(url, data=body,
                                        headers=delivery_headers(name, body, secret)) as resp:
                    await resp.read()
                    results.append((path, resp.status))
            except aiohttp.ClientError as exc:
                results.append((path, f"error: {type(exc).__name__}"))
    return results


def replay_command(args: Any) -> int:
    secret = args.secret or os.environ.get("GITHUB_WEBHOOK_SECRET")
    if not secret:
        print("rltracker replay: give --secret or set GITHUB_WEBHOOK_SECRET", file=sys.stderr)
        return 2
    results = asyncio.run(replay(list(args.paths), args.url, secret, args.event))
    if not results:
        print("rltracker replay: no payload files found", file=sys.stderr)
        return 2
    for path, status in results:
        print(f"{status}\t{path}")
    summary = Counter(str(status) for _, status in results)
    print("summary: " + ", ".join(f"{status}: {n}" for status, n in sorted(summary.items())))
    ok = all(isinstance(s, int) and 200 <= s < 300 for _, s in results)
    return 0 if ok else 1
