"""`rltracker analyze [--papers POOL.jsonl] INPUT.jsonl [-o OUT.jsonl]`.

Thread records in (JSON lines, `-` for stdin), one analysis record out per thread, same
order (`-o -`, the default, is stdout). `--papers` builds a PaperIndex once, matched in
addition to the catalog, and saves it in the cache directory ($RLTRACKER_CACHE_DIR, else
$XDG_CACHE_HOME/rltracker, else ~/.cache/rltracker) under a hash of the pool file and the
index and analyzer versions: the next run with the same pool reads it in one go instead of
building it again. A saved index that is damaged or of another version is rebuilt, never
used. `--no-cache` neither reads nor writes it.

Bad input lines: a line that is not JSON, or not a JSON object, gets an error record in its
place, `{"id": <id if readable, else null>, "line": N, "error": "line N: ..."}`, and the
same message on stderr; every other line is still analysed, so nothing is lost and output
line K still answers input record K. Blank lines are not records and are skipped. The exit
status is 0 when every line was analysed, 1 when some lines were bad, 2 when the command
could not run at all (unreadable input or a bad paper pool, named with its line number).
"""

from __future__ import annotations

import argparse
import gc
import io
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO


class PoolError(Exception):
    pass


@contextmanager
def _open_in(path: str) -> Iterator[TextIO]:
    if path == "-":
        yield sys.stdin
    else:
        with open(path, encoding="utf-8", errors="replace") as fh:
            yield fh


@contextmanager
def _open_out(path: str) -> Iterator[TextIO]:
    if path == "-":
        yield sys.stdout
        sys.stdout.flush()
    else:
        with open(path, "w", encoding="utf-8") as fh:
            yield fh


def load_pool(path: str, *, use_cache: bool = True) -> Any:
    """PaperIndex of a paper-pool file (read from the cache when saved there before);
    PoolError names the first bad line."""
    import hashlib

    from analyzers.papers import PaperIndex, index_tag
    from bot.analysis import read_saved_index, save_index
    from bot.config import cache_dir

    if path == "-":
        stdin = sys.stdin
        data = stdin.buffer.read() if hasattr(stdin, "buffer") else stdin.read().encode()
    else:
        with open(path, "rb") as fh:
            data = fh.read()
    saved = None
    if use_cache:
        key = hashlib.sha256(index_tag().encode() + b"\0" + data).hexdigest()[:40]
        saved = cache_dir() / f"pool-file-{key}.idx"
        index = read_saved_index(saved)
        if index is not None:
            return index
    papers: list[dict[str, Any]] = []
    lines = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="replace")
    for number, raw in enumerate(lines, 1):  # lines as reading the file would split them
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise PoolError(f"{path} line {number}: not valid JSON ({exc.msg})") from None
        if not isinstance(record, dict) or not (
            isinstance(record.get("title"), str) or record.get("arxiv_id") or record.get("aliases")
        ):
            raise PoolError(
                f"{path} line {number}: a paper is an object with a title, arxiv_id or aliases"
            )
        papers.append(record)
    index = PaperIndex.build(papers)
    if saved is not None:
        save_index(saved, index)
    return index


def analyze_lines(lines: Any, out: TextIO, pool: Any, err: TextIO) -> tuple[int, int]:
    """Analyse each JSON line of `lines` into `out`. Returns (records written, bad lines)."""
    from analyzers.analyze import analyze_thread

    written = bad = 0
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        record: Any = None
        problem: str | None = None
        try:
            record = json.loads(raw)
        except json.JSONDecodeError as exc:
            problem = f"not valid JSON ({exc.msg} at column {exc.colno})"
        if problem is None and not isinstance(record, dict):
            problem = f"a thread record must be a JSON object, got {type(record).__name__}"
        if problem is None:
            try:
                result = analyze_thread(record, pool)
            except Exception as exc:  # an analyzer bug must not lose the other records
                problem = f"analysis failed: {type(exc).__name__}: {exc}"
        if problem is not None:
            bad += 1
            message = f"line {number}: {problem}"
            print(f"rltracker analyze: {message}", file=err)
            rid = record.get("id") if isinstance(record, dict) else None
            result = {"id": rid if isinstance(rid, str) else None, "line": number, "error": message}
        out.write(json.dumps(result, ensure_ascii=False) + "\n")
        written += 1
    return written, bad


def analyze_command(args: argparse.Namespace) -> int:
    pool = None
    if getattr(args, "papers", None):
        try:
            pool = load_pool(args.papers, use_cache=not getattr(args, "no_cache", False))
        except (OSError, PoolError) as exc:
            print(f"rltracker analyze: --papers {exc}", file=sys.stderr)
            return 2
        # The index (hundreds of thousands of objects) lives until the command ends: kept
        # out of the cyclic collector's reach, which would otherwise walk it again and again.
        gc.freeze()
    try:
        with _open_in(args.input) as src, _open_out(args.output or "-") as out:
            _, bad = analyze_lines(src, out, pool, sys.stderr)
    except OSError as exc:
        print(f"rltracker analyze: {exc}", file=sys.stderr)
        return 2
    return 1 if bad else 0
