"""Settings as an operator writes them: values read from files and .env lines (a newline or a
space at the end), and values the start-up check passed that failed later, at run time."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer

from bot.app import create_app
from bot.cli import main
from bot.config import Settings
from bot.context import AppContext


async def test_replay_signs_with_the_secret_serve_verifies_with(
        db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """GITHUB_WEBHOOK_SECRET filled from a file (`echo secret > file`) ends in a newline:
    `serve` drops it (GitHub's secret field is one line), `rltracker replay` signed with it,
    so every delivery replayed to the server it was meant for was refused (401)."""
    monkeypatch.setenv("GITHUB_WEBHOOK_SECRET", "s3cret\n")
    settings = Settings.from_env({"GITHUB_WEBHOOK_SECRET": "s3cret\n"}, database_url=db_url)
    assert settings.webhook_secret == "s3cret"
    ping = tmp_path / "ping" / "ping.json"
    ping.parent.mkdir()
    ping.write_text(json.dumps({"zen": "Keep it logically awesome.", "hook_id": 1}))
    ctx = AppContext.create(settings)
    try:
        async with TestClient(TestServer(create_app(ctx, worker=False))) as client:
            url = str(client.make_url("/webhook"))
            code = await asyncio.to_thread(main, ["replay", str(ping), "--url", url])
    finally:
        await ctx.close()
    out = capsys.readouterr().out
    assert code == 0 and "summary: 202: 1" in out, out
