"""POST /webhook refuses from its headers what its headers already refuse, before reading the
body: a request with no signature header, a malformed one, no usable X-GitHub-Event or
X-GitHub-Delivery, a content type that holds no payload, or a Content-Length over 25 MiB is
answered while its client has sent the headers only. It read the body first (up to 25 MiB
held in memory and hashed) and answered after. Over real HTTP, with a client that sends the
headers and then waits for the answer; on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator

import pytest
from aiohttp.test_utils import TestServer
from sqlalchemy import func, select

from bot.app import create_app
from bot.context import AppContext
from bot.store.models import Delivery
from bot.webhooks.replay import delivery_headers

SECRET = "test-secret"
BODY = b'{"zen": "Responsive is better than fast."}'
# The answer to a request refused from its headers comes at once; this bound only keeps a
# server that waits for the body (as it did) from hanging the test.
NO_BODY_BOUND = 20.0


@pytest.fixture
async def server(ctx: AppContext) -> AsyncIterator[TestServer]:
    async with TestServer(create_app(ctx, worker=False)) as srv:
        yield srv


def _head(headers: dict[str, str], length: int) -> bytes:
    lines = ["POST /webhook HTTP/1.1", "Host: 127.0.0.1", f"Content-Length: {length}",
             *(f"{k}: {v}" for k, v in headers.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


async def _read_answer(reader: asyncio.StreamReader) -> tuple[int, dict[str, str], bytes]:
    status_line = await reader.readline()
    assert status_line.startswith(b"HTTP/1.1 "), status_line
    status = int(status_line.split()[1])
    headers: dict[str, str] = {}
    while (line := await reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode().partition(":")
        headers[name.strip().lower()] = value.strip()
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return status, headers, body


async def _answer_before_body(server: TestServer, headers: dict[str, str],
                              length: int = len(BODY)) -> tuple[int, dict[str, object]]:
    """Send the request line and headers only, then read the answer: it must come while the
    body is still unsent."""
    reader, writer = await asyncio.open_connection(server.host, server.port)
    try:
        writer.write(_head(headers, length))
        await writer.drain()
        status, _, body = await asyncio.wait_for(_read_answer(reader), NO_BODY_BOUND)
        return status, json.loads(body)
    finally:
        writer.close()


async def _count(ctx: AppContext) -> int:
    async with ctx.sessionmaker() as s:
        return int(await s.scalar(select(func.count()).select_from(Delivery)) or 0)


def _without(headers: dict[str, str], name: str) -> dict[str, str]:
    return {k: v for k, v in headers.items() if k != name}


REFUSED_FROM_HEADERS = {
    "no signature header": (lambda h: _without(h, "X-Hub-Signature-256"), 401),
    "malformed signature": (lambda h: {**h, "X-Hub-Signature-256": "sha256=nothex"}, 401),
    "SHA-1 signature only": (lambda h: {**_without(h, "X-Hub-Signature-256"),
                                        "X-Hub-Signature": "sha1=" + "0" * 40}, 401),
    "no X-GitHub-Event": (lambda h: _without(h, "X-GitHub-Event"), 400),
    "X-GitHub-Event too long": (lambda h: {**h, "X-GitHub-Event": "e" * 65}, 400),
    "no X-GitHub-Delivery": (lambda h: _without(h, "X-GitHub-Delivery"), 400),
    "not a payload's content type": (lambda h: {**h, "Content-Type": "text/plain"}, 400),
}


@pytest.mark.parametrize("case", list(REFUSED_FROM_HEADERS))
async def test_a_request_its_headers_refuse_is_answered_before_its_body(
        server: TestServer, ctx: AppContext, case: str) -> None:
    change, status = REFUSED_FROM_HEADERS[case]
    answer_status, answer = await _answer_before_body(
        server, change(delivery_headers("ping", BODY, SECRET)))
    assert answer_status == status, answer
    assert "error" in answer
    assert await _count(ctx) == 0


async def test_a_content_length_over_the_cap_is_answered_413_before_its_body(
        server: TestServer, ctx: AppContext) -> None:
    status, answer = await _answer_before_body(
        server, delivery_headers("ping", BODY, SECRET), length=25 * 1024 * 1024 + 1)
    assert status == 413, answer
    assert await _count(ctx) == 0


async def test_expect_100_continue_is_refused_instead_of_continued(
        server: TestServer, ctx: AppContext) -> None:
    """A client that asks first (`Expect: 100-continue`, as curl does for a large body) is
    told the refusal, not "100 Continue" and then the refusal after its upload."""
    headers = {**_without(delivery_headers("ping", BODY, SECRET), "X-Hub-Signature-256"),
               "Expect": "100-continue"}
    status, answer = await _answer_before_body(server, headers)
    assert status == 401, answer
    assert await _count(ctx) == 0


async def _send_in_two_parts(server: TestServer, headers: dict[str, str], body: bytes
                             ) -> tuple[int, dict[str, object], list[int]]:
    """Headers, then the body once the server had the chance to answer: the statuses read
    before the final answer (an interim 100 Continue) are returned too."""
    reader, writer = await asyncio.open_connection(server.host, server.port)
    interim: list[int] = []
    try:
        writer.write(_head(headers, len(body)))
        await writer.drain()
        if headers.get("Expect") == "100-continue":
            line = await asyncio.wait_for(reader.readline(), NO_BODY_BOUND)
            interim.append(int(line.split()[1]))
            assert await reader.readline() == b"\r\n"
        writer.write(body)
        await writer.drain()
        status, _, answer = await asyncio.wait_for(_read_answer(reader), NO_BODY_BOUND)
        return status, json.loads(answer), interim
    finally:
        writer.close()


@pytest.mark.parametrize("expect", [False, True], ids=["plain", "expect-100-continue"])
async def test_a_valid_delivery_sent_in_two_parts_is_stored(
        server: TestServer, ctx: AppContext, expect: bool) -> None:
    headers = delivery_headers("ping", BODY, SECRET, str(uuid.uuid4()))
    if expect:
        headers["Expect"] = "100-continue"
    status, answer, interim = await _send_in_two_parts(server, headers, BODY)
    assert status == 202, answer
    assert interim == ([100] if expect else [])
    assert await _count(ctx) == 1


async def test_a_wrong_signature_is_still_checked_on_the_body_and_refused(
        server: TestServer, ctx: AppContext) -> None:
    """A well-formed signature header can only be checked against the body: read, then 401."""
    headers = delivery_headers("ping", BODY + b" ", SECRET)
    status, answer, _ = await _send_in_two_parts(server, headers, BODY)
    assert status == 401, answer
    assert answer == {"error": "signature does not match"}
    assert await _count(ctx) == 0
