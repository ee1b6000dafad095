"""`rltracker report --out DIR` when a file of the report cannot be written: report-DATE.md
on a full disk (here a symbolic link to /dev/full: every write fails with ENOSPC), or
report-DATE.html where a folder stands. The files were opened in place and written before
the report was posted: the OSError of a write names no file, so the command ended in a
traceback, as a bug, and the night's report, stored, was never posted. Now each file is
written whole beside its name and renamed over it (bot.files), the report is posted all the
same (it is stored; the files are a copy of it, written again by `rltracker report --date`),
and one line names the file and why, exit 2. SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import func, select

from tests.fakegithub import FakeGitHub
from tests.test_cli_errors import CLEAN_ENV, HANG_GUARD, PEM, one_line


async def _report(fake_github: FakeGitHub, db_url: str, out: Path) -> subprocess.CompletedProcess[str]:
    fake_github.add_installation(77, "tracker-org", repos=["tracker-org/tracker"])
    fake_github.add_issue("tracker-org/tracker", 1, title="Nightly reports")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot.cli", "report", "--out", str(out),
        env={**CLEAN_ENV, "DATABASE_URL": db_url, "GITHUB_API_URL": fake_github.url,
             "GITHUB_APP_ID": "4242", "GITHUB_PRIVATE_KEY": PEM,
             "RLTRACKER_REPORT_ISSUE": "tracker-org/tracker#1",
             "RLTRACKER_PUBLIC_URL": "https://rl.example.org"},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out_b, err_b = await asyncio.wait_for(proc.communicate(), HANG_GUARD)
    return subprocess.CompletedProcess(["report"], proc.returncode or 0, out_b.decode(), err_b.decode())


async def _reports_stored(db_url: str) -> int:
    from sqlalchemy.ext.asyncio import create_async_engine

    from bot.store.models import Report

    engine = create_async_engine(db_url)
    try:
        async with engine.connect() as conn:
            return int(await conn.scalar(select(func.count()).select_from(Report.__table__)) or 0)
    finally:
        await engine.dispose()


def _today() -> str:
    from bot.store.types import utcnow

    return utcnow().date().isoformat()


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full: a full disk cannot be shown")
async def test_report_md_on_a_full_disk_is_one_line_and_the_report_still_posted(
        tmp_path: Path, db_url: str, fake_github: FakeGitHub) -> None:
    out = tmp_path / "reports"
    out.mkdir()
    day = _today()
    (out / f"report-{day}.md").symlink_to("/dev/full")
    result = await _report(fake_github, db_url, out)
    one_line(result, "report", 2, f"report-{day}.md", "No space left on device",
             "tracker-org/tracker#1", f"--date {day}")
    assert await _reports_stored(db_url) == 1
    assert len(fake_github.comments_of("tracker-org/tracker", 1)) == 1  # posted all the same
    html = (out / f"report-{day}.html").read_text(encoding="utf-8")
    assert html.rstrip().endswith("</html>")  # the other file, written whole
    assert sorted(p.name for p in out.iterdir()) == [f"report-{day}.html", f"report-{day}.md"]


async def test_report_html_where_a_folder_stands_keeps_nothing_half_and_posts(
        tmp_path: Path, db_url: str, fake_github: FakeGitHub) -> None:
    out = tmp_path / "reports"
    out.mkdir()
    day = _today()
    (out / f"report-{day}.html").mkdir()
    result = await _report(fake_github, db_url, out)
    one_line(result, "report", 2, str(out / f"report-{day}.html"), "tracker-org/tracker#1")
    assert '"posted": "posted"' in result.stdout
    assert len(fake_github.comments_of("tracker-org/tracker", 1)) == 1
    assert (out / f"report-{day}.md").read_text(encoding="utf-8").startswith("<!-- rltracker:report:")
    assert (out / f"report-{day}.html").is_dir()
    assert sorted(p.name for p in out.iterdir()) == [f"report-{day}.html", f"report-{day}.md"]
