"""The `rltracker` command. Each subcommand's work lives in the module that owns it; this file
only parses arguments and imports that module when the subcommand runs (start-up stays fast).
A failure the user can act on is one line on stderr (bot.cli.errors); --debug adds tracebacks."""

from __future__ import annotations

import argparse
import errno
import importlib
import io
import os
import re
import sys
from collections.abc import Callable, Sequence
from datetime import date
from typing import TextIO

from bot.config import log_level, parse_port
from bot.files import NamedStream
from bot.logs import command_logging

DESCRIPTION = ("rltracker: a GitHub App and tracker that links the issues, pull requests and "
               "discussions of seven RL post-training frameworks to research papers, answers "
               "training-failure reports with methods and options, and serves tracker pages.")
# subcommand -> "module:function"; the function takes the parsed namespace, returns an exit code.
COMMANDS = {
    "serve": "bot.server:serve_command",
    "migrate": "bot.store.migrate:migrate_command",
    "analyze": "bot.cli.analyze:analyze_command",
    "replay": "bot.webhooks.replay:replay_command",
    "sync": "bot.cli.sync:sync_command",
    "report": "bot.cli.report:report_command",
    "rules": "bot.cli.rules:rules_command",
    "stats": "bot.site.stats:stats_command",
    "papers": "bot.github.papers:papers_command",
    "preview": "bot.speaking.preview:preview_command",
    "study": "bot.site.study:study_command",
    "deliveries": "bot.cli.deliveries:deliveries_command",
    "verdicts": "bot.cli.verdicts:verdicts_command",
    "repos": "bot.cli.repos:repos_command",
}


# Commands that read or need a migrated database. Before they open it, a SQLite file that
# does not exist is said to be missing (bot.config.require_database): opening it created an
# empty file, the command said "no tables", and the empty file stayed. Then the database's
# revision is checked (bot.store.migrate.check_revision, ops64): behind this code or ahead of
# it, the command refuses with serve's line. Not here: `migrate` creates the database,
# `serve` checks both itself (bot.server), `rules` skips a missing one and checks the
# revision when it reads the cache, `analyze` and `replay` use none.
NEEDS_DATABASE = frozenset({"stats", "deliveries", "verdicts", "study", "report", "repos",
                            "preview", "papers", "sync"})


def framework_id(text: str) -> str | None:
    """The catalog's framework id `text` means: any case, `-`, `_` or a space between words, as
    the pages read it (`VERL`, `NeMo_RL`); None when it names none."""
    from analyzers.catalog import load_catalog
    from bot.store.types import canonical_id

    return canonical_id(text, load_catalog().frameworks)


def framework_hint(text: str) -> str:
    """For a framework name that is none: `; did you mean verl?` when a framework is close to
    it (a typo, or the framework's repository, current or former name), else ``."""
    import difflib

    from analyzers.catalog import load_catalog

    frameworks = load_catalog().frameworks
    typed = text.strip().lower()
    for fid, framework in frameworks.items():
        if typed in (repo.lower() for repo in framework.repos):
            return f"; did you mean {fid}?"
    close = difflib.get_close_matches(typed, list(frameworks), n=1, cutoff=0.6)
    return f"; did you mean {close[0]}?" if close else ""


# The exit statuses every command shares (`rltracker --help`, README "When something is wrong");
# each command's --help adds what its own 0, 1 and 2 mean.
EXIT_STATUS = ("exit status: 0 done; 1 a failure while it ran (the database, GitHub, a bad line "
               "of analyze's input); 2 a bad argument or setting, or a file (standard output "
               "included) that cannot be read or written; 130 interrupted (Ctrl-C: a file given "
               "to analyze -o or verdicts export --out is left as it was); 141 the reader of "
               "standard output went away (| head), quietly. Each command's --help says what "
               "its own mean.")


def printable(text: object, keep: str = "") -> str:
    """Third-party text for the terminal (a repository's files quoted by `rules`, a delivery's
    stored error): control and format characters (escape sequences, carriage returns, Unicode
    direction overrides, isolates and marks, which can reorder what is read) become spaces;
    the characters in `keep` (a newline, a tab) stay. `--json` outputs keep the text as it is."""
    return "".join(ch if ch.isprintable() or ch in keep else " " for ch in str(text))


