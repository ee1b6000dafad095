"""`rltracker analyze [--papers POOL.jsonl] INPUT.jsonl [-o OUT.jsonl]`.

Thread records in (JSON lines, `-` for stdin), one analysis record out per thread, same
order (`-o -`, the default, is stdout). `--papers` builds a PaperIndex once, matched in
addition to the catalog, and saves it in the cache directory ($RLTRACKER_CACHE_DIR, else
$XDG_CACHE_HOME/rltracker, else ~/.cache/rltracker) under a hash of the pool file and the
index and analyzer versions: the next run with the same pool reads it in one go instead of
building it again. A saved index that is damaged, of another version, or saved under other
pool checks (POOL_CHECKS_VERSION) is rebuilt, never used. `--no-cache` neither reads nor writes it.

`--jobs N` (0: one per CPU; not given: one per CPU when INPUT is a file of 1 MiB or more,
else 1; `--jobs 1` always one process) analyses in N processes and writes exactly what one
process writes, in the same order. The analyzers and the pool's index are loaded once, then
the workers are forked and share them copy-on-write; the parent reads the input, hands out
chunks of 64 records (a few per worker in flight, so memory stays bounded) and writes the
results in input order as they arrive. Fork is Linux's; elsewhere the command says so on
stderr and runs in one process (spawned workers would each load everything again).

Bad input lines: a line that is not JSON (or JSON Python cannot read: nested too deeply, an
integer of more than 4,300 digits), not a JSON object, or an object that is not a
contract thread (a required key missing, a key of the wrong type, a rule across keys broken:
`merged` on an issue or discussion, comments out of time order, a created_at or closed_at
that is no ISO 8601 time or date: `thread_problem`), gets an
error record in its place, `{"id": <id if readable, else null>, "line": N, "error": "line N: ..."}`
(a line that is no JSON keeps the id it opens with, `{"id": "..."`, as its first key), and the
same message on stderr; every other line is still analysed, so nothing is lost and output
line K still answers input record K. A record ends at a line feed (a lone carriage return
is JSON whitespace), from a file as from stdin; blank lines are not records and are skipped.
An optional key holding null is read as not known, as its absence is. A lone
UTF-16 surrogate escaped in a line or a pool paper ("\\ud83d", a text cut mid-pair) is read
as U+FFFD. The exit status is 0 when every line was analysed, 1 when some lines were bad, 2 when the command
could not run at all (unreadable input, an input or pool in UTF-16 or UTF-32 (its byte-order
mark says so: no line of it reads as UTF-8), or a bad paper pool, named with its line number) or
stopped (a --jobs worker process died: the output on stdout is incomplete); 141 when the
reader of stdout went away (`| head -1`), quietly, as for a tool stopped by SIGPIPE. `-o FILE` is
replaced only when the command ran through (exit 0 or 1): exit 2 leaves it as it was.
"""

from __future__ import annotations

import argparse
import errno
import gc
import io
import json
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from bot.files import BadJsonLine, encoding_problem, json_line


class PoolError(Exception):
    pass


# The checks a pool line must pass before it is indexed (below, load_pool). A saved index is
# keyed by the pool file and the analyzers (index_tag), not by these checks: an index saved
# while they let a line through (a key of the wrong type, before round five) was read back
# and the newer check never ran. Saved indexes start with this line; one saved under another
# version (or none) is built again through the checks and saved over. Bump it whenever the
# checks refuse something they accepted before.
POOL_CHECKS_VERSION = 4  # 3: a thread record refused (left64); 4: read as papers import reads it (left65)
POOL_CHECKS_HEADER = f"rltracker pool checks {POOL_CHECKS_VERSION}\n".encode()


class WorkerDied(Exception):
    """A --jobs worker process ended without answering (killed, out of memory)."""


def _utf8(stream: TextIO, errors: str = "strict", newline: str | None = None) -> TextIO:
    """A standard stream set to UTF-8, the records' encoding (the contract), whatever the
    locale's is: stdin was decoded in the locale's encoding (a Chinese failure report read as
    mojibake under a Latin-1 one, PYTHONIOENCODING or a Windows console) and a byte that is
    not UTF-8 failed its record there, while a file reads it as U+FFFD. A stream that cannot
    be set (a closed one, a test's StringIO) is left as it is. `newline="\\n"` for input:
    records end at a line feed only (_LINES)."""
    reconfigure = getattr(stream, "reconfigure", None)
    if reconfigure is not None:
        if newline is not None:
            reconfigure(encoding="utf-8", errors=errors, newline=newline)
        else:
            reconfigure(encoding="utf-8", errors=errors)
    return stream


