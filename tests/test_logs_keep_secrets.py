"""No secret in the log (ops77): a webhook received over HTTP, worked by the inbox worker,
answered with a comment through an installation token, and the repository's contribution rules
fetched (its tree listing too), every logger at DEBUG (aiohttp's, gidgethub's, SQLAlchemy's
included): no record, its arguments or its traceback holds the webhook secret, the private key,
the app's JWT or an installation token. SQLite and PostgreSQL; GitHub is the fake server over
HTTP; the webhook payload is the shared fixture (skipped without ../shared)."""

from __future__ import annotations

import json
import logging
import traceback
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from bot.app import create_app
from bot.speaking.contribution import rules_for_repo
from bot.webhooks.replay import delivery_headers
from bot.webhooks.worker import Worker
from tests.fakegithub import rsa_key_pair
from tests.test_actions_e2e import INST, install
from tests.test_edit_order import _shared

HELLO = "Codertocat/Hello-World"
SECRET = "test-secret"  # conftest's `settings`


def _logged_text(records: list[logging.LogRecord]) -> str:
    parts = []
    for record in records:
        parts.append(record.getMessage())
        parts.append(repr(record.args))
        if record.exc_info:
            parts.extend(traceback.format_exception(*record.exc_info))
    return "\n".join(parts)


async def test_a_nights_and_a_webhooks_logs_hold_no_secret(app_ctx: Any, fake_github: Any,
                                                           shared_dir: Any,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    payload = _shared(shared_dir, "issues/opened.json")
    payload["installation"] = {"id": INST, "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uNDcxMQ=="}
    await install(app_ctx, fake_github, HELLO, framework="verl")
    fake_github.add_issue(HELLO, payload["issue"]["number"], payload["issue"]["title"],
                          payload["issue"]["body"] or "", payload["issue"]["user"]["login"])
    fake_github.set_file(HELLO, "CONTRIBUTING.md", "# Contributing\n\nAdd a test for each change.\n")
    caplog.set_level(logging.DEBUG)
    body = json.dumps(payload).encode()
    async with TestClient(TestServer(create_app(app_ctx, worker=False))) as client:
        resp = await client.post("/webhook", data=body,
                                 headers=delivery_headers("issues", body, SECRET))
        assert resp.status in (200, 202), await resp.text()
        await Worker(app_ctx).run_until_idle()
        resp = await client.get("/healthz")
        assert resp.status == 200
    await rules_for_repo(app_ctx, HELLO, refresh=True)
    # a request with a wrong signature is refused and logged: the secret is not in its line
    async with TestClient(TestServer(create_app(app_ctx, worker=False))) as client:
        resp = await client.post("/webhook", data=body,
                                 headers=delivery_headers("issues", body, "not-" + SECRET))
        assert resp.status in (400, 401, 403)

    tokens = list(fake_github.tokens)
    assert tokens, "no installation token was issued: the test did not reach GitHub as the app"
    assert fake_github.requests("GET", r"/git/trees/"), "the tree listing was not fetched"
    jwts = {r.token for r in fake_github.requests("POST", r"/access_tokens") if r.token}
    assert jwts, "no JWT was sent"
    pem, _ = rsa_key_pair()
    key_lines = [line for line in pem.splitlines() if line and "-----" not in line]
    logged = _logged_text(caplog.records)
    assert logged, "nothing was logged"
    leaks = [what for what, value in
             [("the webhook secret", SECRET), *(("an installation token", t) for t in tokens),
              *(("the app's JWT", j) for j in jwts),
              *(("a line of the private key", k) for k in key_lines)]
             if value in logged]
    assert leaks == []