class _Parser(argparse.ArgumentParser):
    """A usage error is one line too: what is wrong and where the help is, not the usage text."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: {message} (see `{self.prog} --help`)\n")


def _port(text: str) -> int:
    try:
        return parse_port(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r}: {exc}") from None


# The largest count --limit and --jobs take: a number past it (a key held down) reached the
# database (`deliveries --limit`: an OverflowError or DBAPIError traceback as a bug) or the
# process pool (`analyze --jobs`: an OverflowError). --jobs has a bound of its own: more
# processes than a machine has CPUs only cost memory, each holding the analyzers; so has serve's
# --workers (a key held down spawned a process per unit until memory ran out). Other counts
# have their own types (preview's --days: 1 to 90).
MAX_LIMIT = 2**31 - 1
MAX_JOBS = 1024


def _count(text: str, most: int | None = None) -> int:
    """A whole number of things, 0 or more (to `most` when given): --workers, --jobs, --days,
    --limit."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a whole number, 0 or more")
    if most is not None and value > most:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a whole number from 0 to {most}")
    return value


def _jobs(text: str) -> int:
    return _count(text, MAX_JOBS)


def _limit(text: str) -> int:
    return _count(text, MAX_LIMIT)


def _from_1(text: str, most: int, rule: str) -> int:
    """A whole number of things from 1 to `most`: one message, `rule`, for every value outside
    (0, -1, x, above `most`)."""
    try:
        value = _count(text, most)
    except argparse.ArgumentTypeError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected {rule}")
    return value


def _limit_from_1(text: str) -> int:
    """verdicts wanted's --limit: 1 or more."""
    return _from_1(text, MAX_LIMIT, "a whole number from 1")


def _days(text: str) -> int:
    """preview's --days: 1 to MAX_DAYS."""
    from bot.speaking.preview import MAX_DAYS  # imported only when --days is given

    return _from_1(text, MAX_DAYS, f"a whole number from 1 to {MAX_DAYS}")


_REPO_NAME = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")


def _repo_name(text: str) -> str:
    """OWNER/NAME, as GitHub spells repositories (sync --repo, preview)."""
    if not _REPO_NAME.fullmatch(text.strip()):
        raise argparse.ArgumentTypeError(f"{text!r}: expected a repository as OWNER/NAME, "
                                         "e.g. verl-project/verl")
    return text.strip()


# One label of a host name (RFC 1123): letters, digits and hyphens, not at either end; and
# underscores, which resolvers take (/etc/hosts, container names) though RFC 1123 does not.
_HOST_LABEL = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?")


def _host(text: str) -> str:
    """serve --host: an IP address or a host name. Anything else (999.1.1.1, `[::1]`) went on
    to bind and exited 1 as a failure while running, after asking the resolver; `1.2.3` was
    read by inet_aton as 1.2.0.3; an empty value (an unset variable) served on every
    interface (left64)."""
    import ipaddress

    value = text.strip()
    if not value:
        raise argparse.ArgumentTypeError("the host is empty (an unset shell variable?)")
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        pass
    labels = value.removesuffix(".").split(".")
    # (a last label of digits only is no host name: a mistyped IPv4 address)
    if len(value) <= 253 and all(_HOST_LABEL.fullmatch(label) for label in labels) \
            and not labels[-1].isdigit():
        return value
    hint = " (without brackets)" if value.startswith("[") else ""
    raise argparse.ArgumentTypeError(f"{text!r}: expected an IP address{hint} (127.0.0.1, "
                                     "0.0.0.0, ::1) or a host name")