# JSON Lines ends a record at "\n" ("\r\n" too: the "\r" is JSON whitespace). Files were read
# with Python's universal newlines, which also end a line at a lone "\r": a record holding one
# between two keys (valid JSON) was split into two error records, the output no longer had a
# line per record and every later line number was off by one, while stdin (newline "\n" on
# Linux) read it whole. Input files, stdin and pool files are split at "\n" alone.
_LINES = "\n"


class NotUtf8(Exception):
    """The input is in an encoding no line of which reads as UTF-8 (its byte-order mark says so)."""


# What to say of an input in UTF-16 or UTF-32 (its byte-order mark says so): bot.files.
_encoding_problem = encoding_problem


@contextmanager
def _open_in(path: str) -> Iterator[TextIO]:
    if path == "-":
        from bot.cli import _ClosedStream

        buffer = None if isinstance(sys.stdin, _ClosedStream) else getattr(sys.stdin, "buffer", None)
        if buffer is not None and hasattr(buffer, "peek"):
            problem = _encoding_problem(buffer.peek(4)[:4], "<stdin>")  # read nothing yet
            if problem:
                raise NotUtf8(problem)
        yield _utf8(sys.stdin, errors="replace", newline=_LINES)
    else:
        with open(path, "rb") as raw:
            problem = _encoding_problem(raw.peek(4)[:4], path)
            if problem:
                raise NotUtf8(problem)
            with io.TextIOWrapper(raw, encoding="utf-8", errors="replace", newline=_LINES) as fh:
                yield fh


@contextmanager
def _open_out(path: str) -> Iterator[TextIO]:
    """`-o FILE` written whole or not at all (bot.files): when the command stopped (input
    unreadable, a worker died, interrupted) FILE is as it was. `-` is stdout, as UTF-8."""
    from bot.files import replaced_whole

    if path == "-":
        yield _utf8(sys.stdout)
        sys.stdout.flush()
        return
    with replaced_whole(path) as fh:
        yield fh


def load_pool(path: str, *, use_cache: bool = True) -> Any:
    """PaperIndex of a paper-pool file (read from the cache when saved there before);
    PoolError names the first bad line."""
    import hashlib

    from analyzers.papers import PaperIndex, index_tag
    from bot.analysis import read_saved_index, save_index
    from bot.config import cache_dir
    from bot.github.papers import SkippedLine, record_from_json

    if path == "-":
        stdin = sys.stdin
        data = stdin.buffer.read() if hasattr(stdin, "buffer") else stdin.read().encode()
    else:
        with open(path, "rb") as fh:
            data = fh.read()
    saved = None
    if use_cache:
        digest = hashlib.sha256(index_tag().encode() + b"\0")
        digest.update(data)  # the same key as hashing them joined, without copying the file
        key = digest.hexdigest()[:40]
        saved = cache_dir() / f"pool-file-{key}.idx"
        index = read_saved_index(saved, POOL_CHECKS_HEADER)
        if index is not None:
            return index
    if problem := _encoding_problem(data[:4], path if path != "-" else "<stdin>"):
        raise PoolError(problem)
    papers: list[dict[str, Any]] = []
    lines = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8-sig", errors="replace",
                             newline=_LINES)
    for number, raw in enumerate(lines, 1):  # lines as reading the file would split them
        if not raw.strip():
            continue
        try:
            record = _decoded(raw)
        except BadJsonLine as exc:
            raise PoolError(f"{path} line {number}: {exc}") from None
        if isinstance(record, dict) and _looks_like_a_thread(record):
            # A threads file given as the pool (each thread's title indexed as a paper's,
            # silently: left64)
            raise PoolError(f"{path} line {number}: a thread record (repo, number, comments), "
                            "not a paper: --papers takes paper records (arxiv_id, title, "
                            "aliases, method, first_public)")
        if not isinstance(record, dict) or not (
            isinstance(record.get("title"), str) or record.get("arxiv_id") or record.get("aliases")
        ):
            raise PoolError(
                f"{path} line {number}: a paper is an object with a title, arxiv_id or aliases"
            )
        # (null_is_unknown: `"aliases": null` is no aliases, as `rltracker papers import`
        # reads it; it refused the whole pool here: left64)
        if problem := _keys_problem(record, _PAPER_KEYS, "", null_is_unknown=True):
            raise PoolError(f"{path} line {number}: {problem}")
        try:  # the one reader of the paper shape, `papers import`'s (left65): the same
            # arXiv ids refused, titles and aliases cleaned, dates read, as the stored pool
            papers.append(record_from_json(record))
        except SkippedLine as exc:
            raise PoolError(f"{path} line {number}: {exc}") from None
    index = PaperIndex.build(papers)
    if saved is not None:
        save_index(saved, index, POOL_CHECKS_HEADER)
    return index


