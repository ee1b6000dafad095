"""Files the app writes (`analyze -o FILE`, `verdicts export --out FILE`, `report --out DIR`):
written whole or not at all. A foundation module: bot.cli and bot.site both write through it.

Opened in place, FILE was emptied before anything was written: a command that stopped part way
(input unreadable, a disk that filled up, interrupted) lost the previous file and left half a
record at the end of the new one. The text goes to a new file beside FILE that replaces it when
the command ran through; when it stopped, FILE is as it was and nothing is left beside it. A
symbolic link keeps pointing at the file written, and the file keeps its permissions. What is
not a regular file (/dev/null, a FIFO), a file that may not be written (read-only: refused as
before), or a folder no file can be made in, is opened in place. A write that fails names FILE
(an OSError of a write names no file), so the command says which file in its one line.
"""

from __future__ import annotations

import json
import os
import secrets
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO, cast

# The codec of each byte-order mark, longest first (UTF-32 LE's starts as UTF-16 LE's).
_BOM_CODECS = ((b"\xff\xfe\x00\x00", "utf-32"), (b"\x00\x00\xfe\xff", "utf-32"),
               (b"\xef\xbb\xbf", "utf-8-sig"), (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16"))
# Byte-order marks of the encodings Windows tools write besides UTF-8 (PowerShell 5's `>` and
# Out-File write UTF-16). Read as UTF-8, every record of such a file was an error record (one
# more than there were records): `analyze` wrote them over -o FILE, `papers import` skipped
# every line as "not UTF-8" or "not valid JSON".
_OTHER_BOMS = tuple((codec.upper(), bom) for bom, codec in _BOM_CODECS if codec != "utf-8-sig")


def encoding_problem(head: bytes, name: str) -> str | None:
    """What to say of an input of JSON lines starting with `head` (its first 4 bytes) when it
    is not UTF-8, else None."""
    for encoding, bom in _OTHER_BOMS:
        if head.startswith(bom):
            return (f"{name} is {encoding} (it starts with a {encoding} byte-order mark); records "
                    f"are UTF-8 JSON lines: convert it first, e.g. iconv -f {encoding} -t UTF-8")
    return None


def decoded_text(blob: bytes) -> str:
    """A text file's bytes as text: in the encoding its byte-order mark names (the mark is no
    part of the text), else UTF-8; what does not decode is U+FFFD. A CONTRIBUTING file saved
    in UTF-16 by a Windows editor was read as UTF-8, every rule of it lost (contract66)."""
    for bom, codec in _BOM_CODECS:
        if blob.startswith(bom):
            return blob.decode(codec, errors="replace")
    return blob.decode("utf-8", errors="replace")


class BadJsonLine(ValueError):
    """A line of JSON lines that holds no JSON value: why, in one phrase for the user."""


# A line of arrays or objects nested thousands deep (valid JSON) raises RecursionError, and an
# integer of more than sys.get_int_max_str_digits() digits (4,300) a ValueError that is no
# JSONDecodeError: each stopped a run with a traceback as a bug (analyze's input and pool,
# papers import, which lost the papers of the batch in hand).
TOO_DEEP = "JSON nested too deeply to read"
_TOO_LONG = "a number too long to read (more than {} digits)"


def json_line(line: str) -> Any:
    """The JSON value of one line of JSON lines (`analyze` INPUT and --papers, `papers
    import`); BadJsonLine says why it holds none, at which column. The line feed ending the
    line is no part of it: counted by the decoder as a line of its own, a record cut short
    (a write interrupted, `head -c`) was said to be wrong "at column 1". A line ending where
    the decoder wanted more is said to end there, cut short."""
    text = line.rstrip(" \t\r\n")  # JSON's whitespace: nothing that would make a line valid
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        at_end = exc.pos >= len(text)
        # ("Unterminated string starting at" ends with its own "at")
        where = "" if at_end else f"{'' if exc.msg.endswith(' at') else ' at'} column {exc.colno}"
        if at_end or exc.msg.startswith("Unterminated string"):  # no closing quote on the line
            where += f": the line ends at column {len(text)}, cut short?"
        raise BadJsonLine(f"not valid JSON ({exc.msg}{where})") from None
    except RecursionError:
        raise BadJsonLine(TOO_DEEP) from None
    except ValueError:
        raise BadJsonLine(_TOO_LONG.format(sys.get_int_max_str_digits())) from None


class NamedStream:
    """A text stream whose failed writes name it. An OSError of a write names no file, and
    bot.cli.errors reported it as a bug with its traceback: standard output on a disk that
    filled up (a quota, a file past its size limit), or a file written through it. It names
    `name` now (`<stdout>`, the file's path), so it is one line like a file that cannot be
    written. A reader gone (BrokenPipeError) is left as it is for main. Everything else is
    the stream's own (reconfigure, fileno, buffer, ...)."""

    def __init__(self, inner: TextIO, name: str) -> None:
        self._inner = inner
        self._name = name

    def _named(self, call: Any, *args: Any) -> Any:
        try:
            return call(*args)
        except BrokenPipeError:
            raise
        except OSError as exc:
            if exc.filename is None:
                exc.filename = self._name
            raise

    def write(self, text: str) -> int:
        return int(self._named(self._inner.write, text))

    def writelines(self, lines: Any) -> None:
        self._named(self._inner.writelines, lines)

    def flush(self) -> None:
        self._named(self._inner.flush)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _named(exc: OSError, path: str) -> OSError:
    if exc.filename is None:
        exc.filename = path
    return exc


class _Terminated(BaseException):
    """SIGTERM arrived while a file was being written beside its target."""


def _unwind(signum: int, frame: object) -> None:
    raise _Terminated


def _default_sigterm_in_child() -> None:
    """A process forked while the handler is set (analyze --jobs workers) ends by SIGTERM as
    before: inherited, the handler made a SIGTERM sent to one worker end the whole run."""
    import signal

    if signal.getsignal(signal.SIGTERM) is _unwind:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


os.register_at_fork(after_in_child=_default_sigterm_in_child)


@contextmanager
def _ended_by_sigterm() -> Iterator[None]:
    """SIGTERM (timeout, kill, a container stopped) ended the process where it stood, and the
    file being written beside its target stayed there, hidden, one more per run stopped. While
    the block runs, SIGTERM unwinds it (the file is removed on the way), then ends the process
    by the signal as before. Left alone where the signal is handled already, or off the main
    thread (where no handler can be set)."""
    import signal
    import threading

    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL):
        yield
        return

    signal.signal(signal.SIGTERM, _unwind)  # forked children reset it (_default_sigterm_in_child)
    try:
        yield
    except _Terminated:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)  # ends here, as the signal asked
        raise
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


