"""`rltracker analyze`: JSON lines in, analysis lines out, same order; bad lines reported."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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


def test_papers_pool_is_used(tmp_path: Path) -> None:
    pool = write_lines(tmp_path / "pool.jsonl", [json.dumps(
        {"arxiv_id": "2999.00001", "title": "Frobnicated Widget Policy Optimization for Teapots",
         "aliases": [], "method": None, "first_public": None})])  # fmt: skip
    t = dict(GOOD_2, body='We implement "Frobnicated Widget Policy Optimization for Teapots".')
    src = write_lines(tmp_path / "in.jsonl", [json.dumps(t)])
    out = tmp_path / "out.jsonl"
    assert main(["analyze", "--papers", str(pool), str(src), "-o", str(out)]) == 0
    papers = read_jsonl(out)[0]["papers"]
    assert any(p["arxiv_id"] == "2999.00001" for p in papers)


def test_bad_pool_exits_2_naming_the_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pool = write_lines(tmp_path / "pool.jsonl", [json.dumps({"title": "ok"}), "nope"])
    src = write_lines(tmp_path / "in.jsonl", [json.dumps(GOOD_1)])
    assert main(["analyze", "--papers", str(pool), str(src), "-o", str(tmp_path / "o")]) == 2
    assert "line 2" in capsys.readouterr().err


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