# arXiv's categories (https://arxiv.org/category_taxonomy): each archive with its subject
# classes; an archive with none (hep-th) is a category by itself. `--category banana` (any
# word the old pattern took) was sent to arXiv, which answers an unknown category with no
# papers: the fetch "succeeded" with nothing (left80).
_ARXIV_CATEGORIES: dict[str, tuple[str, ...]] = {
    "astro-ph": ("CO", "EP", "GA", "HE", "IM", "SR"),
    "cond-mat": ("dis-nn", "mes-hall", "mtrl-sci", "other", "quant-gas", "soft", "stat-mech",
                 "str-el", "supr-con"),
    "cs": ("AI", "AR", "CC", "CE", "CG", "CL", "CR", "CV", "CY", "DB", "DC", "DL", "DM", "DS",
           "ET", "FL", "GL", "GR", "GT", "HC", "IR", "IT", "LG", "LO", "MA", "MM", "MS", "NA",
           "NE", "NI", "OH", "OS", "PF", "PL", "RO", "SC", "SD", "SE", "SI", "SY"),
    "econ": ("EM", "GN", "TH"),
    "eess": ("AS", "IV", "SP", "SY"),
    "gr-qc": (), "hep-ex": (), "hep-lat": (), "hep-ph": (), "hep-th": (),
    "math": ("AC", "AG", "AP", "AT", "CA", "CO", "CT", "CV", "DG", "DS", "FA", "GM", "GN",
             "GR", "GT", "HO", "IT", "KT", "LO", "MG", "MP", "NA", "NT", "OA", "OC", "PR", "QA",
             "RA", "RT", "SG", "SP", "ST"),
    "math-ph": (),
    "nlin": ("AO", "CD", "CG", "PS", "SI"),
    "nucl-ex": (), "nucl-th": (),
    "physics": ("acc-ph", "ao-ph", "app-ph", "atm-clus", "atom-ph", "bio-ph", "chem-ph",
                "class-ph", "comp-ph", "data-an", "ed-ph", "flu-dyn", "gen-ph", "geo-ph",
                "hist-ph", "ins-det", "med-ph", "optics", "plasm-ph", "pop-ph", "soc-ph",
                "space-ph"),
    "q-bio": ("BM", "CB", "GN", "MN", "NC", "OT", "PE", "QM", "SC", "TO"),
    "q-fin": ("CP", "EC", "GN", "MF", "PM", "PR", "RM", "ST", "TR"),
    "quant-ph": (),
    "stat": ("AP", "CO", "ME", "ML", "OT", "TH"),
}
# Each category in arXiv's spelling, by its lower-case form (`cs.lg` is taken as cs.LG).
_CATEGORY_SPELLING = {
    name.lower(): name
    for archive, classes in _ARXIV_CATEGORIES.items()
    for name in ((f"{archive}.{c}" for c in classes) if classes else (archive,))
}


def _category(text: str) -> str:
    """papers fetch --category, in arXiv's spelling: an empty one (an unset variable) was sent
    to arXiv as `cat:` and counted the stored papers of every category for where to start; one
    with spaces (`cs.LG OR all`) changed the query (left64); an unknown one fetched nothing."""
    spelled = _CATEGORY_SPELLING.get(text.strip().lower())
    if spelled is None:
        raise argparse.ArgumentTypeError(
            f"{text!r}: not an arXiv category (e.g. cs.LG, cs.CL, stat.ML, hep-th; the list: "
            "https://arxiv.org/category_taxonomy)")
    return spelled


def _http_url(text: str) -> str:
    """An http(s) URL with a host (replay --url): anything else failed once per file."""
    from urllib.parse import urlsplit

    parts = urlsplit(text.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise argparse.ArgumentTypeError(f"{text!r}: expected an http(s) URL, e.g. "
                                         "http://localhost:8000/webhook")
    return text.strip()


def _path(text: str) -> str:
    """A file or folder path, `-` where the option reads or writes a standard stream. An empty
    one (`--papers "$POOL"` with the variable unset) was read as no path: analyze ran without
    its pool, -o wrote to stdout, report --out wrote nothing, each saying nothing."""
    if not text.strip():
        raise argparse.ArgumentTypeError("the path is empty (an unset shell variable?)")
    return text


def _iso_date(text: str) -> str:
    try:
        date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a date YYYY-MM-DD") from None
    return text


def _add_debug_flag(parser: argparse.ArgumentParser, *, top: bool = False) -> None:
    """--debug before or after the subcommand (the subcommand's parser must not reset it)."""
    parser.add_argument("--debug", action="store_true", default=False if top else argparse.SUPPRESS,
                        help="print the traceback of a failure (also RLTRACKER_LOG_LEVEL=DEBUG)")
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):
                _add_debug_flag(child)


