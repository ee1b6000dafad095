"""`make run` as README's quick start gives it, and `rltracker serve --dev`: where they listen.

`make run` is the Makefile's recipe run by make itself, with the venv's `rltracker` standing in
for the one `make install` would build (a folder given as VENV, its `.installed` stamp fresh,
so make installs nothing). The listening socket is read from /proc/net/tcp: the address the
kernel says the port is bound to, not what the program prints.

- `serve --dev` and `make run` listened on 0.0.0.0, every interface: on a laptop on a shared
  network the dev server's pages, /api/export, /metrics and whatever deliveries the developer
  replayed into it were anyone's, unlike the development servers an operator knows. README
  opens http://localhost:8000/ and the refusal of a plain `serve` calls --dev "a local,
  dry-run service": it now listens on 127.0.0.1 unless --host (or make's HOST) says
  otherwise. A plain `serve` (the image's) keeps 0.0.0.0.
- SIGTERM to `make run` (a supervisor, `kill`) reaches serve: GNU make sends it on to the
  recipe's command, which it runs without a shell in between, and waits for it. It stops
  in order, exit 0 (make then exits on the signal it was sent).
"""

from __future__ import annotations

import asyncio
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest

from tests.test_cli import CLEAN_ENV
from tests.test_crash_recovery import RLTRACKER, free_port

ROOT = Path(__file__).resolve().parent.parent
POLLS = 1200  # bounded polls, a twentieth of a second apart
LISTEN = "0A"  # /proc/net/tcp's state of a listening socket


def listening_on(port: int) -> set[str]:
    """The IPv4 addresses a socket listens on at `port`, as the kernel reports them."""
    found = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        address, _, hex_port = fields[1].partition(":")
        if fields[3] == LISTEN and int(hex_port, 16) == port:
            found.add(".".join(str(int(address[k:k + 2], 16)) for k in (6, 4, 2, 0)))
    return found


async def _until_listening(proc: subprocess.Popen[bytes], port: int, log: Path) -> set[str]:
    for _ in range(POLLS):
        assert proc.poll() is None, _tail(log)
        if listening_on(port):
            async with aiohttp.ClientSession() as session, \
                    session.get(f"http://127.0.0.1:{port}/healthz") as resp:
                assert resp.status == 200
            return listening_on(port)
        await asyncio.sleep(0.05)  # a poll of /proc/net/tcp
    raise AssertionError("it never listened")


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-3000:]


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait()


needs_proc = pytest.mark.skipif(not Path("/proc/net/tcp").is_file(), reason="reads /proc/net/tcp")


@needs_proc
async def test_serve_dev_listens_on_this_machine_only(tmp_path: Path, sqlite_template: Path) -> None:
    db = tmp_path / "dev.db"
    shutil.copy(sqlite_template, db)
    port = free_port()
    log = tmp_path / "serve.log"
    proc = subprocess.Popen(  # noqa: ASYNC220 - starting it does not block
        [str(RLTRACKER), "serve", "--dev", "--port", str(port), "--no-scheduler", "--no-backfill"],
        env={**CLEAN_ENV, "DATABASE_URL": f"sqlite+aiosqlite:///{db}"},
        stdout=subprocess.PIPE, stderr=log.open("wb"))
    try:
        assert await _until_listening(proc, port, log) == {"127.0.0.1"}
    finally:
        _stop(proc)
    assert proc.stdout is not None
    assert f"serving on http://127.0.0.1:{port}" in proc.stdout.read().decode()


@needs_proc
async def test_serve_without_dev_still_listens_everywhere(tmp_path: Path,
                                                          sqlite_template: Path) -> None:
    """The image's `rltracker serve` (no --dev): reachable from outside its container."""
    db = tmp_path / "prod.db"
    shutil.copy(sqlite_template, db)
    port = free_port()
    log = tmp_path / "serve.log"
    proc = subprocess.Popen(  # noqa: ASYNC220 - starting it does not block
        [str(RLTRACKER), "serve", "--port", str(port), "--no-scheduler", "--no-backfill"],
        env={**CLEAN_ENV, "DATABASE_URL": f"sqlite+aiosqlite:///{db}",
             "GITHUB_WEBHOOK_SECRET": "prod-secret", "RLTRACKER_DRY_RUN": "1"},
        stdout=subprocess.DEVNULL, stderr=log.open("wb"))
    try:
        assert await _until_listening(proc, port, log) == {"0.0.0.0"}
    finally:
        _stop(proc)


