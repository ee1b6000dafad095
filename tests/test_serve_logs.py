"""What `rltracker serve` logs for requests its HTTP parser refuses (ops61).

aiohttp logged each one, at ERROR and with a traceback through its parser, as "Error handling
request from 127.0.0.1": a scanner sending garbage to the port filled the logs with errors an
operator was paged for and could do nothing about. Each is now one WARNING line naming the
client and what was wrong, with no traceback; an exception of a request handler (a bug) is
still an ERROR with its traceback.

A real `serve` subprocess (SQLite), real sockets; the malformed requests are those a client
can send: a header line without a colon, a control character in the path, a header over
8 KiB, a chunked body whose chunk size is not a number."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from pathlib import Path

from tests.test_crash_recovery import ServeProcess

MALFORMED = [
    b"GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n",
    b"GET /\x01\x02 HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: x\r\nX-Long: " + b"a" * 20000 + b"\r\n\r\n",
    b"POST /webhook HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
    b"Content-Type: application/json\r\n\r\nZZZ\r\nabc\r\n",
]


async def _send(port: int, raw: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(raw)
        await writer.drain()
        return await asyncio.wait_for(reader.read(), 60)  # the server closes after its 400
    finally:
        writer.close()


async def test_a_malformed_request_is_one_warning_line_without_a_traceback(
        sqlite_db_url: str, tmp_path: Path) -> None:
    server = ServeProcess(sqlite_db_url, tmp_path)
    await server.start()
    try:
        answers = [await _send(server.port, raw) for raw in MALFORMED]
    finally:
        server.stop()
    assert all(a.startswith(b"HTTP/1.") and b" 400 " in a.split(b"\r\n")[0] for a in answers), answers
    lines = [line for line in server.log_lines() if line.get("logger") == "aiohttp.server"]
    assert len(lines) == len(MALFORMED), lines
    for line in lines:
        assert line["level"] == "warning", line
        assert "exc" not in line, line["exc"][-1500:]
        assert line["msg"].startswith("malformed HTTP request from 127.0.0.1 refused (400"), line
        assert "\n" not in line["msg"] and len(line["msg"]) < 300, line
        assert "aaaa" not in line["msg"], line  # not the bytes the client sent
    raw = "".join(server.log_path(n).read_text() for n in range(1, server.runs + 1))
    assert "Traceback" not in raw, raw[-3000:]


def test_a_request_handlers_exception_is_still_an_error_with_its_traceback() -> None:
    """The same logger and message for an exception a handler raised (aiohttp's 500): kept."""
    from bot.logs import configure_logging

    out = io.StringIO()
    configure_logging("INFO", stream=out)
    try:
        try:
            raise RuntimeError("a bug in a handler")
        except RuntimeError:
            logging.getLogger("aiohttp.server").exception("Error handling request from %s",
                                                          "127.0.0.1")
    finally:
        configure_logging("INFO")
    line = json.loads(out.getvalue().splitlines()[-1])
    assert line["level"] == "error"
    assert "RuntimeError: a bug in a handler" in line["exc"]
    assert line["msg"] == "Error handling request from 127.0.0.1"


async def test_serve_runs_with_its_standard_output_closed(sqlite_db_url: str,
                                                          tmp_path: Path) -> None:
    """`rltracker serve >&-` (a supervisor or a shell that closes standard output; the logs
    are on stderr): the line "rltracker serve: <stdout>: Bad file descriptor", exit 2, once
    the port was bound and the worker started: the "serving on" line, which says nothing the
    JSON "serving" log line does not, stopped the server (ops61). It now serves; SIGTERM stops
    it, exit 0. `--dev`'s webhook secret, which cannot be printed then, is said to be
    unprinted (not printed to the logs)."""
    import os
    import signal
    import subprocess
    import sys

    import aiohttp

    from tests.test_crash_recovery import RLTRACKER, free_port

    for dev in (False, True):
        port = free_port()
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("GITHUB_", "DATABASE_URL", "RLTRACKER_"))}
        env.update({"DATABASE_URL": sqlite_db_url, "RLTRACKER_DRY_RUN": "1",
                    "PYTHONUNBUFFERED": "1"})
        if not dev:
            env["GITHUB_WEBHOOK_SECRET"] = "closed-stdout-secret"
        log = tmp_path / f"serve-{dev}.log"
        args = [str(RLTRACKER), "serve", "--host", "127.0.0.1", "--port", str(port),
                "--no-scheduler", *(["--dev"] if dev else [])]
        proc = subprocess.Popen(  # noqa: ASYNC220 - starting it does not block
            [sys.executable, "-c", "import os, sys; os.close(1); os.execv(sys.argv[1], sys.argv[1:])",
             *args], env=env, cwd=tmp_path, stdin=subprocess.DEVNULL, stderr=log.open("wb"))
        try:
            answered = False
            async with aiohttp.ClientSession() as session:
                for _ in range(600):  # bounded polls of /healthz
                    if proc.poll() is not None:
                        break
                    try:
                        async with session.get(f"http://127.0.0.1:{port}/healthz") as resp:
                            answered = resp.status == 200
                    except aiohttp.ClientError:
                        pass
                    if answered:
                        break
                    await asyncio.sleep(0.05)
            assert answered, (proc.poll(), log.read_text()[-2000:])
            proc.send_signal(signal.SIGTERM)
            status = await asyncio.to_thread(proc.wait, 60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        text = log.read_text()
        assert status == 0, text[-2000:]
        assert "Traceback" not in text and "Bad file descriptor" not in text, text[-2000:]
        if dev:
            lines = [json.loads(x) for x in text.splitlines() if x.startswith("{")]
            said = [x for x in lines if "webhook secret" in x.get("msg", "")]
            assert len(said) == 1 and said[0]["level"] == "warning", said
            assert "GITHUB_WEBHOOK_SECRET" in said[0]["msg"]