def _name_subcommands(parser: argparse.ArgumentParser) -> None:
    """A subcommand slot is named by its choices, as the usage line shows them: argparse
    otherwise names a missing one by its `dest` ("required: papers_command")."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            action.metavar = "{" + ",".join(action.choices) + "}"
            for child in dict.fromkeys(action.choices.values()):
                _name_subcommands(child)


# The namespace attribute prefix under which a conditional option records that it was given
# (its option string and itself): read and removed by parse_arguments.
_GIVEN = "_given_"


def _applies(action: argparse.Action, when: Callable[[argparse.Namespace], bool]) -> None:
    """The one rule for options that do something only with others (reread82, left83): given
    where `when(args)` is false, the option would be accepted and do nothing (`repos --json
    resume X` resumed and printed no JSON), so parse_arguments refuses it as an unknown flag."""

    class _Recorded(type(action)):  # type: ignore[misc]
        def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                     values: object, option_string: str | None = None) -> None:
            super().__call__(parser, namespace, values, option_string)
            setattr(namespace, _GIVEN + self.dest, (option_string, self))

    action.__class__ = _Recorded
    action.applies = when  # type: ignore[attr-defined]


def _parent_options_apply_alone(parser: argparse.ArgumentParser) -> None:
    """A command whose subcommand is optional (`repos`, `deliveries`): its own options are
    the listing's, done when no subcommand is given; before a subcommand they did nothing."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            if not action.required:
                slot = action.dest
                for option in parser._actions:
                    if option.option_strings and not isinstance(option, argparse._HelpAction):
                        _applies(option, lambda args, slot=slot: getattr(args, slot) is None)
            for child in dict.fromkeys(action.choices.values()):
                _parent_options_apply_alone(child)