def _venv(tmp_path: Path) -> Path:
    """A VENV for the Makefile whose `rltracker` is this suite's, installed as far as make
    can tell (its stamps newer than pyproject.toml)."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(sys.executable)
    (venv / "bin" / "rltracker").symlink_to(RLTRACKER)
    (venv / ".installed").touch()
    return venv


@needs_proc
@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
@pytest.mark.parametrize("host", [None, "0.0.0.0"])
async def test_make_run_listens_as_readme_says_and_sigterm_to_make_stops_serve(
        tmp_path: Path, host: str | None) -> None:
    port = free_port()
    db = tmp_path / "make-run.db"  # none yet: make run's migrate step creates it
    log = tmp_path / "make.log"
    args = ["make", "--no-print-directory", "-C", str(ROOT), "run", f"VENV={_venv(tmp_path)}",
            f"PORT={port}", f"DATABASE_URL=sqlite+aiosqlite:///{db}"]
    env = {k: v for k, v in CLEAN_ENV.items() if not k.startswith(("MAKE", "MFLAGS"))}
    proc = subprocess.Popen(  # noqa: ASYNC220 - starting it does not block
        args + ([f"HOST={host}"] if host else []),
        env={**env, "RLTRACKER_NIGHTLY_CRON": "0 3 1 1 *", "PYTHONUNBUFFERED": "1"},
        stdout=log.open("wb"), stderr=subprocess.STDOUT)
    try:
        assert await _until_listening(proc, port, log) == {host or "127.0.0.1"}
        proc.send_signal(signal.SIGTERM)  # to make, not to serve
        status = await asyncio.wait_for(asyncio.to_thread(proc.wait), 120)
        text = _tail(log)
        assert status in (-signal.SIGTERM, 128 + signal.SIGTERM, 2), (status, text)
        assert '"msg": "stopping", "signal": "SIGTERM"' in text, text
        assert "Traceback" not in text, text
        # serve stopped (make waits for it): nothing listens, no serve is left behind
        assert not listening_on(port), text
    finally:
        _stop(proc)


async def test_serve_on_an_ipv6_address_prints_a_url_that_opens(tmp_path: Path,
                                                                 sqlite_template: Path) -> None:
    """`serve --host ::1` printed `rltracker serving on http://::1:PORT`, which no browser or
    client reads as an address (an IPv6 host goes in brackets): `http://[::1]:PORT`."""
    db = tmp_path / "v6.db"
    shutil.copy(sqlite_template, db)
    port = free_port()
    log = tmp_path / "serve.log"
    proc = subprocess.Popen(  # noqa: ASYNC220 - starting it does not block
        [str(RLTRACKER), "serve", "--dev", "--host", "::1", "--port", str(port),
         "--no-scheduler", "--no-backfill"],
        env={**CLEAN_ENV, "DATABASE_URL": f"sqlite+aiosqlite:///{db}"},
        stdout=subprocess.PIPE, stderr=log.open("wb"))
    try:
        assert proc.stdout is not None
        lines = [await asyncio.to_thread(proc.stdout.readline) for _ in range(2)]
        if proc.poll() is not None and b"cannot listen" in log.read_bytes():
            pytest.skip("no IPv6 loopback here")
        said = b"".join(lines).decode()
        assert f"rltracker serving on http://[::1]:{port}" in said, (said, _tail(log))
        url = said.split("serving on ")[1].split()[0]
        async with aiohttp.ClientSession() as session, session.get(url + "/healthz") as resp:
            assert resp.status == 200
    finally:
        _stop(proc)
