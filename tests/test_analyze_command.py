"""`rltracker analyze`: JSON lines in, analysis lines out, same order; bad lines reported."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bot.cli import main

GOOD_1 = {"id": "o/r#1", "repo": "o/r", "number": 1, "kind": "issue", "state": "open",
          "title": "Entropy collapses after 40 steps",
          "body": "During training the entropy drops to zero.", "comments": []}
GOOD_2 = {"id": "o/r#2", "repo": "o/r", "number": 2, "kind": "pull_request", "state": "open",
          "title": "feat: add a toy loss", "body": None, "comments": []}  # fmt: skip


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def test_files_in_and_out_same_order(tmp_path: Path) -> None:
    src = write_lines(tmp_path / "in.jsonl", [json.dumps(GOOD_1), "", json.dumps(GOOD_2)])
    out = tmp_path / "out.jsonl"
    assert main(["analyze", str(src), "-o", str(out)]) == 0
    rows = read_jsonl(out)
    assert [r["id"] for r in rows] == ["o/r#1", "o/r#2"]
    assert rows[0]["failure"]["category"] == "entropy_collapse"
    assert all("error" not in r for r in rows)


def test_files_saved_by_windows_tools_are_read(tmp_path: Path) -> None:
    """A UTF-8 byte-order mark and CRLF line ends (Notepad, PowerShell's Out-File) are not part
    of any record: the first thread and the pool's first paper are read like the others."""
    bom_crlf = "\ufeff" + "\r\n".join([json.dumps(GOOD_1), "", json.dumps(GOOD_2)]) + "\r\n"
    src = tmp_path / "in.jsonl"
    src.write_text(bom_crlf, encoding="utf-8", newline="")
    pool = tmp_path / "pool.jsonl"
    pool.write_text("\ufeff" + json.dumps(
        {"arxiv_id": "2512.99001", "title": "Frobnicated Widget Policy Optimization for Teapots",
         "aliases": [], "method": None, "first_public": None}) + "\r\n", encoding="utf-8", newline="")
    t = dict(GOOD_1, body='We implement "Frobnicated Widget Policy Optimization for Teapots".')
    src2 = tmp_path / "in2.jsonl"
    src2.write_text("\ufeff" + json.dumps(t) + "\r\n", encoding="utf-8", newline="")
    out = tmp_path / "out.jsonl"
    assert main(["analyze", str(src), "-o", str(out)]) == 0
    assert [r["id"] for r in read_jsonl(out)] == ["o/r#1", "o/r#2"]
    assert main(["analyze", "--papers", str(pool), str(src2), "-o", str(out)]) == 0
    assert any(p["arxiv_id"] == "2512.99001" for p in read_jsonl(out)[0]["papers"])


def test_bad_lines_get_error_records_and_nothing_is_lost(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = write_lines(
        tmp_path / "in.jsonl",
        [json.dumps(GOOD_1), "{not json", "[1, 2]", json.dumps(GOOD_2)],
    )
    out = tmp_path / "out.jsonl"
    assert main(["analyze", str(src), "-o", str(out)]) == 1
    rows = read_jsonl(out)
    assert [r.get("id") for r in rows] == ["o/r#1", None, None, "o/r#2"]
    assert rows[1]["line"] == 2 and rows[1]["error"].startswith("line 2: not valid JSON")
    assert rows[2]["line"] == 3 and "JSON object" in rows[2]["error"]
    err = capsys.readouterr().err
    assert "line 2" in err and "line 3" in err


def test_objects_that_are_not_contract_threads_get_error_records(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """JSON objects missing the contract's required keys, or with a key of the wrong type, are
    bad lines like non-JSON ones: an error record naming the line and the key, the message on
    stderr, the other lines analysed, exit 1."""
    bad = [
        {"title": "Entropy collapses", "body": "it drops"},  # no id, repo, number, ...
        dict(GOOD_1, comments="none"),
        dict(GOOD_1, body=["During training"]),
        dict(GOOD_1, number="1"),
        dict(GOOD_1, kind="pr"),
        dict(GOOD_1, comments=[{"author": "a", "created_at": None, "body": 7}]),
        dict(GOOD_1, comments=["a comment"]),
        {k: v for k, v in GOOD_1.items() if k != "comments"},
    ]
    src = write_lines(tmp_path / "in.jsonl",
                      [json.dumps(GOOD_1)] + [json.dumps(b) for b in bad] + [json.dumps(GOOD_2)])
    out = tmp_path / "out.jsonl"
    assert main(["analyze", str(src), "-o", str(out)]) == 1
    rows = read_jsonl(out)
    assert len(rows) == len(bad) + 2
    assert rows[0]["id"] == "o/r#1" and "error" not in rows[0]
    assert rows[-1]["id"] == "o/r#2" and "error" not in rows[-1]
    errors = [r["error"] for r in rows[1:-1]]
    assert [r["line"] for r in rows[1:-1]] == list(range(2, len(bad) + 2))
    assert [r["id"] for r in rows[1:-1]] == [None] + ["o/r#1"] * (len(bad) - 1)
    assert errors == [
        "line 2: missing required keys id, repo, number, kind, state, comments",
        'line 3: comments must be a list (may be empty), got "none"',
        "line 4: body must be a string or null, got a list",
        'line 5: number must be an integer, got "1"',
        'line 6: kind must be one of issue, pull_request, discussion, got "pr"',
        "line 7: comment 1: body must be a string, got the number 7",
        'line 8: comment 1 must be an object, got "a comment"',
        "line 9: missing required key comments",
    ]
    err = capsys.readouterr().err
    assert all(f"rltracker analyze: {e}" in err for e in errors)


def test_optional_keys_absent_or_null_and_unknown_keys_are_accepted(tmp_path: Path) -> None:
    """Only what the contract requires is required: optional keys may be absent or null where
    it allows (a comment's author and time too), unknown keys are ignored, and `labels` holding something else than a list of
    strings (the evaluation threads keep their gold labels there) is not refused."""
    t = dict(GOOD_1, author=None, state_reason=None, closed_at=None, extra={"x": [1]},
             labels={"is_failure_report": True},
             comments=[{"author": None, "created_at": "2025-01-02", "body": "same here"},
                       {"body": "a comment whose author and time are not known"}])
    src = write_lines(tmp_path / "in.jsonl", [json.dumps(t)])
    out = tmp_path / "out.jsonl"
    assert main(["analyze", str(src), "-o", str(out)]) == 0
    assert read_jsonl(out)[0]["id"] == "o/r#1"


def test_every_json_line_is_analysed_or_refused_by_the_contract_check() -> None:
    """Whatever JSON value a line holds, the command answers with an analysis or an error
    record naming the line, never a traceback, and never by an analyzer failing on a shape
    the contract check let through ("analysis failed")."""
    import io

    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from bot.cli.analyze import analyze_lines, thread_problem

    scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
    values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                          | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=8)
    text = st.text(max_size=60)
    null_or_text = st.none() | text
    comment = st.fixed_dictionaries(
        {"body": text},
        optional={"author": null_or_text, "created_at": null_or_text, "author_association": null_or_text, "author_is_bot": st.booleans(),
                  "kind": st.sampled_from(["comment", "review", "review_comment"]),
                  "unknown": values})
    # Contract threads with any texts, optional and unknown keys, and any `labels`...
    thread = st.fixed_dictionaries(
        {"id": text, "repo": text, "number": st.integers(),
         "kind": st.sampled_from(["issue", "pull_request", "discussion"]), "title": text,
         "body": null_or_text, "state": st.sampled_from(["open", "closed", "merged"]),
         "comments": st.lists(comment, max_size=3)},
        optional={"author": null_or_text, "author_is_bot": st.booleans(), "labels": values,
                  "created_at": null_or_text, "closed_at": null_or_text, "complete": st.booleans(),
                  "state_reason": null_or_text, "url": text, "unknown": values})
    # ...and the same with one key (of the thread or of its first comment) removed or set to
    # any JSON value.
    removed = object()

    def changed(t: dict, key: str, value: object, in_comment: bool) -> dict:
        target = dict(t["comments"][0]) if in_comment and t["comments"] else t
        if value is removed:
            target.pop(key, None)
        else:
            target[key] = value
        if target is t:
            return t
        return dict(t, comments=[target, *t["comments"][1:]])

    mutated = st.builds(
        changed, thread.map(dict),
        st.sampled_from(["id", "repo", "number", "kind", "title", "body", "state", "comments",
                         "author", "created_at", "author_is_bot", "complete", "url"]),
        values | st.just(removed), st.booleans())

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.lists(thread | mutated | values, min_size=1, max_size=3))
    def check(records: list) -> None:
        out, err = io.StringIO(), io.StringIO()
        lines = [json.dumps(r) + "\n" for r in records]
        written, bad = analyze_lines(lines, out, None, err)
        # Split on "\n" only: a record may hold U+0085 or U+2028, which str.splitlines splits on.
        rows = [json.loads(x) for x in out.getvalue().split("\n")[:-1]]
        assert written == len(rows) == len(records)
        for number, (record, row) in enumerate(zip(records, rows, strict=True), 1):
            if "error" in row:
                assert row["line"] == number and row["error"].startswith(f"line {number}: ")
                assert "analysis failed" not in row["error"]
            else:
                assert isinstance(record, dict) and row["id"] == record["id"]
            if isinstance(record, dict) and thread_problem(record) is None:
                assert "error" not in row, row  # a contract thread is always analysed
        assert bad == sum("error" in r for r in rows) == err.getvalue().count("\n")

    check()


def test_papers_pool_is_used(tmp_path: Path) -> None:
    pool = write_lines(tmp_path / "pool.jsonl", [json.dumps(
        {"arxiv_id": "2512.99001", "title": "Frobnicated Widget Policy Optimization for Teapots",
         "aliases": [], "method": None, "first_public": None})])  # fmt: skip
    t = dict(GOOD_2, body='We implement "Frobnicated Widget Policy Optimization for Teapots".')
    src = write_lines(tmp_path / "in.jsonl", [json.dumps(t)])
    out = tmp_path / "out.jsonl"
    assert main(["analyze", "--papers", str(pool), str(src), "-o", str(out)]) == 0
    papers = read_jsonl(out)[0]["papers"]
    assert any(p["arxiv_id"] == "2512.99001" for p in papers)


def test_a_pool_paper_with_null_aliases_is_read_as_papers_import_reads_it(
        db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """`"aliases": null` (no aliases, as a null `method` or `first_public` says not known):
    `rltracker papers import` stored the paper, `rltracker analyze --papers` refused the whole
    pool (exit 2, "aliases must be a list of strings, got null")."""
    paper = {"arxiv_id": "2412.99001", "title": "Frobnicated Widget Policy Optimization for Teapots",
             "aliases": None, "method": None, "first_public": None}
    pool = write_lines(tmp_path / "pool.jsonl", [json.dumps(paper)])
    monkeypatch.setenv("DATABASE_URL", db_url)
    assert main(["papers", "import", str(pool)]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["added"] == 1
    t = dict(GOOD_2, body='We implement "Frobnicated Widget Policy Optimization for Teapots".')
    src = write_lines(tmp_path / "in.jsonl", [json.dumps(t)])
    out = tmp_path / "out.jsonl"
    assert main(["analyze", "--papers", str(pool), str(src), "-o", str(out)]) == 0, \
        capsys.readouterr().err
    assert any(p["arxiv_id"] == "2412.99001" for p in read_jsonl(out)[0]["papers"])


def test_a_thread_file_given_as_the_pool_is_refused_in_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The threads file passed as `--papers` too (`analyze --papers in.jsonl in.jsonl`): each
    thread record has a title, so it was indexed as a paper of that title, silently (exit 0,
    the threads' own titles linked as papers). Refused: exit 2, one line naming the file and
    what its lines are."""
    src = write_lines(tmp_path / "in.jsonl", [json.dumps(GOOD_1), json.dumps(GOOD_2)])
    out = tmp_path / "out.jsonl"
    assert main(["analyze", "--papers", str(src), str(src), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(src) in err and "thread record" in err, err
    assert not out.exists()


def test_bad_pool_exits_2_naming_the_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pool = write_lines(tmp_path / "pool.jsonl", [json.dumps({"title": "ok"}), "nope"])
    src = write_lines(tmp_path / "in.jsonl", [json.dumps(GOOD_1)])
    assert main(["analyze", "--papers", str(pool), str(src), "-o", str(tmp_path / "o")]) == 2
    assert "line 2" in capsys.readouterr().err


@pytest.mark.parametrize(("paper", "problem"), [
    ({"title": "Frobnicated Widget Policy Optimization", "method": ["m"]},
     "method must be a string or null, got a list"),
    ({"title": "Frobnicated Widget Policy Optimization", "arxiv_id": 5},
     "arxiv_id must be a string or null, got the number 5"),
    ({"title": "Frobnicated Widget Policy Optimization", "aliases": "FWPO"},
     'aliases must be a list of strings, got "FWPO"'),
    ({"title": ["Frobnicated"], "arxiv_id": "2512.99001"}, "title must be a string or null, got a list"),
    ({"title": "Frobnicated Widget Policy Optimization", "first_public": 2020},
     "first_public must be a string or null, got the number 2020"),
])
def test_pool_paper_of_the_wrong_types_exits_2_naming_line_and_key(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], paper: dict, problem: str) -> None:
    """A pool paper with a key of another type than the contract's was indexed as it was and
    came out in the analysis records: `"arxiv_id": "5"`, `"method": ["m"]`, exit 0."""
    pool = write_lines(tmp_path / "pool.jsonl", [json.dumps({"title": "fine"}), json.dumps(paper)])
    t = dict(GOOD_2, body='We implement "Frobnicated Widget Policy Optimization".')
    src = write_lines(tmp_path / "in.jsonl", [json.dumps(t)])
    out = tmp_path / "out.jsonl"
    assert main(["analyze", "--papers", str(pool), str(src), "-o", str(out)]) == 2
    assert capsys.readouterr().err == f"rltracker analyze: --papers {pool} line 2: {problem}\n"
    assert not out.exists() or out.read_text(encoding="utf-8") == ""


def test_missing_input_exits_2(tmp_path: Path) -> None:
    assert main(["analyze", str(tmp_path / "absent.jsonl")]) == 2


def test_stdin_to_stdout() -> None:
    data = json.dumps(GOOD_1) + "\n" + json.dumps(GOOD_2) + "\n"
    proc = subprocess.run(
        [sys.executable, "-m", "bot.cli", "analyze", "-"], input=data, capture_output=True,
        text=True, timeout=120, cwd=Path(__file__).resolve().parent.parent,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(x) for x in proc.stdout.splitlines()]
    assert [r["id"] for r in rows] == ["o/r#1", "o/r#2"]


# ---- the pool's index, saved in the cache directory ---------------------------------------
POOL_LINES = [
    {"arxiv_id": "2611.00001", "title": "Quantile Ratio Clipping for Stable Policy Optimisation",
     "aliases": ["QRC"], "method": None},
    {"arxiv_id": None, "title": "Grouped Verifier Rewards for Sparse Proof Search", "aliases": [],
     "method": None},
]  # fmt: skip
CITING = {"id": "o/r#3", "repo": "o/r", "number": 3, "kind": "issue", "state": "open",
          "title": "Support QRC", "comments": [],
          "body": 'Could you add "Grouped Verifier Rewards for Sparse Proof Search"?'}  # fmt: skip


def _saved_files(cache: Path) -> list[Path]:
    return sorted(cache.glob("pool-file-*.idx"))


def test_pool_index_is_saved_then_read_back_equal(tmp_path: Path, _cache_dir: Path) -> None:
    from bot.analysis import read_saved_index
    from bot.cli.analyze import POOL_CHECKS_HEADER, load_pool

    pool = write_lines(tmp_path / "pool.jsonl", [json.dumps(p) for p in POOL_LINES])
    built = load_pool(str(pool))
    [saved] = _saved_files(_cache_dir)
    assert read_saved_index(saved, POOL_CHECKS_HEADER) == built
    again = load_pool(str(pool))
    assert again == built and again is not built
    # Another pool file is another key.
    write_lines(pool, [json.dumps(POOL_LINES[0])])
    assert len(load_pool(str(pool))) < len(built)
    assert len(_saved_files(_cache_dir)) == 2


def test_damaged_saved_index_is_rebuilt_and_saved_again(tmp_path: Path, _cache_dir: Path) -> None:
    from bot.analysis import read_saved_index
    from bot.cli.analyze import POOL_CHECKS_HEADER, load_pool

    pool = write_lines(tmp_path / "pool.jsonl", [json.dumps(p) for p in POOL_LINES])
    built = load_pool(str(pool))
    [saved] = _saved_files(_cache_dir)
    saved.write_bytes(saved.read_bytes()[:200])
    assert load_pool(str(pool)) == built
    assert read_saved_index(saved, POOL_CHECKS_HEADER) == built


def test_analyze_with_and_without_the_cache_gives_the_same_records(
    tmp_path: Path, _cache_dir: Path
) -> None:
    pool = write_lines(tmp_path / "pool.jsonl", [json.dumps(p) for p in POOL_LINES])
    src = write_lines(tmp_path / "in.jsonl", [json.dumps(CITING), json.dumps(GOOD_1)])
    outs = []
    for i, flags in enumerate([["--no-cache"], [], []]):
        out = tmp_path / f"out{i}.jsonl"
        assert main(["analyze", *flags, "--papers", str(pool), str(src), "-o", str(out)]) == 0
        outs.append(read_jsonl(out))
        # --no-cache neither reads nor writes the cache; the runs after it write then read it.
        assert len(_saved_files(_cache_dir)) == (0 if i == 0 else 1)
    assert outs[0] == outs[1] == outs[2]
    assert any(p["how"] == "title" for p in outs[0][0]["papers"])


# ---- --jobs N: the same bytes from N processes ---------------------------------------------
def _many_lines() -> list[str]:
    """150 short threads (three chunks of work) with bad and blank lines among them."""
    lines = []
    for i in range(150):
        if i % 41 == 7:
            lines.append("{not json")
        elif i % 53 == 11:
            lines.append('["a", "list"]')
        elif i % 37 == 4:
            lines.append("   ")
        elif i % 3 == 0:
            lines.append(json.dumps(dict(CITING, id=f"o/r#{i}", number=i)))
        else:
            thread = GOOD_1 if i % 2 else GOOD_2
            lines.append(json.dumps(dict(thread, id=f"o/r#{i}", number=i,
                                         title=f"{thread['title']} ({i})")))
    return lines


def _run_cli(args: list[str], tmp_path: Path, stdin: str | None = None
             ) -> subprocess.CompletedProcess[str]:

    env = {**os.environ, "RLTRACKER_CACHE_DIR": str(tmp_path / "cache")}
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", "analyze", *args], input=stdin, capture_output=True,
        text=True, timeout=300, cwd=Path(__file__).resolve().parent.parent, env=env,
    )  # fmt: skip


def test_jobs_2_writes_the_same_bytes_as_one_process(tmp_path: Path) -> None:
    pool = write_lines(tmp_path / "pool.jsonl", [json.dumps(p) for p in POOL_LINES])
    src = write_lines(tmp_path / "in.jsonl", _many_lines())
    runs = []
    for jobs in ("1", "2"):
        out = tmp_path / f"out{jobs}.jsonl"
        proc = _run_cli(["--jobs", jobs, "--papers", str(pool), str(src), "-o", str(out)],
                        tmp_path)
        runs.append((proc.returncode, proc.stderr, out.read_bytes()))
    assert runs[0] == runs[1]
    code, err, out_bytes = runs[0]
    assert code == 1
    rows = [json.loads(x) for x in out_bytes.decode().splitlines()]
    assert len(rows) == sum(1 for x in _many_lines() if x.strip())
    bad = [r for r in rows if "error" in r]
    bad_numbers = [n for n, x in enumerate(_many_lines(), 1) if x.strip()[:2] in ("{n", "[\"")]
    assert [r["line"] for r in bad] == bad_numbers and len(bad_numbers) == 7
    assert [line.split(":")[1] for line in err.splitlines()] == [f" line {n}" for n in bad_numbers]
    assert all(r["id"] is None for r in bad)
    assert rows[-1]["id"] == "o/r#149"
    # The pool is used by the workers too.
    assert any(p.get("how") == "title" for p in rows[0]["papers"])


def test_jobs_2_on_stdin_to_stdout(tmp_path: Path) -> None:
    data = "\n".join(x for x in _many_lines() if x.strip().startswith("{\"")) + "\n\n"
    one, two = (_run_cli(["--jobs", jobs, "-"], tmp_path, stdin=data) for jobs in ("1", "2"))
    assert one.returncode == two.returncode == 0, two.stderr
    assert two.stdout == one.stdout and two.stderr == one.stderr == ""
    assert len(two.stdout.splitlines()) == data.count("\n") - 1


@pytest.mark.parametrize("bad", ["-1", "two", "1.5"])
def test_bad_jobs_count_is_one_line_and_exit_2(tmp_path: Path, bad: str) -> None:
    src = write_lines(tmp_path / "in.jsonl", [json.dumps(GOOD_1)])
    proc = _run_cli([f"--jobs={bad}", str(src)], tmp_path)
    assert proc.returncode == 2
    assert proc.stdout == ""
    [line] = proc.stderr.splitlines()
    assert "--jobs" in line and repr(bad) in line


def _worker_pids(pid: int) -> list[int]:
    """Children of `pid` forked from it (same command line): its --jobs workers."""
    proc = Path(f"/proc/{pid}")
    children = (proc / "task" / str(pid) / "children").read_text().split()
    cmdline = (proc / "cmdline").read_bytes()
    return [int(c) for c in children
            if Path(f"/proc/{c}/cmdline").exists()
            and Path(f"/proc/{c}/cmdline").read_bytes() == cmdline]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="--jobs forks on Linux only")
def test_a_worker_that_dies_fails_the_command_with_one_line(tmp_path: Path) -> None:
    import signal
    import time

    env = {**os.environ, "RLTRACKER_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "bot.cli", "analyze", "--jobs", "2", "-"], stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        cwd=Path(__file__).resolve().parent.parent,
    )  # fmt: skip
    assert proc.stdin is not None
    try:
        # One chunk of records makes the command fork its workers; stdin stays open meanwhile.
        proc.stdin.write((json.dumps(GOOD_1) + "\n") * 64)
        proc.stdin.flush()
        deadline = time.monotonic() + 120  # waiting for the workers to exist, not timing them
        while len(workers := _worker_pids(proc.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(workers) == 2
        os.kill(workers[0], signal.SIGKILL)
        proc.stdin.write((json.dumps(GOOD_2) + "\n") * 200)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 2
    [line] = err.splitlines()
    assert line.startswith("rltracker analyze: a worker process died")
    assert len(out.splitlines()) < 264  # the run stopped: no record after the loss is passed off


# ---- --jobs not given: one process per CPU for a large input file ---------------------------

def test_jobs_not_given_depends_on_the_input_file_size(tmp_path: Path) -> None:
    from bot.cli.analyze import AUTO_JOBS_BYTES, _cpus, job_count

    small = write_lines(tmp_path / "small.jsonl", [json.dumps(GOOD_1)])
    large = tmp_path / "large.jsonl"
    large.write_text(json.dumps(GOOD_1) + "\n" + " " * AUTO_JOBS_BYTES + "\n", encoding="utf-8")
    forks = sys.platform.startswith("linux")
    assert job_count(None, str(small)) == (1, None)
    assert job_count(None, str(large)) == ((_cpus() if forks else 1), None)
    assert job_count(None, "-") == (1, None)  # stdin: its length is not known in advance
    assert job_count(None, str(tmp_path / "missing.jsonl")) == (1, None)
    # Asked for explicitly, as before: --jobs 1 is always one process, 0 one per CPU.
    assert job_count(1, str(large)) == (1, None)
    assert job_count(0, str(small))[0] == (_cpus() if forks else 1)
    assert job_count(3, str(small))[0] == (3 if forks else 1)


def test_a_large_input_without_jobs_writes_what_one_process_writes(tmp_path: Path) -> None:
    from bot.cli.analyze import AUTO_JOBS_BYTES

    # Blank lines are not records: they make the file large without making the test slow.
    padding = [" " * 1000] * (AUTO_JOBS_BYTES // 1000 + 1)
    src = write_lines(tmp_path / "in.jsonl", _many_lines()[:90] + padding + _many_lines()[90:])
    runs = []
    for args in (["--jobs", "1"], []):
        out = tmp_path / f"out{len(args)}.jsonl"
        proc = _run_cli([*args, str(src), "-o", str(out)], tmp_path)
        runs.append((proc.returncode, proc.stderr, out.read_bytes()))
    assert runs[0] == runs[1]
    assert runs[0][0] == 1 and len(runs[0][2].splitlines()) == sum(1 for x in _many_lines() if x.strip())


def test_a_pool_index_saved_before_a_check_existed_is_not_used(
        tmp_path: Path, _cache_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An index saved by a version whose pool checks let a paper through (here one of a key
    of the wrong type, refused since round five) was read from the cache, keyed by the pool
    file and the analyzers only: the newer check never ran, the paper came out, exit 0."""
    import hashlib

    from analyzers.papers import PaperIndex, index_tag
    from bot.analysis import save_index
    from bot.cli.analyze import POOL_CHECKS_HEADER

    wrong = {"title": "Frobnicated Widget Policy Optimization", "arxiv_id": 5}
    pool = write_lines(tmp_path / "pool.jsonl", [json.dumps({"title": "fine"}), json.dumps(wrong)])
    # What an earlier version saved for this pool: the same analyzers, no check of the types.
    key = hashlib.sha256(index_tag().encode() + b"\0" + pool.read_bytes()).hexdigest()[:40]
    save_index(_cache_dir / f"pool-file-{key}.idx", PaperIndex.build([{"title": "fine"}, wrong]))
    t = dict(GOOD_2, body='We implement "Frobnicated Widget Policy Optimization".')
    src = write_lines(tmp_path / "in.jsonl", [json.dumps(t)])
    out = tmp_path / "out.jsonl"
    assert main(["analyze", "--papers", str(pool), str(src), "-o", str(out)]) == 2
    assert capsys.readouterr().err == (f"rltracker analyze: --papers {pool} line 2: "
                                       "arxiv_id must be a string or null, got the number 5\n")
    # A pool that passes is indexed again and saved in place of the earlier version's index.
    write_lines(pool, [json.dumps(p) for p in POOL_LINES])
    key = hashlib.sha256(index_tag().encode() + b"\0" + pool.read_bytes()).hexdigest()[:40]
    stale = _cache_dir / f"pool-file-{key}.idx"
    save_index(stale, PaperIndex.build([{"title": "Quantile Ratio Clipping"}]))
    assert main(["analyze", "--papers", str(pool), str(write_lines(
        tmp_path / "cite.jsonl", [json.dumps(CITING)])), "-o", str(out)]) == 0
    assert any(p["how"] == "title" for p in read_jsonl(out)[0]["papers"])
    assert len(_saved_files(_cache_dir)) == 2 and stale.read_bytes().startswith(POOL_CHECKS_HEADER)


# ---- -o FILE: written only when the command has its records to write ---------------------
def test_output_file_is_kept_when_the_input_cannot_be_read(tmp_path: Path) -> None:
    """`analyze - -o FILE` started with stdin closed (cron, a daemon) emptied FILE, the
    previous run's records, before finding there was nothing to read: exit 2, FILE lost."""
    out = write_lines(tmp_path / "out.jsonl", ['{"id": "o/r#1", "earlier": "records"}'])
    before = out.read_bytes()
    env = {**os.environ, "RLTRACKER_CACHE_DIR": str(tmp_path / "cache")}
    result = subprocess.run(["sh", "-c", 'exec "$@" <&-', "sh", sys.executable, "-m", "bot.cli",
                             "analyze", "-", "-o", str(out)], env=env, text=True,
                            capture_output=True, timeout=120)
    assert result.returncode == 2, result.stderr
    assert "<stdin>" in result.stderr
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]  # nothing left beside it


def test_output_file_may_be_the_input_file(tmp_path: Path) -> None:
    """`analyze data.jsonl -o data.jsonl` opened (emptied) the output before reading the
    input: no record, exit 0, the threads gone."""
    data = write_lines(tmp_path / "data.jsonl", [json.dumps(GOOD_1), json.dumps(GOOD_2)])
    assert main(["analyze", str(data), "-o", str(data)]) == 0
    rows = read_jsonl(data)
    assert [r["id"] for r in rows] == ["o/r#1", "o/r#2"] and "failure" in rows[0]


def test_output_file_keeps_its_permissions_and_an_empty_input_writes_it_empty(
        tmp_path: Path) -> None:
    out = write_lines(tmp_path / "out.jsonl", ["old"])
    out.chmod(0o640)
    link = tmp_path / "latest.jsonl"
    link.symlink_to(out.name)
    empty = write_lines(tmp_path / "empty.jsonl", [""])
    assert main(["analyze", str(empty), "-o", str(link)]) == 0
    assert link.is_symlink() and out.read_text(encoding="utf-8") == ""
    assert out.stat().st_mode & 0o777 == 0o640
    src = write_lines(tmp_path / "in.jsonl", [json.dumps(GOOD_1)])
    assert main(["analyze", str(src), "-o", "/dev/null"]) == 0  # not a file: written as it is
    if os.geteuid() != 0:  # root writes any file
        out.chmod(0o440)  # read-only: refused, not replaced behind the user's back
        assert main(["analyze", str(src), "-o", str(out)]) == 2
        assert out.read_text(encoding="utf-8") == ""


def test_pool_and_input_both_from_stdin_is_refused(tmp_path: Path) -> None:
    """`--papers - -`: the pool read all of stdin (thread records have titles, so they were
    taken for papers), the input was then empty: no record, exit 0, nothing said."""
    env = {**os.environ, "RLTRACKER_CACHE_DIR": str(tmp_path / "cache")}
    result = subprocess.run([sys.executable, "-m", "bot.cli", "analyze", "--papers", "-", "-"],
                            input=json.dumps(GOOD_1) + "\n", env=env, text=True,
                            capture_output=True, timeout=120)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("rltracker analyze: ") and result.stderr.count("\n") == 1
    assert "--papers -" in result.stderr and "stdin" in result.stderr


def test_a_lone_surrogate_escape_is_read_as_the_replacement_character(tmp_path: Path) -> None:
    """A text cut in the middle of a UTF-16 pair by the tool that wrote the file ("\\ud83d"
    alone: valid JSON, no character) made the analyzers fail on the record ("analysis failed:
    UnicodeEncodeError"), and in the id it stopped the whole run with a traceback, every
    later record lost. It is read as U+FFFD, as the app reads it in a webhook payload."""
    cut = dict(GOOD_1, id="o/r#1\ud83d", title=GOOD_1["title"] + " \ud83d",
               body=GOOD_1["body"] + " \udc00", comments=[{"author": "b", "body": "same \ud83d"}])
    src = write_lines(tmp_path / "in.jsonl", [json.dumps(cut), json.dumps(GOOD_2)])
    assert "\\ud83d" in src.read_text(encoding="utf-8")
    out = tmp_path / "out.jsonl"
    assert main(["analyze", str(src), "-o", str(out)]) == 0
    rows = read_jsonl(out)
    assert [r["id"] for r in rows] == ["o/r#1\ufffd", "o/r#2"]
    assert rows[0]["failure"]["category"] == "entropy_collapse"
    assert all("error" not in r for r in rows)


def test_a_line_nested_too_deeply_gets_an_error_record_and_the_rest_is_analysed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A record holding an unknown key nested 50,000 deep stopped the run with a
    RecursionError traceback (exit 1, reported as a bug), every later record lost; in the
    paper pool too. The line gets an error record naming it; a pool line is named, exit 2."""
    deep = json.dumps(dict(GOOD_1, extra=None)).replace("null", "[" * 50_000 + "]" * 50_000)
    src = write_lines(tmp_path / "in.jsonl", [deep, json.dumps(GOOD_2)])
    out = tmp_path / "out.jsonl"
    assert main(["analyze", str(src), "-o", str(out)]) == 1
    rows = read_jsonl(out)
    assert rows[0] == {"id": "o/r#1", "line": 1, "error": rows[0]["error"]}  # its opening id, left80
    assert "line 1: " in rows[0]["error"] and "nested" in rows[0]["error"]
    assert rows[1]["id"] == "o/r#2" and "error" not in rows[1]
    assert "line 1: " in capsys.readouterr().err
    pool = write_lines(tmp_path / "pool.jsonl", [
        json.dumps({"arxiv_id": "2512.99002", "title": "A Paper", "aliases": []}),
        '{"title": "Deep", "x": ' + "[" * 50_000 + "]" * 50_000 + "}"])
    assert main(["analyze", "--no-cache", "--papers", str(pool), str(src), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "line 2" in err and "nested" in err and "bug" not in err


def _stdin_run(data: bytes, **env: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", "analyze", "-"], input=data, capture_output=True,
        timeout=120, cwd=Path(__file__).resolve().parent.parent, env={**os.environ, **env},
    )  # fmt: skip


@pytest.mark.parametrize("encoding", [None, "latin-1"])
def test_stdin_and_stdout_are_utf8_whatever_the_locale(tmp_path: Path, encoding: str | None) -> None:
    """The records are UTF-8 (the contract), from a file or from stdin. Stdin was read in the
    locale's encoding: under a Latin-1 one (PYTHONIOENCODING, a Windows console) a Chinese
    failure report was analysed as mojibake (not a failure report); and a byte that is not
    UTF-8, read as U+FFFD from a file, failed its record from stdin ('analysis failed:
    UnicodeEncodeError', exit 1). Stdin now gives what the same bytes in a file give."""
    zh = dict(GOOD_1, title="训练过程中熵崩溃",
              body="训练到第40步后熵迅速下降到零，奖励不再上升，输出变得重复。")
    data = (json.dumps(zh, ensure_ascii=False).encode() + b"\n"
            + json.dumps(dict(GOOD_1, id="o/r#3", number=3)).encode().replace(b"drops", b"dr\xffps")
            + b"\n")
    src = tmp_path / "in.jsonl"
    src.write_bytes(data)
    out = tmp_path / "out.jsonl"
    assert main(["analyze", str(src), "-o", str(out)]) == 0
    assert read_jsonl(out)[0]["failure"]["category"] == "entropy_collapse"
    proc = _stdin_run(data, **({"PYTHONIOENCODING": encoding} if encoding else {}))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == out.read_bytes()


def test_a_carriage_return_inside_a_record_does_not_split_it(tmp_path: Path) -> None:
    """JSON Lines ends a record at "\\n" only; a lone "\\r" is JSON whitespace. A file was read
    with Python's universal newlines, which also end a line at a lone "\\r": a valid thread
    with one between two keys became two error records (one record in, two lines out, so
    output line K no longer answered input record K, and every later line number was off by
    one), while the same bytes on stdin were analysed. Pool files were split the same way."""
    one = json.dumps(GOOD_1).replace(', "repo"', ',\r"repo"')
    data = (one + "\n" + json.dumps(GOOD_2) + "\n").encode()
    src = tmp_path / "in.jsonl"
    src.write_bytes(data)
    out = tmp_path / "out.jsonl"
    assert main(["analyze", str(src), "-o", str(out)]) == 0
    rows = read_jsonl(out)
    assert [r["id"] for r in rows] == ["o/r#1", "o/r#2"]
    assert all("error" not in r for r in rows)
    proc = _stdin_run(data)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == out.read_bytes()
    pool = tmp_path / "pool.jsonl"
    pool.write_bytes(b'{"arxiv_id": "2512.99002",\r"title": "Frobnicated Widget Policy '
                     b'Optimization for Teapots", "aliases": []}\n')
    src2 = write_lines(tmp_path / "in2.jsonl", [json.dumps(dict(
        GOOD_1, body='We implement "Frobnicated Widget Policy Optimization for Teapots".'))])
    assert main(["analyze", "--papers", str(pool), "--no-cache", str(src2), "-o", str(out)]) == 0
    assert any(p["arxiv_id"] == "2512.99002" for p in read_jsonl(out)[0]["papers"])


def test_the_thread_records_the_app_serves_are_analysed(tmp_path: Path) -> None:
    """`GET /api/threads/...` serves a stored thread as a contract `thread`
    (bot.store.threads.thread_record), and says "not known" of an optional key with null: a
    comment by a deleted account or from a payload without its user has author_is_bot null, a
    thread stored without its address has url null. `rltracker analyze` refused such a record
    whole ("author_is_bot must be true or false, got null": an error record, exit 1), though
    the contract reads a missing optional key as not known and the analyzers read null the
    same way. Null in an optional key is now "not known", as its absence is."""
    from bot.store.models import Comment, Thread
    from bot.store.threads import thread_record

    thread = Thread(repo="o/r", number=7, kind="issue", title=GOOD_1["title"], body=GOOD_1["body"],
                    author="alice", author_association=None, author_is_bot=None, state="open",
                    labels=[], assignees=[], url=None, complete=None)
    comments = [Comment(kind="comment", github_id=1, author=None, author_is_bot=None,
                        body="Same here after 30 steps."),
                Comment(kind="review", github_id=2, author="bob", author_is_bot=False, body="ok")]
    record = dict(thread_record(thread, comments), author_is_bot=None, url=None)
    record["comments"][0]["author_is_bot"] = None  # as served before review33 left them out
    also = dict(GOOD_2, author_is_bot=None, complete=None, url=None,
                comments=[{"author": "c", "body": "x", "kind": None, "author_is_bot": None}])
    src = write_lines(tmp_path / "in.jsonl", [json.dumps(record), json.dumps(also)])
    out = tmp_path / "out.jsonl"
    assert main(["analyze", str(src), "-o", str(out)]) == 0
    rows = read_jsonl(out)
    assert [r["id"] for r in rows] == ["o/r#7", "o/r#2"]
    assert rows[0]["failure"]["category"] == "entropy_collapse"
    # null still stands for "not known" only: a required key, or a wrong type, is refused
    bad = write_lines(tmp_path / "bad.jsonl", [json.dumps(dict(GOOD_1, kind=None)),
                                               json.dumps(dict(GOOD_1, author_is_bot="no"))])
    assert main(["analyze", str(bad), "-o", str(out)]) == 1
    assert [r["error"] for r in read_jsonl(out)] == [
        "line 1: kind must be one of issue, pull_request, discussion, got null",
        'line 2: author_is_bot must be true or false, got "no"']


def test_records_breaking_the_contracts_cross_key_rules_get_error_records(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The contract states two rules across keys: `merged` is a state only pull requests have,
    and comments are in time order. An issue or a discussion said to be merged, or a thread
    whose comments run backwards in time, was analysed as if it were right (its review state
    read from a state it cannot have, its replies in an order that never happened): each is an
    error record naming the line and the rule, the other lines analysed, exit 1. Times are
    compared as instants (an offset, a bare date, a comment with no time are fine)."""
    c = [{"author": "a", "created_at": "2025-01-02T10:00:00Z", "body": "first"},
         {"author": "b", "created_at": "2025-01-01T10:00:00Z", "body": "a day earlier"}]
    ordered = [{"author": "a", "created_at": "2025-01-02T18:00:00+08:00", "body": "first"},
               {"author": "b", "created_at": None, "body": "no time"},
               {"author": "c", "created_at": "2025-01-02T10:00:00Z", "body": "same instant"},
               {"author": "d", "created_at": "2025-01-02", "body": "that day"},
               {"author": "e", "body": "time not known"},
               {"author": "f", "created_at": "2025-01-03T00:00:00", "body": "next day"}]
    lines = [
        dict(GOOD_1, state="merged"),
        dict(GOOD_1, kind="discussion", state="merged"),
        dict(GOOD_2, state="merged", comments=ordered),
        dict(GOOD_1, comments=c),
        dict(GOOD_1, comments=ordered),
        dict(GOOD_1, state="closed"),
    ]
    src = write_lines(tmp_path / "in.jsonl", [json.dumps(x) for x in lines])
    out = tmp_path / "out.jsonl"
    assert main(["analyze", str(src), "-o", str(out)]) == 1
    rows = read_jsonl(out)
    assert [r.get("error") for r in rows] == [
        "line 1: state merged is only for pull requests, this is an issue",
        "line 2: state merged is only for pull requests, this is a discussion",
        None,
        "line 4: comments must be in time order: comment 2 (2025-01-01T10:00:00Z) is "
        "earlier than comment 1 (2025-01-02T10:00:00Z)",
        None, None]
    assert rows[2]["review"]["state"] == "merged" and rows[5]["id"] == "o/r#1"
    err = capsys.readouterr().err
    assert "line 1: state merged" in err and "line 4: comments must be in time order" in err


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_byte_order_mark_alone_on_its_line_is_no_record(tmp_path: Path, jobs: str) -> None:
    """An empty file saved by Notepad is a UTF-8 byte-order mark and nothing else, and a file
    may start with the mark on a line of its own before the first record. The mark is no
    record: it was analysed as one, "line 1: not valid JSON", exit 1, so an empty input gave
    an error record and the output held one line more than there were records."""
    out = tmp_path / "out.jsonl"
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"\xef\xbb\xbf")
    assert main(["analyze", "--jobs", jobs, str(empty), "-o", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == ""
    src = tmp_path / "in.jsonl"
    src.write_text("\ufeff\r\n" + json.dumps(GOOD_1) + "\r\n", encoding="utf-8", newline="")
    assert main(["analyze", "--jobs", jobs, str(src), "-o", str(out)]) == 0
    assert [r["id"] for r in read_jsonl(out)] == ["o/r#1"]


def test_error_lines_on_the_terminal_carry_no_control_or_direction_characters(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The message of a bad line quotes the value it refused (40 characters of it): a
    direction override (U+202E) or a C1 control (U+009B, CSI on 8-bit terminals) in a thread
    record or a pool paper reached the terminal as it was, as review59 found for `rules`. On
    stderr they are spaces (bot.cli.printable); the error record keeps the text as read."""
    bad = dict(GOOD_1, kind="\u202eissue\u009b2J")
    src = write_lines(tmp_path / "in.jsonl", [json.dumps(bad, ensure_ascii=False)])
    out = tmp_path / "out.jsonl"
    assert main(["analyze", str(src), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert "kind must be one of" in err and "\u202e" not in err and "\u009b" not in err
    assert "\u202eissue\u009b2J" in read_jsonl(out)[0]["error"]
    pool = tmp_path / "pool.jsonl"
    pool.write_text(json.dumps({"title": "T", "aliases": "\u202eFWPO\u009b2J"},
                               ensure_ascii=False) + "\n", encoding="utf-8")
    assert main(["analyze", "--papers", str(pool), str(src), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "aliases must be" in err and "\u202e" not in err and "\u009b" not in err


def test_a_pool_paper_is_read_as_papers_import_reads_it(
        db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """One reader of the paper shape (left65): `analyze --papers` indexed a pool line as
    written where `papers import` (whose stored pool the app matches threads against) cleans
    it: a title wrapped over lines came out in the analysis records with its line break and
    spaces, and an arXiv id of no valid month (`2999.00001`), which the import refuses, was
    indexed and linked. Now the pool's title is the stored one, and that id refuses the
    pool (exit 2, the import's reason)."""
    paper = {"arxiv_id": "2412.99001", "title": "Frobnicated  Widget\n  Policy Optimization for Teapots",
             "aliases": [" FWPO "], "method": None, "first_public": "2025-01-01T00:00:00+05:00"}
    pool = write_lines(tmp_path / "pool.jsonl", [json.dumps(paper)])
    monkeypatch.setenv("DATABASE_URL", db_url)
    assert main(["papers", "import", str(pool)]) == 0
    capsys.readouterr()

    async def stored() -> Any:
        from sqlalchemy import select
        from sqlalchemy.ext.asyncio import create_async_engine

        from bot.store.models import Paper

        engine = create_async_engine(db_url)
        async with engine.connect() as conn:
            row = (await conn.execute(select(Paper.title, Paper.aliases))).one()
        await engine.dispose()
        return row

    title, aliases = asyncio.run(stored())
    t = dict(GOOD_2, body='We implement "Frobnicated Widget Policy Optimization for Teapots".')
    src = write_lines(tmp_path / "in.jsonl", [json.dumps(t)])
    out = tmp_path / "out.jsonl"
    assert main(["analyze", "--no-cache", "--papers", str(pool), str(src), "-o", str(out)]) == 0, \
        capsys.readouterr().err
    [found] = [p for p in read_jsonl(out)[0]["papers"] if p["arxiv_id"] == "2412.99001"]
    assert found["title"] == title == "Frobnicated Widget Policy Optimization for Teapots"
    assert aliases == ["FWPO"]
    bad = write_lines(tmp_path / "bad.jsonl", [json.dumps({**paper, "arxiv_id": "2999.00001"})])
    assert main(["analyze", "--no-cache", "--papers", str(bad), str(src), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "line 1: arxiv_id is not an arXiv identifier: '2999.00001'" in err, err


def test_a_time_that_is_not_iso_8601_gets_an_error_record_naming_the_key(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The contract's created_at and closed_at are ISO 8601 (a bare date allowed): "yesterday"
    was accepted and analysed as a time not known. It is refused with an error naming the key,
    and the other lines are still analysed (left80)."""
    bad = [dict(GOOD_1, created_at="yesterday"),
           dict(GOOD_1, closed_at="5 Dec 2025"),
           dict(GOOD_1, comments=[{"author": "a", "created_at": "2025-01-02", "body": "x"},
                                  {"author": "b", "created_at": "last week", "body": "y"}])]
    good = dict(GOOD_2, created_at="2025-01-02T03:04:05Z", closed_at="2025-01-03",
                comments=[{"author": "a", "created_at": "2025-01-02T04:00:00+02:00", "body": "x"}])
    src = write_lines(tmp_path / "in.jsonl", [json.dumps(b) for b in bad] + [json.dumps(good)])
    out = tmp_path / "out.jsonl"
    assert main(["analyze", str(src), "-o", str(out)]) == 1
    rows = read_jsonl(out)
    assert [r.get("error") for r in rows] == [
        'line 1: created_at must be an ISO 8601 time or date, got "yesterday"',
        'line 2: closed_at must be an ISO 8601 time or date, got "5 Dec 2025"',
        'line 3: comment 2: created_at must be an ISO 8601 time or date, got "last week"',
        None,
    ]
    assert [r["id"] for r in rows] == ["o/r#1"] * 3 + ["o/r#2"]
    assert "line 1: created_at" in capsys.readouterr().err


@pytest.mark.parametrize(("line", "rid"), [
    ('{"id": "o/r#7", "repo": "o/r", "number": 7, "kind": "issue", "title": "t", "body', "o/r#7"),
    ('  { "id" : "o\\/r#\\u0038", "repo": ', "o/r#8"),
    ('{"id": "o/r#9"', "o/r#9"),
    ('{"id": "o/r#9', None),  # the id itself cut short: not readable
    ('{"id": 9, "repo": ', None),  # not a string
    ('{"repo": "o/r", "id": "o/r#10", ', None),  # not the first key: a value could hold '"id"'
    ('{"title": "\\"id\\": \\"o/r#11\\"", ', None),
    ('{"id": "\\ud83d", ', "\ufffd"),  # a lone surrogate, read as the records' are
])
def test_a_broken_line_keeps_the_id_of_its_well_formed_start(
        tmp_path: Path, line: str, rid: str | None) -> None:
    """A line whose JSON breaks after a well-formed `{"id": "..."` start got `id: null`; the id
    it opens with is read (only as the first key, a JSON string) and kept (left80)."""
    src = write_lines(tmp_path / "in.jsonl", [line, json.dumps(GOOD_2)])
    out = tmp_path / "out.jsonl"
    assert main(["analyze", str(src), "-o", str(out)]) == 1
    rows = read_jsonl(out)
    assert rows[0]["id"] == rid and rows[0]["error"].startswith("line 1: not valid JSON")
    assert rows[1]["id"] == "o/r#2" and "error" not in rows[1]