def parse_arguments(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """The parsed arguments; an unknown flag, or one given where it does nothing (_applies),
    is one line naming the subcommand and its help, exit 2."""
    args, unknown = parser.parse_known_args(argv)
    for key in [k for k in vars(args) if k.startswith(_GIVEN)]:
        option_string, action = getattr(args, key)
        delattr(args, key)
        if not action.applies(args):
            unknown.append(option_string)
    if unknown:
        # argparse says a subcommand's unknown flag as the top parser's ("rltracker:
        # unrecognized arguments: --jsn (see `rltracker --help`)"), whose help lists no flag of
        # the subcommand: said as the subcommand's, pointing at its help (user79).
        parser.prog = f"{parser.prog} {command_name(args)}"
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    return args


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="rltracker", description=DESCRIPTION, epilog=EXIT_STATUS)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("serve", help="run the web app, the inbox worker and the scheduler",
                       epilog="exit status: 0 stopped by SIGTERM, SIGINT or SIGHUP (also while "
                              "starting); 1 a failure while it started or ran (the port taken, "
                              "the database, behind or ahead of the migrations, a worker "
                              "process or the inbox worker that ended by itself); 2 a bad "
                              "setting or argument (no GITHUB_WEBHOOK_SECRET without --dev, no "
                              "RLTRACKER_PUBLIC_URL when it would post, a SQLite file that does "
                              "not exist).")
    p.add_argument("--host", type=_host, default=None,
                   help="the address to listen on (default: 0.0.0.0, every interface; with "
                        "--dev 127.0.0.1, this machine only)")
    p.add_argument("--port", type=_port, default=None, help="default: $PORT or 8000")
    p.add_argument("--dev", action="store_true",
                   help="a random webhook secret (printed), dry-run, and 127.0.0.1 unless --host")
    p.add_argument("--no-scheduler", action="store_true", help="do not run the nightly jobs")
    p.add_argument("--no-worker", action="store_true", help="accept deliveries, do not process")
    p.add_argument("--no-backfill", action="store_true",
                   help="do not start the first backfill (with a token and an empty database)")
    workers = p.add_argument("--workers", type=_jobs, default=0, metavar="N",
                   help="run the inbox worker in N processes beside the web process (at most "
                        "1024; default 0: inside it; SQLite takes 1)")
    _applies(workers, lambda args: not args.no_worker)

    p = sub.add_parser("migrate", help="alembic upgrade head on DATABASE_URL",
                       description="Upgrades the database to this version's latest migration, "
                                   "all of it or nothing, one migrate at a time: another "
                                   "replica's migrate under way is waited for (said on stderr); "
                                   "on PostgreSQL a table lock a running replica holds is waited "
                                   "for 3 s a try, then tried again with backoff (said, naming "
                                   "the session holding it).",
                       epilog="exit status: 0 the database is at this version's latest "
                              "migration; 1 the wait ran out, a migration failed (nothing of "
                              "the upgrade kept), or the database failed; 2 a bad setting or "
                              "--wait.")
    p.add_argument("--wait", type=_count, default=None, metavar="SECONDS",
                   help="wait at most SECONDS in all for another migrate, or a table lock, to "
                        "be let go (default 600)")

    p = sub.add_parser(
        "analyze", help="thread records in, analysis records out (JSON lines)",
        description="Thread records in (JSON lines, UTF-8, the data contract's `thread`), one "
                    "analysis record out per record, in the same order. A line that is not a "
                    "contract thread gets an error record {\"id\", \"line\", \"error\"} in its "
                    "place, the same message on stderr, and the other lines are analysed.",
        epilog="exit status: 0 every line analysed; 1 some lines were bad (error records); 2 the "
               "command could not run (INPUT unreadable or not UTF-8, a bad pool line, OUT not "
               "writable or the --papers pool itself, a --jobs worker died), OUT left as it was; "
               "130 interrupted, OUT left "
               "as it was; 141 the reader of stdout went away.")
    p.add_argument("input", type=_path, metavar="INPUT",
                   help="thread records (JSON lines), - for stdin")
    p.add_argument("--papers", type=_path, metavar="POOL",
                   help="extra paper pool (JSON lines, - for stdin), matched in addition to the "
                        "catalog's; its index is saved in the cache for the next run")
    no_cache = p.add_argument("--no-cache", action="store_true",
                              help="with --papers: build the pool's index, neither read nor "
                                   "save it in the cache")
    p.add_argument("-o", "--output", type=_path, default="-", metavar="OUT",
                   help="analysis records, - for stdout (the default); a file is replaced whole "
                        "when the command runs through (exit 0 or 1)")
    p.add_argument("--jobs", type=_jobs, default=None, metavar="N",
                   help="analyse in N processes (at most 1024), same output in the same order "
                        "(0: one per CPU; default: one per CPU for an input file of 1 MiB or more, else 1; "
                        "needs fork, i.e. Linux)")
    _applies(no_cache, lambda args: args.papers is not None)

    p = sub.add_parser("replay", help="send payload files as signed deliveries",
                       epilog="exit status: 0 every answer was 2xx; 1 some answer was not (or a "
                              "file failed to send: each is listed), or nothing listens at "
                              "--url; 2 no secret, no payload file found, a file that "
                              "cannot be read, or an event the app does not handle (nothing "
                              "sent).")
    p.add_argument("paths", nargs="+", metavar="FILE_OR_DIR", help="payload files or folders of them")
    p.add_argument("--url", required=True, type=_http_url,
                   help="where to send them: the app's webhook, e.g. http://localhost:8000/webhook")
    p.add_argument("--secret", default=None, help="default: $GITHUB_WEBHOOK_SECRET")
    p.add_argument("--event", default=None,
                   help="default: the folder name of each file (an event the app handles, "
                        "e.g. issues, issue_comment; anything else is refused, nothing sent)")
    p.add_argument("--fresh", action="store_true",
                   help="move all timestamps forward together so the newest is now")

    p = sub.add_parser("sync", help="GraphQL backfill or incremental refresh",
                       epilog="exit status: 0 synced; 1 stopped (GitHub unreachable, a 401, a "
                              "request that kept failing: cursors are stored, run again to "
                              "resume), or the database failed; 2 no GITHUB_TOKEN nor app "
                              "credentials, a bad setting or --repo, or some repository or "
                              "thread could not be read or analysed (named on stderr; the "
                              "others are synced).")
    p.add_argument("--repo", action="append", default=[], metavar="OWNER/NAME", type=_repo_name,
                   help="a repository to sync (repeatable; default: the seven frameworks')")
    p.add_argument("--full", action="store_true", help="ignore stored cursors")

    p = sub.add_parser("report", help="the proposal-status report, Markdown and HTML",
                       description="Builds and stores today's proposal-status report, posts it "
                                   "on RLTRACKER_REPORT_ISSUE (unless dry-run), and prints a "
                                   "JSON summary.",
                       epilog="exit status: 0 built and stored (posted, or not to be posted); "
                              "1 stored but not posted (GitHub refused: run again), or the "
                              "database failed; 2 a bad --date or --out, no report stored that "
                              "night, or RLTRACKER_PUBLIC_URL missing for a post.")
    p.add_argument("--out", type=_path, default=None, metavar="DIR",
                   help="folder to write report-DATE.md and report-DATE.html into (made if missing)")
    p.add_argument("--date", type=_iso_date, default=None, metavar="YYYY-MM-DD",
                   help="report date YYYY-MM-DD (default today, UTC); an earlier date writes "
                        "and posts again the report stored that night")

    p = sub.add_parser("rules", help="contribution-rule summary of a framework or folder",
                       description="The contribution-rule summary of a framework (read from the "
                                   "database's cache, else the snapshot in ../shared, else "
                                   "GitHub) or of a folder holding CONTRIBUTING and templates. "
                                   "Text quoted from a repository's files is third-party: "
                                   "the text output prints its control and format characters "
                                   "(escape sequences, direction overrides) as spaces.",
                       epilog="exit status: 0 printed; 1 GitHub or the database failed; 2 an "
                              "unknown framework (the one probably meant is named) or a file "
                              "that cannot be read.")
    p.add_argument("target", metavar="FRAMEWORK_OR_PATH",
                   help="framework name (verl, trl, openrlhf, nemo-rl, roll, slime, areal; any "
                        "case) or a folder path")
    p.add_argument("--json", action="store_true",
                   help="the summary as JSON (UTF-8), quoted text as it was read: control and "
                        "direction characters are kept (JSON escapes the controls; showing "
                        "the text safely is the reader's concern)")

    p = sub.add_parser("stats", help="counts, as in GET /api/stats",
                       epilog="exit status: 0 printed; 1 the database failed; 2 a bad setting.")
    p.add_argument("--json", action="store_true", help="the counts as one JSON object")

    p = sub.add_parser("papers", help="the paper pool",
                       epilog="exit status: 0 done; 1 import: some lines were skipped, fetch: "
                              "arXiv failed, or the database failed; 2 a bad argument or "
                              "setting, or a FILE that cannot be read (see each one's --help).")
    papers_sub = p.add_subparsers(dest="papers_command", required=True)
    pi = papers_sub.add_parser("import", help="add papers from arXiv metadata or paper records",
                               epilog="exit status: 0 every line imported; 1 some lines were "
                                      "skipped (each named on stderr with why; the others "
                                      "are imported), or the database failed; 2 FILE cannot "
                                      "be read, or is UTF-16 or UTF-32 (nothing imported).")
    pi.add_argument("file", metavar="FILE", help="JSON lines; - for stdin")
    pf = papers_sub.add_parser("fetch", help="read new listings from the arXiv API",
                               epilog="exit status: 0 fetched; 1 arXiv or the database failed "
                                      "(the listings read before are stored); 2 a bad "
                                      "--category or setting.")
    pf.add_argument("--category", action="append", default=[], type=_category,
                    help="an arXiv category (default: cs.LG, cs.CL and cs.AI); repeatable")

    p = sub.add_parser("preview", help="dry-run over a repository's stored issues of the last "
                       "30 days (--days)",
                       epilog="exit status: 0 printed; 1 no thread of the repository is stored "
                              "(rltracker sync --repo first), or the database failed; 2 a bad "
                              "--days, OWNER/NAME or setting.")
    p.add_argument("repo", metavar="OWNER/NAME", type=_repo_name,
                   help="a repository whose issues are stored (rltracker sync --repo OWNER/NAME)")
    p.add_argument("--days", type=_days, default=30, metavar="N",
                   help="issues opened in the last N days, 1 to 90 (default 30)")

    p = sub.add_parser("deliveries", help="webhook deliveries that failed, and re-queueing them",
                       description="Lists the webhook deliveries whose processing failed for good, "
                                   "newest first, with the error, those waiting for their "
                                   "next attempt, and those left processing (in a worker's "
                                   "hands, or given back by one cut short).",
                       epilog="exit status: 0 listed or re-queued; 1 an id given to retry is "
                              "neither failed nor waiting, or is a private repository's whose "
                              "payload was not kept (named; the others are re-queued), or "
                              "the database failed; 2 retry without ids or --all, or with both "
                              "(nothing re-queued).")
    p.add_argument("--json", action="store_true", help="the list as one JSON object")
    p.add_argument("--limit", type=_limit, default=50, metavar="N", help="list at most N (default 50)")
    deliveries_sub = p.add_subparsers(dest="deliveries_command")
    # (a subcommand's --help shows its own epilog only: it repeats its command's statuses)
    pr = deliveries_sub.add_parser("retry", help="failed deliveries back to pending, and "
                                   "those waiting for a retry attempted now", epilog=p.epilog)
    pr.add_argument("ids", nargs="*", metavar="DELIVERY_ID", help="X-GitHub-Delivery ids")
    pr.add_argument("--all", action="store_true", help="every failed or waiting delivery")

    p = sub.add_parser("verdicts", help="people's verdicts on threads (/rltracker kind, "
                       "not-a-failure)",
                       epilog="exit status: 0 done; 1 the database failed; 2 an unknown "
                              "--framework (the one probably meant is named), a bad --limit, "
                              "or --out FILE cannot be written (left as it was).")
    verdicts_sub = p.add_subparsers(dest="verdicts_command", required=True)
    pv = verdicts_sub.add_parser("export", help="every verdict as a labelled thread (JSON lines), "
                                 "for review and `python -m training --extra FILE`",
                                 epilog=p.epilog)
    pv.add_argument("--out", type=_path, default=None, metavar="FILE", help="default: stdout")
    pw = verdicts_sub.add_parser("wanted", help="the open threads where a verdict would teach the "
                                 "failure analyzer most (its least sure findings), with the "
                                 "command to type", epilog=p.epilog)
    pw.add_argument("--framework", default=None, metavar="F", help="one framework (default: all)")
    pw.add_argument("--limit", type=_limit_from_1, default=100, metavar="N",
                    help="the N least sure threads of all (default: 100)")

    p = sub.add_parser("repos", help="the repositories the app comments in",
                       description="Lists the public repositories the app is installed in, as "
                                   "GET /api/repos: whether it comments there (paused by the "
                                   "nightly reception check, the installation suspended, a "
                                   "settings file it cannot use) and how its comments were "
                                   "received.",
                       epilog="exit status: 0 listed, resumed, or not paused (said on stderr); "
                              "1 the repository is not stored, or the database failed; 2 not "
                              "OWNER/REPO, or a bad setting.")
    p.add_argument("--json", action="store_true", help="the list as GET /api/repos gives it")
    repos_sub = p.add_subparsers(dest="repos_command")
    pr = repos_sub.add_parser("resume", help="lift the pause of the app's comments in a "
                              "repository (set by the nightly reception check)",
                              epilog=p.epilog)
    pr.add_argument("repo", metavar="OWNER/REPO", type=_repo_name, help="the paused repository")

    p = sub.add_parser("study", help="the study: landings, per framework, review records",
                       epilog="exit status: 0 printed; 1 the database failed; 2 a bad setting.")
    p.add_argument("--json", action="store_true", help="the study as JSON, as GET /api/study")
    _parent_options_apply_alone(parser)
    _add_debug_flag(parser, top=True)
    _name_subcommands(parser)
    return parser