# The contract `thread` and `comment` keys (../shared/contracts/README.md), in its order:
# (key, required, what the value must be: a type below or a tuple of the allowed strings).
# Required keys must be present and hold their type (null only where the type allows it); an
# optional key holds its type or null: the contract reads a missing optional key as "not
# known", and null says the same (the app's own thread records, GET /api/threads, write
# author_is_bot null for a deleted account and url null when it was not stored; they were
# refused whole). Unknown keys are ignored, as the contract says. `labels` is not checked:
# the evaluation threads of ../shared/eval hold their gold labels (an object) under that key,
# and the analyzers read only the strings of a list there, ignoring anything else. A comment's
# `author` and `created_at` (nullable) may be absent too, read as not known: the contract marks
# neither optional nor required, records written by hand (the project's own benchmarks) leave
# them out, and the analyzers need neither.
_STR = "a string"
_STR_OR_NULL = "a string or null"
_BOOL = "true or false"
_INT = "an integer"
_LIST = "a list (may be empty)"
_STR_LIST = "a list of strings"
_THREAD_KEYS: tuple[tuple[str, bool, str | tuple[str, ...]], ...] = (
    ("id", True, _STR), ("repo", True, _STR), ("number", True, _INT),
    ("kind", True, ("issue", "pull_request", "discussion")), ("title", True, _STR),
    ("body", True, _STR_OR_NULL), ("author", False, _STR_OR_NULL),
    ("author_association", False, _STR_OR_NULL), ("author_is_bot", False, _BOOL),
    ("state", True, ("open", "closed", "merged")), ("state_reason", False, _STR_OR_NULL),
    ("closed_by", False, _STR_OR_NULL),
    ("created_at", False, _STR_OR_NULL), ("closed_at", False, _STR_OR_NULL),
    ("url", False, _STR), ("complete", False, _BOOL), ("comments", True, _LIST),
)
_COMMENT_KEYS: tuple[tuple[str, bool, str | tuple[str, ...]], ...] = (
    ("author", False, _STR_OR_NULL), ("author_association", False, _STR_OR_NULL),
    ("author_is_bot", False, _BOOL), ("created_at", False, _STR_OR_NULL), ("body", True, _STR),
    ("kind", False, ("comment", "review", "review_comment")),
)

# The contract `paper` keys: a pool line holding one of another type was indexed as it was
# and its values came out in the analysis records (`"arxiv_id": "5"`, `"method": ["m"]`).
_PAPER_KEYS: tuple[tuple[str, bool, str | tuple[str, ...]], ...] = (
    ("arxiv_id", False, _STR_OR_NULL), ("title", False, _STR_OR_NULL),
    ("aliases", False, _STR_LIST), ("method", False, _STR_OR_NULL),
    ("first_public", False, _STR_OR_NULL),
)


def _looks_like_a_thread(record: dict[str, Any]) -> bool:
    """A contract thread, or an object with a thread's keys no paper has."""
    return thread_problem(record) is None or {"repo", "number", "comments"} <= record.keys()


def _fits(value: Any, want: str | tuple[str, ...]) -> bool:
    if isinstance(want, tuple):
        return isinstance(value, str) and value in want
    if want == _STR:
        return isinstance(value, str)
    if want == _STR_OR_NULL:
        return value is None or isinstance(value, str)
    if want == _BOOL:
        return isinstance(value, bool)
    if want == _INT:
        return isinstance(value, int) and not isinstance(value, bool)
    if want == _STR_LIST:
        return isinstance(value, list) and all(isinstance(item, str) for item in value)
    return isinstance(value, list)  # _LIST


