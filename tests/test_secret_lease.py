"""Two settings whose value passed the check and meant something else than the operator did:
a webhook secret with spaces around it (or only spaces) and a worker lease under a second."""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import uuid
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer

from bot.app import create_app
from bot.config import SettingError, Settings
from bot.server import settings_for_serve

BODY = b'{"zen": "Keep it logically awesome.", "hook_id": 1}'


def _headers(secret: str) -> dict[str, str]:
    digest = hmac.new(secret.encode(), BODY, hashlib.sha256).hexdigest()
    return {"Content-Type": "application/json", "X-GitHub-Event": "ping",
            "X-GitHub-Delivery": str(uuid.uuid4()), "X-Hub-Signature-256": "sha256=" + digest}


@pytest.mark.parametrize("value", ["   ", " \t ", "\t\n"])
def test_a_secret_of_spaces_is_no_secret(value: str, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """GITHUB_WEBHOOK_SECRET=' ' (a line `GITHUB_WEBHOOK_SECRET= ` in an env file) was taken as
    the secret: `serve` started, and a delivery signed with a space, which anyone can forge,
    was accepted. It is no secret: `serve` says it is not set."""
    monkeypatch.chdir(tmp_path)
    assert Settings.from_env({"GITHUB_WEBHOOK_SECRET": value}).webhook_secret is None
    with pytest.raises(ValueError, match="GITHUB_WEBHOOK_SECRET is not set"):
        settings_for_serve(False, {"GITHUB_WEBHOOK_SECRET": value, "RLTRACKER_DRY_RUN": "1"})


@pytest.mark.parametrize(("env", "signed"), [
    (" s3cret ", "s3cret"),  # GitHub's field holds it without the spaces pasted around it
    (" s3cret ", " s3cret "),  # ... or with them: as it is
    ("s3cret\t", "s3cret"),
])
async def test_a_secret_with_spaces_around_it_verifies_either_way(ctx, env: str, signed: str) -> None:
    """A secret with spaces around it was used as is: when GitHub's field holds it without
    them (the spaces came with the paste or the env file), every delivery was refused (401)."""
    secret = Settings.from_env({"GITHUB_WEBHOOK_SECRET": env}, database_url="sqlite://").webhook_secret
    ctx.settings = dataclasses.replace(ctx.settings, webhook_secret=secret)
    async with TestClient(TestServer(create_app(ctx, worker=False))) as client:
        resp = await client.post("/webhook", data=BODY, headers=_headers(signed))
        assert resp.status == 202, await resp.text()
        resp = await client.post("/webhook", data=BODY, headers=_headers("other"))
        assert resp.status == 401


@pytest.mark.parametrize("value", ["0.5", "0.001", "1e-9"])
def test_a_lease_under_a_second_is_refused(value: str, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """RLTRACKER_WORKER_LEASE=0.5 passed: the heartbeat renews a claimed delivery every third
    of the lease, and a worker whose loop was busy longer (an analysis of a long thread, a
    slow database) lost its deliveries to another worker mid-handling. A value under a second
    is a unit slip (milliseconds, minutes); it is refused, saying so."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SettingError) as caught:
        Settings.from_env({"RLTRACKER_WORKER_LEASE": value})
    assert caught.value.name == "RLTRACKER_WORKER_LEASE"
    assert "at least 1" in caught.value.message