class _ClosedStream(io.TextIOBase):
    """Stands for a standard stream the process was started without (`<&-`, `>&-`: Python
    sets it to None, and reading or writing it was an AttributeError and a traceback). Any
    use raises the OSError of a closed descriptor, naming the stream, which the commands
    report in one line like an unreadable file; `print` no longer drops output silently."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name

    def _closed(self, *_: object) -> OSError:
        return OSError(errno.EBADF, "Bad file descriptor (closed when the command started)",
                       self.name)

    def read(self, *_: object) -> str:
        raise self._closed()

    def readline(self, *_: object) -> str:  # type: ignore[override]
        raise self._closed()

    def __next__(self) -> str:
        raise self._closed()

    def write(self, *_: object) -> int:
        raise self._closed()

    @property
    def buffer(self) -> io.BufferedIOBase:
        raise self._closed()


def ensure_open(stream: TextIO) -> None:
    """Raise a closed standard stream's error now, before work whose output it could not take
    (`rltracker rules` may ask GitHub for the files first: a network call, then exit 1 for a
    stream closed from the start)."""
    if isinstance(stream, _ClosedStream):
        raise stream._closed()


# What a shell shows for a command stopped by SIGPIPE (`cat big | head -1`): 128 + 13.
PIPE_CLOSED = 141


def stdout_reader_gone() -> bool:
    """Whether standard output is a pipe or socket whose reader has gone (`| head -1` read
    its line and left): Linux reports POLLERR (POLLHUP for a socket) on a descriptor no
    write can reach any more."""
    import select

    try:
        fd = sys.stdout.fileno()
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        events = poller.poll(0)
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return False
    return any(flags & (select.POLLERR | select.POLLHUP) for _, flags in events)


def discard_stdout() -> None:
    """Standard output pointed at /dev/null after a write to it failed: what is still
    buffered would fail again when flushed at exit ("Exception ignored ... OSError")."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        pass


