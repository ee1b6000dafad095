"""The `rltracker` command line as a person or a script uses it, at the edges review59 found:
inputs the commands read (files, stdin, paper pools), outputs they write (stdout, files that
already exist, a disk that fills up), and the names people type. Each command runs as a real
process (or through bot.cli.main) on real files in tmp_path and real databases (SQLite and
PostgreSQL where the store is involved); nothing of the project is patched. Timeouts are hang
guards, not speed assertions."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_analyze_command import GOOD_1, GOOD_2, read_jsonl, write_lines
from tests.test_cli_errors import CLEAN_ENV, HANG_GUARD, one_line, prog


def rltracker(*args: str, env: dict[str, str] | None = None, stdin: bytes | None = None,
              stdout: object = subprocess.PIPE) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "bot.cli", *args], env={**CLEAN_ENV, **(env or {})},
                          input=stdin, stdout=stdout, stderr=subprocess.PIPE, timeout=HANG_GUARD)


def text(result: subprocess.CompletedProcess[bytes]) -> subprocess.CompletedProcess[str]:
    """The same result with stdout and stderr as text, for one_line."""
    out = result.stdout.decode("utf-8") if isinstance(result.stdout, bytes) else ""
    return subprocess.CompletedProcess(result.args, result.returncode, out,
                                       result.stderr.decode("utf-8"))


# ------------------------------------------------------------------ analyze: what it reads
def test_a_number_too_long_to_read_is_a_bad_line_not_a_crash(tmp_path: Path) -> None:
    """Python refuses to read an integer of more than 4,300 digits (a ValueError, not a
    JSONDecodeError). One such number in a line (valid JSON, under a key the contract ignores)
    stopped the whole run with a traceback reported as a bug: no output file, every record
    lost. It is a bad line like any other; in a paper pool, the line is named, exit 2."""
    huge = "9" * 5000
    src = write_lines(tmp_path / "in.jsonl", [
        json.dumps(GOOD_1), '{"id": "o/r#9", "extra": ' + huge + "}",
        json.dumps(dict(GOOD_2, number=int("1" * 30))), json.dumps(GOOD_2)])
    out = tmp_path / "out.jsonl"
    result = text(rltracker("analyze", str(src), "-o", str(out)))
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    rows = read_jsonl(out)
    assert [r.get("id") for r in rows] == ["o/r#1", "o/r#9", "o/r#2", "o/r#2"]  # its opening id (left80)
    assert rows[1]["line"] == 2 and rows[1]["error"].startswith("line 2: ")
    assert "digits" in rows[1]["error"] and "error" not in rows[2] and "error" not in rows[3]
    assert result.stderr.splitlines() == [f"rltracker analyze: {rows[1]['error']}"]

    pool = tmp_path / "pool.jsonl"
    pool.write_text('{"title": "A paper"}\n{"title": "B", "n": ' + huge + "}\n", encoding="utf-8")
    result = text(rltracker("analyze", "--papers", str(pool), str(src), "-o", str(out)))
    one_line(result, "analyze", 2, f"{pool} line 2", "digits")
    assert [r.get("id") for r in read_jsonl(out)] == ["o/r#1", "o/r#9", "o/r#2", "o/r#2"]  # kept


# ------------------------------------------------------------------ what the commands write
DEV_FULL = Path("/dev/full")  # every write fails with ENOSPC, as on a disk that filled up


@pytest.mark.parametrize("command", [
    "rules FOLDER", "rules FOLDER --json", "analyze RECORDS", "stats --json", "deliveries",
    "deliveries --json", "verdicts export", "verdicts wanted", "report", "repos resume o/r"])
def test_standard_output_on_a_full_disk_is_one_line_naming_it(
        command: str, tmp_path: Path, db_url: str) -> None:
    """`rltracker rules verl > out.md` on a disk that filled up (here /dev/full): the write
    failed with ENOSPC, an OSError naming no file, and every command but analyze printed a
    traceback and "this is a bug" (exit 1); analyze said '[Errno 28] No space left on device'
    without saying where. One line names standard output and why, exit 2 (as for a file that
    cannot be written, or standard output closed at start)."""
    if not DEV_FULL.exists():
        pytest.skip("no /dev/full here")
    (tmp_path / "CONTRIBUTING.md").write_text("Add tests for every change.\n" * 2000, encoding="utf-8")
    records = write_lines(tmp_path / "in.jsonl", [json.dumps(GOOD_1)] * 20)
    args = [{"FOLDER": str(tmp_path), "RECORDS": str(records)}.get(a, a) for a in command.split()]
    with DEV_FULL.open("wb") as full:
        result = text(rltracker(*args, env={"DATABASE_URL": db_url}, stdout=full))
    if command.startswith("repos"):  # nothing stored: no output to lose, the one line it owes
        one_line(result, "repos resume", 1, "o/r is not a repository")
        return
    line = one_line(result, prog(args), 2, "<stdout>", "No space left on device")
    assert "bug" not in line


async def _verdicts_on_long_threads(db_url: str, count: int, body_chars: int) -> None:
    """`count` stored issues of `body_chars` each, each with a person's verdict."""
    from bot.config import Settings
    from bot.context import AppContext
    from bot.store.threads import upsert_thread
    from bot.store.verdicts import set_verdict

    ctx = AppContext.create(Settings.from_env({}, database_url=db_url))
    try:
        async with ctx.sessionmaker() as session, session.begin():
            for n in range(1, count + 1):
                thread = await upsert_thread(session, {
                    "repo": "verl-project/verl", "number": n, "kind": "issue", "state": "open",
                    "title": f"Entropy collapses in run {n}", "author": "alice",
                    "body": "The entropy falls to zero after step 40. " * (body_chars // 41)})
                await set_verdict(session, thread, is_failure_report=True,
                                  category="entropy_collapse", login="alice", role="author",
                                  comment_id=None)
    finally:
        await ctx.close()


def _file_size_limit(limit: int) -> object:
    """A child's preexec: files it writes may not grow past `limit` bytes (RLIMIT_FSIZE; Python
    ignores SIGXFSZ, so the write past it fails with EFBIG, as on a full disk or a quota)."""
    import resource

    return lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def test_verdicts_export_out_file_is_replaced_whole_or_kept(tmp_path: Path, db_url: str) -> None:
    """`rltracker verdicts export --out verdicts.jsonl`, the file the fitting reads
    (`python -m training --extra FILE`), was opened in place: emptied first, then written. A
    write that failed part way (here a size limit; a full disk, a quota) left the previous
    export lost and half a line at the end of the new one, and the OSError, naming no file, was
    a traceback as a bug. The export is written beside the file and replaces it when whole; on
    a failure the previous file is as it was, nothing is left beside it, and one line names
    the file, exit 2."""
    asyncio.run(_verdicts_on_long_threads(db_url, count=8, body_chars=60_000))
    out = tmp_path / "verdicts.jsonl"
    out.write_text('{"previous": "export"}\n', encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "bot.cli", "verdicts", "export", "--out", str(out)],
        env={**CLEAN_ENV, "DATABASE_URL": db_url}, capture_output=True, text=True,
        timeout=HANG_GUARD, preexec_fn=_file_size_limit(256 * 1024))
    one_line(result, "verdicts export", 2, str(out), "File too large")
    assert out.read_text(encoding="utf-8") == '{"previous": "export"}\n'
    assert [p.name for p in tmp_path.iterdir() if "verdicts" in p.name] == ["verdicts.jsonl"]
    # without the limit the export replaces it whole
    result = subprocess.run(
        [sys.executable, "-m", "bot.cli", "verdicts", "export", "--out", str(out)],
        env={**CLEAN_ENV, "DATABASE_URL": db_url}, capture_output=True, text=True, timeout=HANG_GUARD)
    assert result.returncode == 0, result.stderr
    assert [json.loads(line)["number"] for line in out.read_text(encoding="utf-8").splitlines()] == \
        list(range(1, 9))


def test_a_utf16_input_is_refused_naming_its_encoding(tmp_path: Path) -> None:
    """Windows PowerShell 5 writes `>` and Out-File as UTF-16 with a byte-order mark. Such an
    input was read as UTF-8 with replacement: every record an error record 'not valid JSON
    (Expecting value at column 1)', one more error record than records (the last line feed's
    second byte), exit 1, and `-o FILE` replaced by them; a pool the same, exit 2 'not valid
    JSON'. The records are UTF-8 (the contract), and no line of such a file can be read: one
    line says the file is UTF-16 and how to convert it, exit 2, `-o FILE` as it was."""
    records = "".join(json.dumps(r) + "\r\n" for r in (GOOD_1, GOOD_2))
    out = tmp_path / "out.jsonl"
    out.write_text('{"previous": "output"}\n', encoding="utf-8")
    for encoding, name in (("utf-16", "UTF-16"), ("utf-32", "UTF-32")):
        src = tmp_path / f"in-{encoding}.jsonl"
        src.write_bytes(records.encode(encoding))  # with its byte-order mark, as PowerShell writes
        result = text(rltracker("analyze", str(src), "-o", str(out)))
        one_line(result, "analyze", 2, str(src), name, "UTF-8", "iconv")
        result = text(rltracker("analyze", "-", stdin=src.read_bytes()))
        one_line(result, "analyze", 2, "<stdin>", name, "UTF-8")
        assert result.stdout == ""
        result = text(rltracker("analyze", "--papers", str(src), str(tmp_path / "in-utf-16.jsonl")))
        one_line(result, "analyze", 2, f"--papers {src}", name, "UTF-8")
    assert out.read_text(encoding="utf-8") == '{"previous": "output"}\n'
    # a UTF-8 byte-order mark is still read (tests/test_analyze_command.py)
    src = tmp_path / "in-utf8-bom.jsonl"
    src.write_bytes(records.encode("utf-8-sig"))
    assert rltracker("analyze", str(src), "-o", str(out)).returncode == 0
    assert [r["id"] for r in read_jsonl(out)] == ["o/r#1", "o/r#2"]


# ------------------------------------------------------------------ names people type
def test_an_unknown_framework_is_a_bad_argument_with_a_suggestion(tmp_path: Path, db_url: str) -> None:
    """`rltracker rules verll` (a typo) or `rules huggingface/trl` (the repository, not the
    framework) exited 1, the status of a failure while running, where a bad argument is 2
    (README "When something is wrong"; `verdicts wanted --framework nope` is 2), and listed
    the seven names without saying which was meant. `verdicts wanted --framework VERL` was
    refused where `rules VERL` is read as verl. Both read a framework in any spelling the
    pages accept, refuse an unknown one with exit 2 and say which one was probably meant."""
    env = {"DATABASE_URL": db_url, "GITHUB_API_URL": "http://127.0.0.1:9"}
    for typed, meant in (("verll", "verl"), ("huggingface/trl", "trl"), ("volcengine/verl", "verl"),
                         ("openrhlf", "openrlhf")):
        one_line(text(rltracker("rules", typed, env=env)), "rules", 2,
                 f"unknown framework or folder: {typed}", f"did you mean {meant}?")
        one_line(text(rltracker("verdicts", "wanted", "--framework", typed, env=env)),
                 "verdicts wanted", 2, f"unknown framework '{typed}'", f"did you mean {meant}?")
    line = one_line(text(rltracker("rules", "zzz", env=env)), "rules", 2,
                    "unknown framework or folder: zzz", "verl, trl")
    assert "did you mean" not in line
    one_line(text(rltracker("rules", "", env=env)), "rules", 2, "no framework or folder given")
    for typed in ("VERL", "NeMo_RL"):
        result = text(rltracker("verdicts", "wanted", "--framework", typed, env=env))
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith("Where a verdict would teach")


def test_an_empty_path_is_refused_not_read_as_no_path(tmp_path: Path, db_url: str) -> None:
    """`--papers "$POOL"`, `-o "$OUT"`, `--out "$DIR"` with the variable unset: analyze ran
    without the pool (exit 0, nothing said: the papers it would match were silently missing),
    wrote to stdout instead of a file, and `report --out ""` wrote no file at all, exit 0.
    An empty path is a bad argument: one line naming the option, exit 2, nothing written."""
    src = write_lines(tmp_path / "in.jsonl", [json.dumps(GOOD_1)])
    env = {"DATABASE_URL": db_url}
    for args, option in ((["analyze", "--papers", "", str(src)], "--papers"),
                         (["analyze", str(src), "-o", ""], "-o/--output"),
                         (["analyze", " "], "INPUT"),
                         (["report", "--out", ""], "--out"),
                         (["verdicts", "export", "--out", ""], "--out")):
        result = text(rltracker(*args, env=env))
        assert result.returncode == 2, (args, result.stderr)
        assert result.stdout == "" and "Traceback" not in result.stderr
        [line] = result.stderr.splitlines()
        assert line.startswith(f"rltracker {args[0]}") and option in line and "empty" in line, line


def test_a_run_stopped_by_sigterm_leaves_no_partial_file_beside_the_output(tmp_path: Path) -> None:
    """`timeout 60 rltracker analyze big.jsonl -o out.jsonl`, `kill`, a container stopped:
    SIGTERM ended the process where it stood, and the records written so far stayed beside
    the output as a hidden `.out.jsonl.<hex>.tmp` (a megabyte per second of analysis; one
    more per run stopped). out.jsonl was kept, as it should be. Now the partial file is
    removed before the process ends, still by SIGTERM as it was asked to."""
    import os
    import signal
    import time

    src = write_lines(tmp_path / "in.jsonl", [json.dumps(dict(GOOD_1, id=f"o/r#{n}"))
                                              for n in range(50_000)])
    out = tmp_path / "out.jsonl"
    out.write_text('{"previous": "output"}\n', encoding="utf-8")
    proc = subprocess.Popen([sys.executable, "-m", "bot.cli", "analyze", str(src), "-o", str(out),
                             "--jobs", "1"], env=CLEAN_ENV, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + HANG_GUARD  # a hang guard: the file appears within seconds
        while not any(p.name.endswith(".tmp") and p.stat().st_size > 0 for p in tmp_path.iterdir()):
            assert proc.poll() is None and time.monotonic() < deadline, "no partial file seen"
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=HANG_GUARD)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stderr.close()  # type: ignore[union-attr]
    assert proc.returncode == -signal.SIGTERM
    assert out.read_text(encoding="utf-8") == '{"previous": "output"}\n'
    assert sorted(os.listdir(tmp_path)) == ["in.jsonl", "out.jsonl"]


def test_deliveries_lists_stored_errors_without_terminal_control_characters(db_url: str) -> None:
    """A delivery's stored error is its exception's text (`TypeError: ...`, a database error
    quoting the value it refused, GitHub's message), which can hold text from the payload:
    `rltracker deliveries` printed it as it was on the operator's terminal, so an escape
    sequence in it (clear the screen, retitle the window, hide the rest of the line) reached
    the terminal (review29 left it). What the listing prints is one printable line per
    delivery; `--json` keeps the text as stored (JSON escapes it)."""
    from datetime import timedelta

    from bot.config import Settings
    from bot.context import AppContext
    from bot.store.models import Delivery
    from bot.store.types import utcnow

    hostile = "DataError: invalid input \x1b]0;owned\x07\x1b[2Jvalue \u202e'x'\r\x1b[8m"

    async def seed() -> None:
        ctx = AppContext.create(Settings.from_env({}, database_url=db_url))
        try:
            async with ctx.sessionmaker() as session, session.begin():
                session.add(Delivery(delivery_id="d-failed", event="issues", action="opened\x1b[5m",
                                     repo="o/r", payload="{}", status="failed", attempts=7,
                                     last_error=hostile + "\nTraceback ...", finished_at=utcnow()))
                session.add(Delivery(delivery_id="d-waiting", event="issues", action="edited",
                                     repo="o/r", payload="{}", status="pending", attempts=2,
                                     last_error=hostile, next_attempt_at=utcnow() + timedelta(hours=1)))
        finally:
            await ctx.close()

    asyncio.run(seed())
    result = text(rltracker("deliveries", env={"DATABASE_URL": db_url}))
    assert result.returncode == 0, result.stderr
    listed = [line for line in result.stdout.splitlines() if line.startswith("d-")]
    assert [line.split("\t")[0] for line in listed] == ["d-failed", "d-waiting"]
    for line in listed:
        assert all(ch.isprintable() or ch == "\t" for ch in line), repr(line)
        assert "DataError: invalid input" in line and "value" in line
    data = json.loads(text(rltracker("deliveries", "--json", env={"DATABASE_URL": db_url})).stdout)
    assert data["deliveries"][0]["error"] == hostile


def test_a_count_too_large_is_a_bad_argument_not_a_crash(tmp_path: Path, db_url: str) -> None:
    """`deliveries --limit 99999999999999999999` (a key held down) reached the database: an
    OverflowError (SQLite) or DBAPIError (PostgreSQL) traceback reported as a bug;
    `analyze --jobs 99999999999999999999` an OverflowError traceback. A count past what the
    option can take is a usage error naming the option and its range, exit 2."""
    src = write_lines(tmp_path / "in.jsonl", [json.dumps(GOOD_1)])
    huge = "9" * 20
    for args, option in ((["deliveries", "--limit", huge], "--limit"),
                         (["deliveries", "--limit", str(2 ** 63)], "--limit"),
                         (["analyze", str(src), "--jobs", huge], "--jobs")):
        result = text(rltracker(*args, env={"DATABASE_URL": db_url}))
        assert result.returncode == 2, (args, result.stderr)
        assert result.stdout == "" and "Traceback" not in result.stderr
        [line] = result.stderr.splitlines()
        assert line.startswith(f"rltracker {args[0]}: argument {option}") and "from 0 to" in line, line
    result = text(rltracker("deliveries", "--limit", "1000000", env={"DATABASE_URL": db_url}))
    assert result.returncode == 0 and result.stdout == "failed deliveries: 0\n", result.stderr


def _without_file_permission_override() -> list[str]:
    """The command prefix that runs a child without CAP_DAC_OVERRIDE (root ignores a folder's
    mode otherwise), or [] when this process is not root; skips where that cannot be done."""
    import os
    import shutil

    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: a read-only folder cannot be shown")
    return [setpriv, "--inh-caps=-all", "--bounding-set=-dac_override,-dac_read_search", "--"]


def test_report_out_folder_that_cannot_be_written_is_refused_before_the_report_is_built(
        tmp_path: Path, db_url: str) -> None:
    """`rltracker report --out /srv/reports` (cron) where the folder may not be written: the
    command made sure the folder exists before building, then built and stored the night's
    report, and only then failed writing report-DATE.md (exit 2), before posting it: the
    night's report stored, not written, not posted. A folder that cannot be written is refused
    before anything is built or stored, as a missing one is made: one line naming --out, exit 2."""
    import os

    out = tmp_path / "reports"
    out.mkdir()
    out.chmod(0o555)
    try:
        result = subprocess.run(
            [*_without_file_permission_override(), sys.executable, "-m", "bot.cli", "report",
             "--out", str(out)], env={**CLEAN_ENV, "DATABASE_URL": db_url},
            capture_output=True, text=True, timeout=HANG_GUARD)
    finally:
        out.chmod(0o755)
    one_line(result, "report", 2, "--out", str(out), "cannot be written")
    assert result.stdout == "" and os.listdir(out) == []
    assert asyncio.run(_reports_stored(db_url)) == 0


async def _reports_stored(db_url: str) -> int:
    from sqlalchemy import func, select

    from bot.config import Settings
    from bot.context import AppContext
    from bot.store.models import Report

    ctx = AppContext.create(Settings.from_env({}, database_url=db_url))
    try:
        async with ctx.sessionmaker() as session:
            return int(await session.scalar(select(func.count()).select_from(Report)) or 0)
    finally:
        await ctx.close()


def test_sigterm_to_one_worker_is_a_worker_that_died_not_the_run_stopped(tmp_path: Path) -> None:
    """The SIGTERM handler that removes the file being written beside `-o FILE` is the parent
    process's: a --jobs worker sent SIGTERM alone (an operator's `kill`) still dies as a
    worker, 'a worker process died', exit 2, FILE as it was, nothing left beside it (a guard:
    inherited through fork, the handler made it end the whole run by SIGTERM)."""
    import os
    import signal
    import time

    from tests.test_analyze_command import _worker_pids

    src = write_lines(tmp_path / "in.jsonl", [json.dumps(dict(GOOD_1, id=f"o/r#{n}"))
                                              for n in range(50_000)])
    out = tmp_path / "out.jsonl"
    out.write_text('{"previous": "output"}\n', encoding="utf-8")
    proc = subprocess.Popen([sys.executable, "-m", "bot.cli", "analyze", str(src), "-o", str(out),
                             "--jobs", "2"], env=CLEAN_ENV, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + HANG_GUARD  # waiting for the workers, not timing them
        while len(workers := _worker_pids(proc.pid)) < 2:
            assert proc.poll() is None and time.monotonic() < deadline, "no workers seen"
            time.sleep(0.05)
        os.kill(workers[0], signal.SIGTERM)
        _, err = proc.communicate(timeout=HANG_GUARD)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 2, err
    [line] = err.splitlines()
    assert line.startswith("rltracker analyze: a worker process died")
    assert out.read_text(encoding="utf-8") == '{"previous": "output"}\n'
    assert sorted(os.listdir(tmp_path)) == ["in.jsonl", "out.jsonl"]


def test_rules_text_output_neutralises_direction_controls_quoted_from_files(tmp_path: Path) -> None:
    """`rltracker rules FOLDER` replaced C0/C1 controls of the summary but printed Unicode
    direction controls quoted from a repository's files (a command in a code span) as they
    were: an override or isolate can reorder what the operator reads on the terminal. The
    text output prints them as spaces (bot.cli.printable, as `deliveries` does); `--json`
    keeps the text as it is."""
    bidi = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "CONTRIBUTING.md").write_text(
        "# Contributing\n\nBefore you open a pull request, run "
        f"`pytest tests/{bidi}x` and `ruff check .`.\n", encoding="utf-8")
    result = text(rltracker("rules", str(repo)))
    assert result.returncode == 0, result.stderr
    assert "pytest tests/" in result.stdout
    assert not set(bidi) & set(result.stdout), [hex(ord(c)) for c in set(bidi) & set(result.stdout)]
    assert "\n" in result.stdout  # lines kept
    raw = rltracker("rules", str(repo), "--json")
    assert raw.returncode == 0
    facts = json.loads(raw.stdout.decode("utf-8"))["facts"]
    assert any(set(bidi) <= set(json.dumps(f, ensure_ascii=False)) for f in facts)


def test_analyze_file_errors_name_the_option_and_path_in_one_plain_line(tmp_path: Path) -> None:
    """`analyze` said a file failed in Python's words (`[Errno 2] No such file or directory:
    'x'`, `[Errno 21] Is a directory: 'd'`) without saying whether INPUT, `-o` or `--papers`
    was meant (`analyze d` and `analyze in -o d` read the same). One plain line names the
    option and the path and says what is wrong, exit 2 (README, "When something is wrong")."""
    good = tmp_path / "in.jsonl"
    write_lines(good, [json.dumps(GOOD_1)])
    folder = tmp_path / "folder"
    folder.mkdir()
    missing, out = tmp_path / "missing.jsonl", tmp_path / "out.jsonl"
    cases = [
        (("analyze", str(missing)), f"INPUT {missing}: no such file"),
        (("analyze", str(folder)), f"INPUT {folder}: is a folder"),
        (("analyze", str(good), "-o", str(folder)), f"-o {folder}: is a folder"),
        (("analyze", str(good), "-o", str(tmp_path / "nope" / "x")),
         f"-o {tmp_path / 'nope' / 'x'}: no such file"),
        (("analyze", str(good), "--papers", str(missing)), f"--papers {missing}: no such file"),
        (("analyze", str(good), "--papers", str(folder)), f"--papers {folder}: is a folder"),
        (("analyze", str(good), "-o", "/dev/full"), "-o /dev/full: No space left on device"),
    ]
    for args, said in cases:
        line = one_line(text(rltracker(*args)), "analyze", 2, said)
        assert "Errno" not in line and "'" not in line, line
    assert not out.exists()
    locked = tmp_path / "locked.jsonl"
    write_lines(locked, [json.dumps(GOOD_1)])
    locked.chmod(0o000)
    prefix = _without_file_permission_override()
    result = subprocess.run([*prefix, sys.executable, "-m", "bot.cli", "analyze", str(locked)],
                            env=CLEAN_ENV, capture_output=True, text=True, timeout=HANG_GUARD)
    line = one_line(result, "analyze", 2, f"INPUT {locked}: permission denied")
    assert "Errno" not in line, line


async def _paused_repository(db_url: str, full_name: str) -> None:
    from bot.config import Settings
    from bot.context import AppContext
    from bot.store.models import Repository

    ctx = AppContext.create(Settings.from_env({}, database_url=db_url))
    try:
        async with ctx.sessionmaker() as session, session.begin():
            session.add(Repository(full_name=full_name, comments_paused=True,
                                   paused_reason="comments hidden by maintainers"))
    finally:
        await ctx.close()


def test_repos_resume_names_the_repository_as_stored_once(db_url: str) -> None:
    """`repos resume foo-org/bar` for the stored `Foo-Org/Bar` answered with the name as typed
    (`comments in foo-org/bar resumed`), and the reception module's log line said it again on
    stderr (`reception: comments in Foo-Org/Bar resumed by operator ...`). The answer names
    the repository as stored, once: stdout when it was resumed, one stderr line when it was
    not paused, prefixed `rltracker repos resume:` as every other message of the command is
    (it had no prefix; user72 named the subcommand)."""
    asyncio.run(_paused_repository(db_url, "Foo-Org/Bar"))
    env = {"DATABASE_URL": db_url}
    result = text(rltracker("repos", "resume", "foo-org/bar", env=env))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("comments in Foo-Org/Bar resumed (they were paused: "
                                    "comments hidden by maintainers)"), result.stdout
    assert len(result.stdout.splitlines()) == 1
    assert result.stderr == "", result.stderr
    again = text(rltracker("repos", "resume", "FOO-ORG/BAR", env=env))
    assert again.returncode == 0 and again.stdout == ""
    assert again.stderr == ("rltracker repos resume: comments in Foo-Org/Bar are not paused; "
                            "nothing to resume\n")


# ------------------------------------------------------------------ a command without its subcommand
@pytest.mark.parametrize(("args", "choices"), [
    ((), "{serve,migrate,analyze,replay,sync,report,rules,stats,papers,preview,deliveries,"
         "verdicts,repos,study}"),
    (("papers",), "{import,fetch}"),
    (("verdicts",), "{export,wanted}"),
])
def test_a_missing_subcommand_names_the_ones_there_are(args: tuple[str, ...], choices: str) -> None:
    """`rltracker papers` alone said "the following arguments are required: papers_command":
    the parser's internal name for the slot, which is no word the help uses nor one a person
    could type. The line names the subcommands, as the usage line shows them."""
    line = one_line(text(rltracker(*args)), " ".join(args), 2) if args else \
        text(rltracker()).stderr.strip()
    assert "_command" not in line and ": command " not in line, line
    assert f"required: {choices} " in line, line


# ------------------------------------------------------------------ a subcommand's unknown flag
@pytest.mark.parametrize("args", [("stats", "--jsn"), ("repos", "resume", "a/b", "--force"),
                                  ("deliveries", "retry", "--everything")])
def test_an_unknown_flag_is_said_as_the_subcommands(args: tuple[str, ...]) -> None:
    """user79: `rltracker stats --jsn` said "rltracker: unrecognized arguments: --jsn (see
    `rltracker --help`)": the top command's help, which lists none of stats' flags. Failed on
    main; the line now names the subcommand and its help."""
    *command, flag = args
    name = " ".join(command[:2] if command[0] in ("repos", "deliveries") else command[:1])
    line = one_line(text(rltracker(*args)), name, 2)
    assert line == (f"rltracker {name}: unrecognized arguments: {flag} "
                    f"(see `rltracker {name} --help`)"), line


# ------------------------------------------------------------------ a subcommand's messages
@pytest.mark.parametrize(("args", "prefix"), [
    (("repos", "resume", "nobody/nothing"), "rltracker repos resume: nobody/nothing is not a"),
    (("papers", "import", "/nonexistent/papers.jsonl"), "rltracker papers import: "),
    (("verdicts", "export", "--out", "/nonexistent/dir/v.jsonl"), "rltracker verdicts export: "),
])
def test_a_subcommands_failure_names_the_subcommand(db_url: str, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str],
                                                    args: tuple[str, ...], prefix: str) -> None:
    """user72: a failure of `repos resume`, `papers import` or `verdicts export` was said as
    the parent command's (`rltracker repos: ...`), while their usage errors and their own
    messages name the subcommand as argparse's prog does (`rltracker repos resume: ...`)."""
    from bot.cli import main

    monkeypatch.setenv("DATABASE_URL", db_url)
    assert main(list(args)) in (1, 2)
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(prefix), line