def _json_type(value: Any) -> str:
    """A decoded JSON value as messages name it: its type, or the value when it is short."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, str):
        return json.dumps(value[:40] + ("..." if len(value) > 40 else ""), ensure_ascii=False)
    if isinstance(value, (int, float)):
        return f"the number {value}" if len(repr(value)) <= 20 else "a number"
    return "an object" if isinstance(value, dict) else "a list"


def _keys_problem(record: dict[str, Any],
                  keys: tuple[tuple[str, bool, str | tuple[str, ...]], ...], where: str,
                  *, null_is_unknown: bool = False) -> str | None:
    """The first missing required key or key of the wrong type. `null_is_unknown`: an
    optional key holding null is not known, as its absence is (thread and comment records)."""
    missing = [key for key, required, _ in keys if required and key not in record]
    if missing:
        return f"{where}missing required key{'s' if len(missing) > 1 else ''} {', '.join(missing)}"
    for key, required, want in keys:
        if null_is_unknown and not required and record.get(key, 0) is None:
            continue
        if key in record and not _fits(record[key], want):
            wanted = f"one of {', '.join(want)}" if isinstance(want, tuple) else want
            return f"{where}{key} must be {wanted}, got {_json_type(record[key])}"
    return None


def thread_problem(record: dict[str, Any]) -> str | None:
    """What makes a decoded JSON object not a contract `thread` (the first problem, naming
    the key, and the comment by its 1-based position), or None when it is one."""
    problem = (_keys_problem(record, _THREAD_KEYS, "", null_is_unknown=True)
               or _times_problem(record, ("created_at", "closed_at"), ""))
    if problem is not None:
        return problem
    for position, comment in enumerate(record["comments"], 1):
        if not isinstance(comment, dict):
            return f"comment {position} must be an object, got {_json_type(comment)}"
        where = f"comment {position}: "
        problem = (_keys_problem(comment, _COMMENT_KEYS, where, null_is_unknown=True)
                   or _times_problem(comment, ("created_at",), where))
        if problem is not None:
            return problem
    return _rules_problem(record)


def _times_problem(record: dict[str, Any], keys: tuple[str, ...], where: str) -> str | None:
    """The first of `keys` holding a string that is no ISO 8601 time or date (the contract's
    type: "yesterday" was accepted and read as a time not known, left80)."""
    for key in keys:
        text = record.get(key)
        if isinstance(text, str) and _instant(text) is None:
            return f"{where}{key} must be an ISO 8601 time or date, got {_json_type(text)}"
    return None


# The contract's rules across keys: `merged` only for pull requests, comments in time order.
# A record breaking one was analysed as if it were right (an issue's review state read from a
# state it cannot have, replies in an order that never happened). Not checked: that `id`
# reads `repo#number` (the project's own written sets use ids of their own, and the contract
# calls unknown keys ignored rather than the id a key). Times that are not ISO 8601 are
# refused before (_times_problem).
_BARE_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def _instant(text: Any) -> Any:
    """A comment time as a date (a bare date) or an aware datetime (no offset: UTC); None
    when it is not known or not readable."""
    from datetime import UTC, date, datetime

    if not isinstance(text, str):
        return None
    try:
        if _BARE_DATE.fullmatch(text):
            return date.fromisoformat(text)
        when = datetime.fromisoformat(text)
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _earlier(a: Any, b: Any) -> bool:
    """Whether instant `a` is before `b`; a bare date is compared by its day."""
    from datetime import UTC, datetime

    if isinstance(a, datetime) and isinstance(b, datetime):
        return a < b
    day_a = a.astimezone(UTC).date() if isinstance(a, datetime) else a
    day_b = b.astimezone(UTC).date() if isinstance(b, datetime) else b
    return bool(day_a < day_b)


def _rules_problem(record: dict[str, Any]) -> str | None:
    from datetime import datetime

    if record["state"] == "merged" and record["kind"] != "pull_request":
        article = "an" if record["kind"] == "issue" else "a"
        return f"state merged is only for pull requests, this is {article} {record['kind']}"
    latest: tuple[int, Any, str] | None = None  # (position, instant, text) of the latest so far
    for position, comment in enumerate(record["comments"], 1):
        text = comment.get("created_at")
        when = _instant(text)
        if when is None:
            continue
        if latest is not None and _earlier(when, latest[1]):
            return (f"comments must be in time order: comment {position} ({text}) is earlier "
                    f"than comment {latest[0]} ({latest[2]})")
        if (latest is None or isinstance(when, datetime) or not isinstance(latest[1], datetime)
                or _earlier(latest[1], when)):  # a bare date later than the latest day
            latest = (position, when, text)
    return None


# A lone UTF-16 surrogate, escaped in JSON ("\\ud83d" without its pair: a text cut by a tool
# that counts UTF-16 units) decodes to a str no UTF-8 codec can encode: the analyzers failed
# on it, and writing it out failed the run. Read as U+FFFD, as the app reads webhook payloads.
_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _without_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_without_surrogates(k): _without_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_surrogates(v) for v in value]
    return value


def _decoded(raw: str) -> Any:
    """The JSON value of a line (bot.files.json_line: BadJsonLine says why there is none),
    lone surrogates read as U+FFFD (the cheap test first)."""
    value = json_line(raw)
    if "\\u" in raw and _ESCAPED_SURROGATE.search(raw):
        value = _without_surrogates(value)
    return value


# A broken line's id, when the line opens with it well formed: `{"id": "..."` as the first key.
# Only there: a '"id":' further on could be inside a string value (a title quoting JSON),
# which only a full parse tells. The match is anchored and linear, and the string is read by
# the JSON decoder itself (escapes, surrogates as the records' are).
_OPENING_ID = re.compile(r'[ \t\r\n]*\{[ \t\r\n]*"id"[ \t\r\n]*:[ \t\r\n]*(?=")')


def _opening_id(raw: str) -> str | None:
    """The id a line that is no valid JSON opens with (`{"id": "o/r#1", ...`), else None."""
    opening = _OPENING_ID.match(raw)
    if opening is None:
        return None
    try:
        rid, _ = json.JSONDecoder().raw_decode(raw, opening.end())
    except ValueError:  # the id itself cut short or broken
        return None
    return _without_surrogates(rid) if isinstance(rid, str) else None


def _analyze_line(number: int, raw: str, pool: Any) -> tuple[str, str | None]:
    """(output line, error message or None) of input line `number`, a non-blank line."""
    from analyzers.analyze import analyze_thread

    record: Any = None
    problem: str | None = None
    if number == 1:  # a UTF-8 byte-order mark (files saved by Windows tools) is no record's
        raw = raw.removeprefix("\ufeff")
    try:
        record = _decoded(raw)
    except BadJsonLine as exc:
        problem = str(exc)
        record = {"id": _opening_id(raw)}
    if problem is None and not isinstance(record, dict):
        problem = f"a thread record must be a JSON object, got {type(record).__name__}"
    if problem is None:
        problem = thread_problem(record)
    if problem is None:
        try:
            result = analyze_thread(record, pool)
        except Exception as exc:  # an analyzer bug must not lose the other records
            problem = f"analysis failed: {type(exc).__name__}: {exc}"
    message = None
    if problem is not None:
        message = f"line {number}: {problem}"
        rid = record.get("id") if isinstance(record, dict) else None
        result = {"id": rid if isinstance(rid, str) else None, "line": number, "error": message}
    return json.dumps(result, ensure_ascii=False) + "\n", message


def _records(lines: Any) -> Iterator[tuple[int, str]]:
    """The non-blank lines of `lines` with their 1-based line numbers. A UTF-8 byte-order mark
    opening the first line is no part of it: a file that is only the mark (an empty file saved
    by Notepad), or has it on a line of its own, was given an error record for it ("line 1: not
    valid JSON", exit 1) and one output line more than it has records."""
    for number, raw in enumerate(lines, 1):
        if number == 1:
            raw = raw.removeprefix("\ufeff")
        if raw.strip():
            yield number, raw


def _numbered_chunks(lines: Any, size: int) -> Iterator[list[tuple[int, str]]]:
    """The records of `lines` (_records) with their 1-based line numbers, `size` at a time."""
    chunk: list[tuple[int, str]] = []
    for number, raw in _records(lines):
        chunk.append((number, raw))
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


_CHUNK = 64  # records per --jobs task: enough that the hop to a worker costs little

# The pool of a --jobs run, set in the parent before it forks: the workers inherit it (pages
# shared copy-on-write) instead of each receiving a pickled copy.
_FORKED_POOL: Any = None


def _analyze_chunk(chunk: list[tuple[int, str]]) -> list[tuple[str, str | None]]:
    return [_analyze_line(number, raw, _FORKED_POOL) for number, raw in chunk]


def _analyzed_in_processes(lines: Any, pool: Any, jobs: int) -> Iterator[tuple[str, str | None]]:
    """_analyze_line of each non-blank line, in input order, computed by `jobs` forked
    processes. At most a few chunks per process are in flight, so memory stays bounded
    however long the input is, and results are written as they come."""
    import multiprocessing
    from collections import deque
    from concurrent.futures import Future, ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    from bot.analysis import load_analyzers

    global _FORKED_POOL
    # Before forking, so the workers start with everything loaded (analyze_command has
    # loaded and frozen it already: then both are a tiny thread's analysis and a no-op;
    # other callers of analyze_lines may not have).
    load_analyzers(pool)
    _FORKED_POOL = pool
    gc.freeze()  # objects loaded so far stay out of the collector: their pages stay shared
    in_flight: deque[Future[list[tuple[str, str | None]]]] = deque()
    try:
        # concurrent.futures rather than multiprocessing.Pool: a worker that dies (killed,
        # out of memory) fails the run (BrokenProcessPool) instead of hanging it.
        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork")) as workers:
            for chunk in _numbered_chunks(lines, _CHUNK):
                in_flight.append(workers.submit(_analyze_chunk, chunk))
                if len(in_flight) >= 4 * jobs:
                    yield from in_flight.popleft().result()
            while in_flight:
                yield from in_flight.popleft().result()
    except BrokenProcessPool as exc:
        raise WorkerDied(str(exc)) from None
    finally:
        _FORKED_POOL = None


def analyze_lines(lines: Any, out: TextIO, pool: Any, err: TextIO, jobs: int = 1
                  ) -> tuple[int, int]:
    """Analyse each JSON line of `lines` into `out`, in `jobs` processes when more than 1.
    Returns (records written, bad lines)."""
    if jobs > 1:
        analyzed: Iterator[tuple[str, str | None]] = _analyzed_in_processes(lines, pool, jobs)
    else:
        analyzed = (_analyze_line(number, raw, pool) for number, raw in _records(lines))
    from bot.cli import printable

    written = bad = 0
    for line, message in analyzed:
        if message is not None:
            bad += 1
            # the message quotes the value refused: no control or direction character of it
            # reaches the terminal (the error record keeps the text as read)
            print(f"rltracker analyze: {printable(message)}", file=err)
        out.write(line)
        written += 1
    return written, bad


# Without --jobs, an input file at least this large is analysed in one process per CPU: at
# ~3-4 ms per thread it holds seconds of analysis, against ~0.1 s to fork and warm workers.
AUTO_JOBS_BYTES = 1 << 20


def _cpus() -> int:
    """CPUs this process may run on (its affinity mask where the system has one)."""
    import os

    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def job_count(requested: int | None, input_path: str = "-") -> tuple[int, str | None]:
    """(processes to use, a note for stderr or None) for --jobs `requested` (0: one per CPU;
    None, not given: one per CPU when `input_path` is a file of AUTO_JOBS_BYTES or more,
    else 1). Workers are forked so they share the loaded analyzers and index; where fork
    does not exist (Windows) or is not safe (macOS) the command runs in one process, and
    says so when --jobs asked for more."""
    import multiprocessing
    import os

    can_fork = sys.platform == "linux" and "fork" in multiprocessing.get_all_start_methods()
    if requested is None:
        try:
            large = input_path != "-" and os.path.getsize(input_path) >= AUTO_JOBS_BYTES
        except OSError:
            large = False  # unreadable: reported when it is opened
        return (_cpus() if large and can_fork else 1), None
    jobs = requested or _cpus()
    if jobs > 1 and not can_fork:
        return 1, f"--jobs {requested}: worker processes need fork (Linux); running in one process"
    return jobs, None


@contextmanager
def _collector_off() -> Iterator[None]:
    """The cyclic collector off while the command loads what it keeps until the end: spaCy
    and the analyzers' modules and tables, the pool's index (hundreds of thousands of
    objects, no garbage cycles among them). Collecting during that walks them again and
    again (~0.14 s of a 1.9 s start); what was loaded is then frozen out of its reach, so
    the collections of the analysis that follows do not walk it either. The little cyclic
    garbage start-up leaves (~2,000 objects with a 100,000-paper pool) is frozen with it:
    collecting it first would walk everything once more (~0.1 s)."""
    from analyzers.papers import collector_paused

    with collector_paused():
        yield
        gc.freeze()


_REASONS = {errno.ENOENT: "no such file", errno.EISDIR: "is a folder",
            errno.EACCES: "permission denied", errno.EPERM: "permission denied",
            errno.ENOTDIR: "a part of the path is not a folder"}


def file_problem(exc: OSError, options: list[tuple[str, str | None]]) -> str:
    """A failed file as one plain line: the option that named it (INPUT, -o, --papers, the
    first of `options` whose path it is), the path, and what is wrong ("no such file", "is a
    folder", "permission denied"; else the system's reason, as the other commands say it:
    "No space left on device"). A failure naming
    none of them (no path, stdout) is said as it was."""
    reason = _REASONS.get(exc.errno or 0) or exc.strerror or str(exc)
    for option, path in options:
        if path and path != "-" and exc.filename is not None and os.fsdecode(exc.filename) == path:
            return f"{option} {path}: {reason}"
    if exc.filename is not None:
        return f"{os.fsdecode(exc.filename)}: {reason}"
    return str(exc)


def _same_file(a: str | None, b: str | None) -> bool:
    """Whether paths `a` and `b` (neither `-`) name one existing file, through links too."""
    if not a or not b or "-" in (a, b):
        return False
    try:
        return os.path.samefile(a, b)
    except OSError:  # one does not exist (yet): said when it is opened
        return False


def analyze_command(args: argparse.Namespace) -> int:
    from bot.analysis import load_analyzers

    pool = None
    if getattr(args, "papers", None) == "-" and args.input == "-":
        # The pool would read all of stdin and leave no thread to analyse: exit 0, no output.
        print("rltracker analyze: --papers - and INPUT - both read stdin; give one of them "
              "as a file", file=sys.stderr)
        return 2
    if _same_file(getattr(args, "papers", None), args.output):
        # (INPUT as -o is allowed, as sort -o: the pool is never the output; contract66)
        print(f"rltracker analyze: -o {args.output} is the --papers pool {args.papers}: the "
              "analysis would replace it; give another output file", file=sys.stderr)
        return 2
    if getattr(args, "papers", None):
        try:
            with _collector_off():
                pool = load_pool(args.papers, use_cache=not getattr(args, "no_cache", False))
        except PoolError as exc:
            from bot.cli import printable

            print(f"rltracker analyze: --papers {printable(exc)}", file=sys.stderr)
            return 2
        except OSError as exc:
            print(f"rltracker analyze: {file_problem(exc, [('--papers', args.papers)])}",
                  file=sys.stderr)
            return 2
    jobs, note = job_count(getattr(args, "jobs", 1), args.input)
    if note:
        print(f"rltracker analyze: {note}", file=sys.stderr)
    try:
        with _open_in(args.input) as src, _open_out(args.output or "-") as out:
            with _collector_off():
                load_analyzers(pool)
            _, bad = analyze_lines(src, out, pool, sys.stderr, jobs)
    except BrokenPipeError as exc:
        from bot.cli import stdout_reader_gone

        if (args.output or "-") == "-" and stdout_reader_gone():
            raise  # `| head -1` read what it wanted: the command stops quietly (bot.cli.main)
        print(f"rltracker analyze: {exc}", file=sys.stderr)
        return 2
    except NotUtf8 as exc:
        print(f"rltracker analyze: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        said = file_problem(exc, [("INPUT", args.input), ("-o", args.output)])
        print(f"rltracker analyze: {said}", file=sys.stderr)
        return 2
    except WorkerDied as exc:
        lost = ("output is incomplete" if (args.output or "-") == "-"
                else f"{args.output} is left as it was")
        print(f"rltracker analyze: a worker process died ({exc}); {lost}", file=sys.stderr)
        return 2
    return 1 if bad else 0