def _stop_for_closed_stdout() -> int:
    """The reader of standard output left: stop quietly as a Unix tool killed by SIGPIPE does
    (Python ignores the signal, so the write failed with EPIPE and printed a traceback as a
    bug). What is still buffered goes to /dev/null (discard_stdout)."""
    discard_stdout()
    return PIPE_CLOSED


def utf8_stdout() -> None:
    """Standard output set to UTF-8 for a command writing JSON (RFC 8259), whatever the
    locale's encoding: the Chinese texts of these repositories stopped the command with a
    UnicodeEncodeError under a Latin-1 one (PYTHONIOENCODING, a redirected Windows console)."""
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None:
        reconfigure(encoding="utf-8", errors="strict")


def main(argv: Sequence[str] | None = None) -> int:
    for attr, name in (("stdin", "<stdin>"), ("stdout", "<stdout>")):
        if getattr(sys, attr) is None:
            setattr(sys, attr, _ClosedStream(name))
    # Text for people in the locale's encoding; what it cannot write (a Chinese title under
    # Latin-1) written as backslash-u escapes, as on stderr, not a UnicodeEncodeError losing the rest.
    # Commands writing JSON set UTF-8 (utf8_stdout).
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None:
        reconfigure(errors="backslashreplace")
    parser = build_parser()
    args = parse_arguments(parser, argv)
    module_name, _, func_name = COMMANDS[args.command].partition(":")
    stdout = sys.stdout
    if not isinstance(stdout, _ClosedStream):
        sys.stdout = NamedStream(stdout, "<stdout>")  # type: ignore[assignment]
    try:
        with command_logging():
            return _run(args, module_name, func_name)
    finally:
        sys.stdout = stdout