@contextmanager
def replaced_whole(path: str) -> Iterator[TextIO]:
    """A UTF-8 text file standing for `path`, replacing it when the block ends normally."""
    with _ended_by_sigterm(), _replaced_whole(path) as fh:
        yield fh


@contextmanager
def _replaced_whole(path: str) -> Iterator[TextIO]:
    target = os.path.realpath(path)
    try:
        mode: int | None = os.stat(target).st_mode
    except OSError:
        mode = None
    tmp = os.path.join(os.path.dirname(target),
                       f".{os.path.basename(target)}.{secrets.token_hex(4)}.tmp")
    written = False  # the block ran through: what fails now is the file's last write or close
    try:
        if mode is not None and not (stat.S_ISREG(mode) and os.access(target, os.W_OK)):
            raise OSError("not a regular file, or one that may not be written: as it is")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # umask applies
    except OSError:
        try:
            with open(path, "w", encoding="utf-8") as fh:
                yield cast(TextIO, NamedStream(fh, path))
                written = True
        except OSError as exc:
            raise (_named(exc, path) if written else exc) from None
        return
    try:
        if mode is not None:
            os.fchmod(fd, stat.S_IMODE(mode))
        with open(fd, "w", encoding="utf-8") as fh:
            yield cast(TextIO, NamedStream(fh, path))
            written = True
            fh.flush()
            os.fsync(fh.fileno())  # on disk before it takes the name: a crash leaves old or new
        os.replace(tmp, target)
    except OSError as exc:
        os.unlink(tmp)
        raise (_named(exc, path) if written else exc) from None
    except BaseException:
        os.unlink(tmp)
        raise
