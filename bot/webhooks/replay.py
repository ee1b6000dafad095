"""`rltracker replay`: send payload files as signed deliveries, the way GitHub does."""

from __future__ import annotations

import asyncio
import difflib
import hashlib
import hmac
import json
import os
import re
import sys
import uuid
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

USER_AGENT = "GitHub-Hookshot/rltracker-replay"
# GitHub's timestamp spelling in webhook payloads ("2026-11-30T09:12:44Z"), a whole string.
TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


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


def _timestamps(value: Any) -> Iterator[datetime]:
    if isinstance(value, dict):
        for v in value.values():
            yield from _timestamps(v)
    elif isinstance(value, list):
        for v in value:
            yield from _timestamps(v)
    elif isinstance(value, str) and TIMESTAMP.fullmatch(value):
        yield datetime.strptime(value, TIME_FORMAT).replace(tzinfo=UTC)


def _shifted(value: Any, by: timedelta) -> Any:
    if isinstance(value, dict):
        return {k: _shifted(v, by) for k, v in value.items()}
    if isinstance(value, list):
        return [_shifted(v, by) for v in value]
    if isinstance(value, str) and TIMESTAMP.fullmatch(value):
        moved = datetime.strptime(value, TIME_FORMAT).replace(tzinfo=UTC) + by
        return moved.strftime(TIME_FORMAT)
    return value


def freshened(bodies: list[bytes], now: datetime | None = None) -> list[bytes]:
    """The payloads with every timestamp moved forward by one common offset, so that the
    newest timestamp of all of them is `now`: the deliveries keep their order and spacing
    but look as recent as when they were written (the app stays quiet on issues opened
    more than 48 hours before it processes them). Files that are not JSON pass unchanged."""
    decoded: list[Any] = []
    for body in bodies:
        try:
            decoded.append(json.loads(body))
        except (ValueError, RecursionError):  # nested deeper than the decoder goes: as not JSON
            decoded.append(None)
    newest = max((t for d in decoded if d is not None for t in _timestamps(d)), default=None)
    if newest is None:
        return bodies
    by = (now or datetime.now(UTC)).replace(microsecond=0) - newest
    return [body if d is None else _encoded(_shifted(d, by))
            for body, d in zip(bodies, decoded, strict=True)]


def _encoded(value: Any) -> bytes:
    """A payload as UTF-8 JSON. One holding a lone surrogate, escaped in the file as GitHub
    sends a text cut mid-pair ("\\ud83d"), has it escaped again: UTF-8 has no encoding for
    it, and the replay stopped with a UnicodeEncodeError traceback, nothing sent (contract66)."""
    try:
        return json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value).encode("ascii")


async def replay(paths: list[str], url: str, secret: str, event: str | None = None,
                 *, fresh: bool = False) -> list[tuple[Path, int | str, str]]:
    """Each file sent: its path, the answer's status (or the connection's error) and, for a
    refusal, the reason the answer gives."""
    import aiohttp

    results: list[tuple[Path, int | str, str]] = []
    files = list(payload_files(paths))
    bodies = [path.read_bytes() for path in files]  # (a file that cannot be read: said first)
    _check_events(files, event)
    if fresh:
        bodies = freshened(bodies)
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as session:
        for path, body in zip(files, bodies, strict=True):
            name = event or path.parent.name
            try:
                async with session.post(url, data=body,
                                        headers=delivery_headers(name, body, secret)) as resp:
                    answer = await resp.read()
                    results.append((path, resp.status, _refusal(resp.status, answer)))
            except aiohttp.ClientConnectorError as exc:
                # Nothing listens there: every other file would fail the same way, each with
                # a line naming only the exception's class.
                from bot.config import UserError

                raise UserError(f"cannot connect to {url} ({type(exc.os_error).__name__}); is "
                                f"`rltracker serve` running there? {len(results)} of "
                                f"{len(files)} file{'' if len(files) == 1 else 's'} sent"
                                ) from exc
            except (aiohttp.ClientError, TimeoutError) as exc:  # this one failed: go on
                results.append((path, f"error: {type(exc).__name__}", ""))
    return results


def _check_events(files: list[Path], event: str | None) -> None:
    """Every file's event (`--event`, else its folder's name) is one the app handles, else
    SettingError before anything is sent: the app stores any event with a 202 and does
    nothing with one it has no handler for, so a file in a folder not named after its event
    (`~/Downloads/x.json`: "Downloads") or a misspelt `--event issue` read as replayed."""
    from bot.config import SettingError, UserError
    from bot.webhooks.routers import handled_events

    known = handled_events()
    choices = ", ".join(sorted(known))
    if event is not None:
        if event not in known:
            close = difflib.get_close_matches(event, sorted(known), n=1)
            meant = f"did you mean {close[0]}? " if close else ""
            raise SettingError("--event", event, f"not an event the app handles ({meant}one "
                               f"of {choices}); nothing was sent")
        return
    for path in files:
        if path.parent.name not in known:
            raise UserError(f"{path}: its folder's name {path.parent.name!r} is taken for "
                            f"the event, and the app handles no such event: give --event (one "
                            f"of {choices}) or put the file in a folder named after its event, "
                            "as examples/ is laid out; nothing was sent", exit_code=2)


def _refusal(status: int, answer: bytes) -> str:
    """Why a delivery was not taken, from the answer's `{"error": ...}` (the app's words: "signature
    does not match" for a wrong secret), on one line without control characters (the URL may be
    any server's); "" for a 2xx or an answer without one."""
    if 200 <= status < 300:
        return ""
    try:
        error = json.loads(answer).get("error")
    except (ValueError, AttributeError, RecursionError):
        return ""
    if not isinstance(error, str):
        return ""
    # As bot.cli.printable (above this layer): control and format characters become spaces.
    return " ".join("".join(ch if ch.isprintable() else " " for ch in error).split())[:300]


def replay_command(args: Any) -> int:
    from bot.config import webhook_secret  # read as `serve` reads it (no newline at the end)

    secret = args.secret or webhook_secret(os.environ.get("GITHUB_WEBHOOK_SECRET"))
    if not secret:
        print("rltracker replay: give --secret or set GITHUB_WEBHOOK_SECRET", file=sys.stderr)
        return 2
    results = asyncio.run(replay(list(args.paths), args.url, secret, args.event,
                                 fresh=bool(getattr(args, "fresh", False))))
    if not results:
        print("rltracker replay: no payload files found", file=sys.stderr)
        return 2
    for path, status, reason in results:
        print(f"{status}\t{path}" + (f"\t{reason}" if reason else ""))
    summary = Counter(str(status) for _, status, _ in results)
    print("summary: " + ", ".join(f"{status}: {n}" for status, n in sorted(summary.items())))
    ok = all(isinstance(s, int) and 200 <= s < 300 for _, s, _ in results)
    return 0 if ok else 1
