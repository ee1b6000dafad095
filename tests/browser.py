"""Headless Chromium for page tests (fixture `chromium`).

Finds Debian's /usr/bin/chromium (or chromium / chromium-browser / google-chrome on PATH) and
runs it once per call: `--dump-dom URL` prints the DOM after parsing (so what a browser made of
the page, not the bytes the server sent) and `--screenshot` writes a PNG; `page_widths`
measures the laid-out pages through chromedriver. Each run gets its own
profile folder and no network services (no component updates, sync or QUIC).

Skips the test when no browser is installed, unless RLTRACKER_REQUIRE_CHROMIUM=1 (CI), which
turns the skip into a failure.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

CANDIDATES = ("/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome")
RUN_TIMEOUT = 90.0  # seconds: a hung browser fails the test instead of hanging the suite
BASE_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--hide-scrollbars", "--mute-audio",
)


def find_chromium() -> str | None:
    for candidate in CANDIDATES:
        found = candidate if os.path.isabs(candidate) and os.access(candidate, os.X_OK) \
            else shutil.which(candidate)
        if found:
            return found
    return None


@dataclass
class Chromium:
    executable: str
    workdir: Path
    runs: int = 0

    def _flags(self) -> list[str]:
        self.runs += 1
        profile = self.workdir / f"profile-{self.runs}"
        profile.mkdir(parents=True, exist_ok=True)
        return [self.executable, *BASE_FLAGS, f"--user-data-dir={profile}"]

    async def _run(self, args: list[str], stderr: bool = False) -> str:
        proc = await asyncio.create_subprocess_exec(
            *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        try:
            out, err = await asyncio.wait_for(proc.communicate(), RUN_TIMEOUT)
        except TimeoutError as exc:
            proc.kill()
            await proc.wait()
            raise AssertionError(f"chromium did not finish within {RUN_TIMEOUT}s: {args[-1]}") from exc
        if proc.returncode != 0:
            raise AssertionError(f"chromium exited {proc.returncode}: {err.decode()[-2000:]}")
        return (err if stderr else out).decode("utf-8", errors="replace")

    async def dump_dom(self, url: str) -> str:
        """The serialised DOM of `url` after the browser parsed it."""
        return await self._run([*self._flags(), "--dump-dom", url])

    async def console(self, url: str) -> list[str]:
        """What the page wrote to the browser's console while it loaded (a blocked style or
        image says so there: "... violates the following Content Security Policy ...")."""
        err = await self._run([*self._flags(), "--enable-logging=stderr", "--v=0",
                               "--dump-dom", url], stderr=True)
        return [line for line in err.splitlines() if ":CONSOLE" in line]

    async def screenshot(self, url: str, path: Path, width: int = 390, height: int = 1400) -> Path:
        """A PNG of `url` at a phone-sized window (390 px wide by default)."""
        await self._run([*self._flags(), f"--window-size={width},{height}",
                         f"--screenshot={path}", url])
        if not await asyncio.to_thread(path.is_file):
            raise AssertionError(f"chromium wrote no screenshot for {url}")
        return path


    async def page_widths(self, urls: list[str], width: int = 390) -> dict[str, tuple[int, int]]:
        """url -> (the page's scroll width, the window's width) at a phone-sized window: a
        page wider than its window scrolls sideways."""
        script = ("return [document.documentElement.scrollWidth,"
                  " document.documentElement.clientWidth]")
        found = await self.evaluate(urls, script, width=width)
        return {url: (int(value[0]), int(value[1])) for url, value in found.items()}

    async def evaluate(self, urls: list[str], script: str, width: int = 390) -> dict[str, Any]:
        """url -> what `script` (a function body: `return ...`) returned on the laid-out page,
        at a viewport `width` pixels wide (as narrow as a phone's: not the 500 px headless
        Chromium's windows are at least). Measured through chromedriver (W3C WebDriver): the
        pages themselves run no script (their CSP forbids it), the driver's evaluation is not
        subject to it."""
        values: dict[str, Any] = {}
        async with self.driven(width=width) as driver:
            for url in urls:
                await driver.get(url)
                values[url] = await driver.execute(script)
        return values

    @asynccontextmanager
    async def driven(self, width: int = 390) -> AsyncIterator[Driver]:
        """A browser driven through chromedriver (W3C WebDriver) at a viewport `width` pixels
        wide: load pages, run a script, press keys, send DevTools commands."""
        driver = shutil.which("chromedriver")
        if driver is None:
            if os.environ.get("RLTRACKER_REQUIRE_CHROMIUM") == "1":
                pytest.fail("RLTRACKER_REQUIRE_CHROMIUM=1 but chromedriver was not found")
            pytest.skip("chromedriver is not installed")
        import socket

        import aiohttp

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        proc = await asyncio.create_subprocess_exec(
            driver, f"--port={port}", stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL)
        base = f"http://127.0.0.1:{port}"
        try:
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=RUN_TIMEOUT)) as http:
                for _ in range(200):  # the driver answers /status once it listens
                    try:
                        async with http.get(f"{base}/status") as r:
                            if r.status == 200:
                                break
                    except aiohttp.ClientConnectionError:
                        await asyncio.sleep(0.05)
                flags = [*self._flags()[1:], f"--window-size={width},1200"]
                # Headless Chromium opens no window narrower than 500 px: a 390 px window
                # laid pages out at 500 px. The driver's device metrics set the viewport to
                # the width asked for (a desktop viewport: no mobile scaling).
                metrics = {"width": width, "height": 1200, "pixelRatio": 1.0, "mobile": False}
                caps = {"capabilities": {"alwaysMatch": {"goog:chromeOptions": {
                    "binary": self.executable, "args": flags,
                    "mobileEmulation": {"deviceMetrics": metrics}}}}}
                async with http.post(f"{base}/session", json=caps) as r:
                    session = f"{base}/session/{(await r.json())['value']['sessionId']}"
                try:
                    yield Driver(http, session)
                finally:
                    async with http.delete(session):
                        pass
        finally:
            proc.terminate()
            await proc.wait()


@dataclass
class Driver:
    """One WebDriver session (`Chromium.driven`)."""

    http: Any
    session: str

    async def _post(self, path: str, body: dict[str, Any]) -> Any:
        async with self.http.post(f"{self.session}/{path}", json=body) as r:
            answer = await r.json()
            assert r.status == 200, answer
            return answer["value"]

    async def get(self, url: str) -> None:
        await self._post("url", {"url": url})

    async def execute(self, script: str, *args: Any) -> Any:
        """What `script` (a function body: `return ...`) returns on the page."""
        return await self._post("execute/sync", {"script": script, "args": list(args)})

    async def press(self, key: str, modifiers: tuple[str, ...] = ()) -> None:
        """One key pressed and let go (WebDriver's key codes: TAB is \ue004, SHIFT \ue008)."""
        actions = [*({"type": "keyDown", "value": m} for m in modifiers),
                   {"type": "keyDown", "value": key}, {"type": "keyUp", "value": key},
                   *({"type": "keyUp", "value": m} for m in reversed(modifiers))]
        await self._post("actions", {"actions": [{"type": "key", "id": "keyboard",
                                                  "actions": actions}]})

    async def cdp(self, command: str, params: dict[str, Any] | None = None) -> Any:
        """A Chrome DevTools Protocol command on the page (chromedriver's goog/cdp/execute)."""
        return await self._post("goog/cdp/execute", {"cmd": command, "params": params or {}})

    async def pixels(self, x: float, y: float, width: float, height: float) -> list[list[tuple[int, ...]]]:
        """The page's pixels (RGB) in a rectangle of the viewport, rows of columns, as drawn
        (DevTools' screenshot of that clip)."""
        import base64

        shot = await self.cdp("Page.captureScreenshot", {"format": "png", "clip": {
            "x": x, "y": y, "width": width, "height": height, "scale": 1}})
        return png_pixels(base64.b64decode(shot["data"]))


def png_pixels(data: bytes) -> list[list[tuple[int, ...]]]:
    """The RGB pixels of an 8-bit, non-interlaced RGB or RGBA PNG (what Chromium writes), rows
    of columns: enough to read a screenshot without an imaging library."""
    import struct
    import zlib

    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, chunks, header = 8, [], b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            chunks.append(body)
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and colour in (2, 6) and not interlace, (depth, colour, interlace)
    step = 3 if colour == 2 else 4
    raw, stride = zlib.decompress(b"".join(chunks)), width * step
    rows: list[list[tuple[int, ...]]] = []
    previous = bytearray(stride)
    for r in range(height):
        kind, line = raw[r * (stride + 1)], bytearray(raw[r * (stride + 1) + 1:(r + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - step] if i >= step else 0
            up, corner = previous[i], previous[i - step] if i >= step else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                guess = left + up - corner
                pa, pb, pc = abs(guess - left), abs(guess - up), abs(guess - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 255
        rows.append([tuple(line[c:c + 3]) for c in range(0, stride, step)])
        previous = line
    return rows


@pytest.fixture
def chromium(tmp_path: Path) -> Iterator[Chromium]:
    executable = find_chromium()
    if executable is None:
        if os.environ.get("RLTRACKER_REQUIRE_CHROMIUM") == "1":
            pytest.fail("RLTRACKER_REQUIRE_CHROMIUM=1 but no chromium executable was found")
        pytest.skip("headless Chromium is not installed")
    yield Chromium(executable, tmp_path / "chromium")


@asynccontextmanager
async def serving(ctx: Any) -> AsyncIterator[Any]:
    """The whole web app on `ctx` (no inbox worker) on a local port, for the browser to load."""
    from aiohttp.test_utils import TestServer

    from bot.app import create_app

    server = TestServer(create_app(ctx, worker=False), host="127.0.0.1")
    await server.start_server()
    try:
        yield server
    finally:
        await server.close()