def command_name(args: argparse.Namespace) -> str:
    """The command as its parser's prog names it, after `rltracker `: `report`, `repos resume`,
    `papers import` (a subcommand's parser is `{command}_command`'s, as build_parser names
    them), for the lines saying what failed."""
    subcommand = getattr(args, f"{args.command}_command", None)
    return f"{args.command} {subcommand}" if subcommand else args.command


def _run(args: argparse.Namespace, module_name: str, func_name: str) -> int:
    try:
        if args.command in NEEDS_DATABASE:
            from bot.config import (
                DEFAULT_DATABASE_URL,
                check_database_url,
                normalise_database_url,
                require_database,
            )
            from bot.store.migrate import require_revision

            require_database(os.environ)
            # Behind or ahead of this code: serve's one line, exit 1, before the command runs
            # (ops64; bot.store.migrate.check_revision).
            raw = os.environ.get("DATABASE_URL") or DEFAULT_DATABASE_URL
            check_database_url(raw)
            require_revision(normalise_database_url(raw))
        func = getattr(importlib.import_module(module_name), func_name)
        status = int(func(args) or 0)
        sys.stdout.flush()  # here, where a reader gone is seen, not at exit
        return status
    except BrokenPipeError as exc:
        if stdout_reader_gone():
            return _stop_for_closed_stdout()
        from bot.cli.errors import report_failure

        debug = args.debug or log_level(os.environ) == "DEBUG"
        return report_failure(command_name(args), exc, debug=debug)
    except KeyboardInterrupt:
        print(f"rltracker {command_name(args)}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - known failures get one line, bugs their traceback
        from bot.cli.errors import report_failure

        if isinstance(exc, OSError) and exc.filename == "<stdout>":
            discard_stdout()  # what is still buffered would fail again at exit
        debug = args.debug or log_level(os.environ) == "DEBUG"
        return report_failure(command_name(args), exc, debug=debug)


if __name__ == "__main__":
    sys.exit(main())
