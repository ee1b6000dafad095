"""Per-repository settings: `.github/rltracker.yml` on the installed repository's default branch.

Read through the contents API with the installation's token, parsed with a safe YAML loader
that also refuses aliases (an alias bomb in a 1 KiB file can expand to gigabytes), validated,
and cached on the Repository row for `CONFIG_TTL` (the app is not subscribed to pushes;
`/rltracker recheck` refetches at once). An invalid file never breaks anything: the defaults
apply (except the opt-outs it validly states: see ConfigError), the problem is logged and
shows in `/api/actions` as a skipped action of kind "config". Settings under one `rltracker:`
key are read as the settings; a file at a path the app does not read (`.rltracker.yml` at
the root...) is reported as an invalid file naming the path, its opt-outs holding.

```yaml
failure_comments: true     # comment on new training-failure reports
rule_summaries: true       # reply to method proposals with the contribution rules
min_confidence: 0.8        # 0..1, analyzer confidence needed to comment or reply; unset:
                           # the failure model's own comment bar (chosen where grouped
                           # cross-validated precision stays >= 0.90) and 0.7 for proposals
dry_run: false             # record what would be posted, post nothing
daily_budget: 3            # comments per UTC day at most (0..50)
labels:                    # labels to add with the comment, per failure kind
  entropy_collapse: "training: entropy"
ignore_labels: [bug, question]   # labels that do not count as "a maintainer labelled it"
```
"""

from __future__ import annotations

import base64
import hashlib
import logging
import re
from dataclasses import asdict, dataclass, field, replace
from datetime import timedelta
from typing import Any

import yaml
from sqlalchemy import func, select, update

from bot.store.models import Repository
from bot.store.types import utcnow

log = logging.getLogger(__name__)

CONFIG_PATHS = (".github/rltracker.yml", ".github/rltracker.yaml")
CONFIG_TTL = timedelta(minutes=10)
MAX_CONFIG_BYTES = 16 * 1024
MAX_CONFIG_DEPTH = 16  # nesting levels: the settings need 2; PyYAML composes recursively
DEFAULT_PROPOSAL_CONFIDENCE = 0.7  # the rule-summary reply's bar when min_confidence is unset
DEFAULT_DAILY_BUDGET = 3
# The settings that make the app quieter (ConfigError's opt-outs), at their quiet values.
_QUIET = {"failure_comments": False, "rule_summaries": False, "dry_run": True}


@dataclass(frozen=True)
class RepoConfig:
    failure_comments: bool = True
    rule_summaries: bool = True
    min_confidence: float | None = None  # None: each analyzer's own bar (see the bars below)
    dry_run: bool = False
    daily_budget: int = DEFAULT_DAILY_BUDGET
    labels: dict[str, str] = field(default_factory=dict)
    ignore_labels: tuple[str, ...] = ()
    source: str = "defaults"  # defaults | file | invalid
    error: str | None = None

    def failure_bar(self) -> float:
        """Failure confidence a comment needs: the repository's `min_confidence`, else the
        failure model's comment threshold (a figure of `make train`, not a hand-set one)."""
        if self.min_confidence is not None:
            return self.min_confidence
        from analyzers.failures import threshold

        return threshold()

    def proposal_bar(self) -> float:
        """Proposal confidence a rule-summary reply needs."""
        return self.min_confidence if self.min_confidence is not None else DEFAULT_PROPOSAL_CONFIDENCE

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["ignore_labels"] = list(self.ignore_labels)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> RepoConfig:
        if not data:
            return cls()
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        if "ignore_labels" in known:
            known["ignore_labels"] = tuple(known["ignore_labels"] or ())
        return cls(**known)


class ConfigError(ValueError):
    """An invalid file. `opt_outs`: the settings it validly states that make the app quieter
    (`failure_comments: false`, `rule_summaries: false`, `dry_run: true`, a daily budget below
    the default, a confidence bar above the default bars); they hold even so, so a typo
    elsewhere never turns on what the repository turned off."""

    def __init__(self, message: str, opt_outs: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.opt_outs = dict(opt_outs or {})


class _NoAliasLoader(yaml.SafeLoader):
    """SafeLoader without anchors/aliases (nothing in a settings file needs them) and without
    keys given twice in a mapping (PyYAML keeps the last one silently)."""

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:  # type: ignore[override]
        seen: dict[str, int] = {}
        for key_node, _ in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                line = key_node.start_mark.line + 1
                if key_node.value in seen:
                    raise ConfigError(f"{_shown(key_node.value)} is set twice (lines "
                                      f"{seen[key_node.value]} and {line})")
                seen[key_node.value] = line
        return super().construct_mapping(node, deep)

    def compose_node(self, parent: Any, index: Any) -> Any:  # type: ignore[override]
        if self.check_event(yaml.AliasEvent):
            line = self.peek_event().start_mark.line + 1
            raise ConfigError(f"YAML aliases (*name) are not allowed in this file (line {line})")
        return super().compose_node(parent, index)


def _shown(value: Any) -> str:
    """A key or value of the file in a problem, shortened and with characters that are not
    printable escaped: YAML's "\\0" makes a U+0000, which PostgreSQL text cannot store."""
    text = str(value)[:50]
    return text if text.isprintable() else "".join(
        c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def _bool(data: dict[str, Any], key: str, problems: list[str]) -> bool | None:
    if key not in data:
        return None
    value = data[key]
    if isinstance(value, bool):
        return value
    problems.append(f"{key} must be true or false")
    return None


# Settings written under one top-level key naming the app (as some apps' files nest them) are
# read as the settings: a maintainer writing `rltracker:\n  failure_comments: false` means it.
NAMESPACE = "rltracker"


def validate_config(data: Any) -> RepoConfig:
    """The validated config; raises ConfigError listing every problem found."""
    if isinstance(data, dict) and list(data) == [NAMESPACE] and (
            data[NAMESPACE] is None or isinstance(data[NAMESPACE], dict)):
        data = data[NAMESPACE]
    if data is None:
        return RepoConfig(source="file")
    if not isinstance(data, dict):
        raise ConfigError("the file must be a mapping of settings")
    problems: list[str] = []
    values: dict[str, Any] = {}
    allowed = {
        "failure_comments", "rule_summaries", "min_confidence", "dry_run", "daily_budget",
        "labels", "ignore_labels",
    }
    # a setting spelt with hyphens, capitals or spaces (`failure-comments`): still unknown,
    # but named, and what it turns off holds (`_respelt`)
    respelt = {k: _folded(k) for k in data if k not in allowed and _folded(k) in allowed
               and _folded(k) not in data}
    unknown = sorted(_shown(k) + (f" (did you mean {respelt[k]}?)" if k in respelt else
                                  " (beside other settings: put them all under it, or none)"
                                  if k == NAMESPACE else "")
                     for k in data if k not in allowed)
    if unknown:
        problems.append("unknown settings: " + ", ".join(unknown[:10]))
    for key in ("failure_comments", "rule_summaries", "dry_run"):
        value = _bool(data, key, problems)
        if value is not None:
            values[key] = value
    if "min_confidence" in data:
        value = data["min_confidence"]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
            problems.append("min_confidence must be a number from 0 to 1")
        else:
            values["min_confidence"] = float(value)
    if "daily_budget" in data:
        value = data["daily_budget"]
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 50:
            problems.append("daily_budget must be a whole number from 0 to 50")
        else:
            values["daily_budget"] = value
    if "labels" in data:
        labels = data["labels"]
        if labels is None:
            labels = {}
        # GitHub refuses a label name of spaces (422) every time the app would add it
        blank = sorted(_shown(k) for k, v in labels.items() if isinstance(v, str)
                       and v and not v.strip()) if isinstance(labels, dict) else []
        if blank:
            problems.append("labels: the label for " + ", ".join(blank[:10])
                            + " is blank (only spaces); give it a name or leave it out")
        elif not isinstance(labels, dict) or not all(
            isinstance(k, str) and isinstance(v, str) and 0 < len(v) <= 50 and v.isprintable()
            for k, v in labels.items()
        ):
            problems.append("labels must map failure kinds to label names (at most 50 characters)")
        else:
            from analyzers.catalog import load_catalog

            bad = sorted(_shown(k) for k in labels if k not in load_catalog().failures)
            if bad:
                problems.append("labels: unknown failure kinds: " + ", ".join(bad[:10]))
            else:
                values["labels"] = dict(labels)
    if "ignore_labels" in data:
        ignore = data["ignore_labels"]
        if ignore is None:
            ignore = []
        if not isinstance(ignore, list) or not all(isinstance(v, str) and v.isprintable() for v in ignore):
            problems.append("ignore_labels must be a list of label names")
        else:
            values["ignore_labels"] = tuple(ignore)
    nested: dict[str, Any] = {}
    if isinstance(data.get(NAMESPACE), dict):  # beside top-level settings: read for opt-outs
        try:
            inner = validate_config(data[NAMESPACE]).as_dict()
            nested = _quieter({k: inner[k] for k in data[NAMESPACE] if k in inner},
                              data[NAMESPACE])
        except ConfigError as exc:
            nested = exc.opt_outs
    if problems:
        raise ConfigError("; ".join(problems),
                          _quietest(_quieter(values, data), _respelt(data, respelt), nested))
    return RepoConfig(source="file", **values)


def _folded(key: Any) -> str | None:
    return key.strip().lower().replace("-", "_").replace(" ", "_") if isinstance(key, str) else None


def _respelt(data: dict[str, Any], respelt: dict[Any, str | None]) -> dict[str, Any]:
    """What the settings spelt otherwise (`failure-comments: false`) turn off, read as the
    settings they spell."""
    if not respelt:
        return {}
    spelt = {name: data[key] for key, name in respelt.items() if name}
    try:
        config = validate_config(spelt)
    except ConfigError as exc:
        return exc.opt_outs
    values = {k: v for k, v in config.as_dict().items() if k in spelt}
    return _quieter(values, spelt)


def _quietest(*opt_outs: dict[str, Any]) -> dict[str, Any]:
    """Opt-outs together: the lowest daily budget, the highest bar, every quiet setting."""
    out: dict[str, Any] = {}
    for each in opt_outs:
        for key, value in each.items():
            if key == "daily_budget" and key in out:
                out[key] = min(out[key], value)
            elif key == "min_confidence" and key in out:
                out[key] = max(out[key], value)
            else:
                out[key] = value
    return out


def _quieter(values: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
    """The validated settings of an invalid file that make the app quieter than the defaults
    do: the opt-outs at their quiet values (or stated with a value that is no YAML boolean:
    `_stated`), a daily budget below the default (0: nothing
    spontaneous) and a confidence bar above both default bars."""
    from analyzers.failures import threshold

    kept: dict[str, Any] = {
        k: v for k, v in _QUIET.items()
        if values.get(k) is v or (k in data and _stated(data[k]) is not (not v))}
    if values.get("daily_budget", DEFAULT_DAILY_BUDGET) < DEFAULT_DAILY_BUDGET:
        kept["daily_budget"] = values["daily_budget"]
    bar = values.get("min_confidence")
    if bar is not None and bar >= max(threshold(), DEFAULT_PROPOSAL_CONFIDENCE):
        kept["min_confidence"] = bar
    return kept


def _stated(value: Any) -> bool | None:
    """What an opt-out setting's value says when it is no YAML boolean: a quoted boolean word
    ("false", 'no', "off", "True") the boolean YAML reads it as, else None (`0`, "maybe", a
    list). An opt-out stated so holds (the file is still reported invalid); one whose value
    says nothing holds too: the repository wrote the setting, and the app does not guess it
    on. Only a value that spells the default (`"true"`) leaves the default."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and len(value) <= 8 and value.strip().isalpha():
        read = yaml.safe_load(value.strip())
        if isinstance(read, bool):
            return read
    return None


# A top-level line of its own stating one of them: `failure_comments: false  # a comment`
_OPT_OUT_LINE = re.compile(r"(failure_comments|rule_summaries|dry_run)[ \t]*:[ \t]*"
                           r"([A-Za-z0-9]{1,5}|\"[^\"\n]{0,8}\"|'[^'\n]{0,8}')[ \t]*(?:#.*)?")


# ... and a daily budget: `daily_budget: 0  # nothing spontaneous`
_BUDGET_LINE = re.compile(r"daily_budget[ \t]*:[ \t]*([0-9]{1,2})[ \t]*(?:#.*)?")


def _stated_opt_outs(text: str) -> dict[str, Any]:
    """The opt-outs a file that does not parse states on top-level lines of their own (and
    a daily budget below the default, the lowest stated): the rest of it is unreadable, but
    a typo elsewhere must not turn on what it turned off."""
    found: dict[str, Any] = {}
    for line in text.removeprefix("\ufeff").splitlines():  # (a BOM, as Windows editors write)
        m = _OPT_OUT_LINE.fullmatch(line.rstrip())
        # YAML's false, no, off...; quoted or unreadable as for a file that parses (`_stated`)
        if m and _stated(yaml.safe_load(m.group(2))) is not (not _QUIET[m.group(1)]):
            found[m.group(1)] = _QUIET[m.group(1)]
        budget = _BUDGET_LINE.fullmatch(line.rstrip())
        if budget and int(budget.group(1)) < found.get("daily_budget", DEFAULT_DAILY_BUDGET):
            found["daily_budget"] = int(budget.group(1))
    return found


def parse_config_text(text: str) -> RepoConfig:
    """YAML text to a validated config; raises ConfigError with a reason a maintainer can act on."""
    if len(text.encode("utf-8")) > MAX_CONFIG_BYTES:
        raise ConfigError(f"the file is larger than {MAX_CONFIG_BYTES} bytes", _stated_opt_outs(text))
    try:
        _check_depth(text)
        data = yaml.load(text, Loader=_NoAliasLoader)  # noqa: S506 - a SafeLoader subclass
    except ConfigError as exc:
        raise ConfigError(str(exc), _stated_opt_outs(text)) from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        # PyYAML's own words, so the maintainer sees what to change (a tag, a bracket)
        problem = getattr(exc, "problem", None) or str(exc).split("\n", 1)[0]
        raise ConfigError(f"not valid YAML{where}: {problem[:160]}", _stated_opt_outs(text)) from exc
    except (ValueError, OverflowError) as exc:
        # A scalar PyYAML cannot build: a date that is no date (2024-13-45), an integer past
        # Python's digit limit, `!!int` on a word.
        raise ConfigError(f"a value cannot be read: {str(exc)[:120]}", _stated_opt_outs(text)) from exc
    except Exception as exc:  # noqa: BLE001 - PyYAML's constructors on a tag the value does not fit
        # `!!bool maybe` (KeyError), `!!timestamp soon` (AttributeError), `!!int` on nothing
        # (IndexError), `!!map` on a list (TypeError): a file like any other invalid one, not
        # an exception in every decision and command of the repository.
        raise ConfigError("a value cannot be read: a YAML tag (!!bool, !!timestamp, !!map...) "
                          "on a value it does not fit", _stated_opt_outs(text)) from exc
    return validate_config(data)


def _check_depth(text: str) -> None:
    """Refuse nesting deeper than MAX_CONFIG_DEPTH before composing: PyYAML's composer and
    constructor recurse per level, and 16 KiB of brackets is deeper than Python's stack."""
    depth = 0
    for event in yaml.parse(text, Loader=_NoAliasLoader):  # the parser itself is iterative
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_CONFIG_DEPTH:
                mark = event.start_mark
                raise ConfigError(f"settings nested more than {MAX_CONFIG_DEPTH} levels deep "
                                  f"(line {mark.line + 1})")
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


# Where else a maintainer puts the file (`.rltracker.yml` at the root, a name in `.github/`
# spelt otherwise): looked for only when neither CONFIG_PATHS holds one.
_ELSEWHERE = re.compile(r"\.?rltracker\.(?:ya?ml|json)", re.IGNORECASE)


async def _listing(gh: Any, repo: str, folder: str) -> list[Any]:
    """The entries of `folder` (the root: ""), none when the repository has no such folder
    (an empty repository, no .github/) or it is a file."""
    from gidgethub import BadRequest

    try:
        items = await gh.getitem(f"/repos/{repo}/contents/{folder}")
    except BadRequest as exc:
        if getattr(exc, "status_code", None) == 404:
            return []
        raise
    return items if isinstance(items, list) else []


def _named(folder: str, items: list[Any]) -> dict[str, str]:
    """The listing's entries as {path: type}."""
    return {f"{folder}/{item['name']}".lstrip("/"): str(item.get("type") or "")
            for item in items if isinstance(item, dict) and isinstance(item.get("name"), str)}


def _misplaced(entries: dict[str, str]) -> str | None:
    """The path of a settings file the app does not read (`_ELSEWHERE`), None when there is none."""
    return next((path for path, kind in entries.items()
                 if kind == "file" and _ELSEWHERE.fullmatch(path.rpartition("/")[2])
                 and path not in CONFIG_PATHS), None)


def _misplaced_error(path: str, text: str | None) -> ConfigError:
    """The problem of a settings file at `path`, which the app does not read: said where the
    maintainer looks (the preview, /api/actions), with the opt-outs the file states holding
    (as in an invalid file: it was written to turn something off)."""
    message = (f"{path} is not read: the app reads .github/rltracker.yml; move the file "
               "there (until then, only what it turns off holds)")
    return ConfigError(message, _opt_outs_of(text))


def _opt_outs_of(text: str | None) -> dict[str, Any]:
    """What a settings file turns off (ConfigError's opt-outs), valid or not."""
    if text is None:
        return {}
    try:
        found = parse_config_text(text)
    except ConfigError as exc:
        return exc.opt_outs
    values = found.as_dict()
    return _quieter(values, values)


async def _read_both(gh: Any, repo: str) -> str | None:
    """`.github/` lists both CONFIG_PATHS (a third contents request, only then): the text of
    the one GitHub serves, else ConfigError. With both there, which one the maintainer meant
    is not known: it is said, as a key set twice in one file is, and what either turns off
    holds (left65; before, the .yml was read and the .yaml ignored without a word)."""
    read: list[tuple[str, str | ConfigError]] = []
    for path in CONFIG_PATHS:
        try:
            text = await _read_file(gh, repo, (path,))
        except ConfigError as exc:  # too large, not UTF-8: what it states still holds
            read.append((path, exc))
            continue
        if text is not None:
            read.append((path, text))
    if len(read) < 2:
        only = read[0][1] if read else None
        if isinstance(only, ConfigError):
            raise only
        return only
    kept: dict[str, Any] = {}
    for _, found in read:
        outs = found.opt_outs if isinstance(found, ConfigError) else _opt_outs_of(found)
        for key, value in outs.items():
            if key == "daily_budget":
                value = min(value, kept.get(key, value))
            elif key == "min_confidence":
                value = max(value, kept.get(key, value))
            kept[key] = value
    raise ConfigError(f"{' and '.join(p for p, _ in read)} are both there: the app reads one "
                      "settings file; keep one (until then, only what either turns off holds)",
                      kept)


async def _fetch_file(ctx: Any, repo: str, installation_id: int | None) -> str | None:
    """The config file's text, or None when the repository has none. A file at another
    path (`_misplaced`, at the root or in `.github/`) raises ConfigError saying so.

    Two contents requests (left64: four for a repository with no file, the two names asked
    in turn then both folders listed): `.github/`'s listing, then the file it names (either
    of CONFIG_PATHS, whatever its entry's type: the read says what is wrong with it) or, when
    it names none, the root's listing. A third only to read a file found elsewhere, or the
    second of CONFIG_PATHS when `.github/` holds both."""
    from gidgethub import BadRequest

    gh = await ctx.github.api(installation_id)
    in_github = _named(".github", await _listing(gh, repo, ".github"))
    present = tuple(p for p in CONFIG_PATHS if p in in_github)
    text = await (_read_both(gh, repo) if len(present) > 1 else _read_file(gh, repo, present))
    if text is not None:
        return text
    elsewhere = _misplaced(in_github) or _misplaced(_named("", await _listing(gh, repo, "")))
    if elsewhere is None:
        return None
    try:
        raw = await _read_file(gh, repo, (elsewhere,))
    except ConfigError as exc:  # too large, not UTF-8: said, its opt-out lines holding
        raise ConfigError(str(_misplaced_error(elsewhere, None)), exc.opt_outs) from exc
    except BadRequest:
        raw = None
    raise _misplaced_error(elsewhere, raw)


async def _read_file(gh: Any, repo: str, paths: tuple[str, ...]) -> str | None:
    """The text of the first of `paths` the repository has, None when it has none."""
    from gidgethub import BadRequest

    for path in paths:
        try:
            item = await gh.getitem(f"/repos/{repo}/contents/{path}")
        except BadRequest as exc:
            if getattr(exc, "status_code", None) == 404:
                continue
            raise
        if not isinstance(item, dict) or item.get("type", "file") != "file":
            raise ConfigError(f"{path} is not a file")
        try:  # (GitHub sends no content for a file over 1 MB)
            raw = base64.b64decode(item.get("content") or "")
        except ValueError as exc:
            raise ConfigError("the file's content could not be decoded") from exc
        # Refused whole, but the opt-outs it states on lines of their own still hold.
        if int(item.get("size") or len(raw)) > MAX_CONFIG_BYTES:
            raise ConfigError(f"the file is larger than {MAX_CONFIG_BYTES} bytes",
                              _stated_opt_outs(raw.decode("utf-8", "replace")))
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ConfigError("the file is not UTF-8 text",
                              _stated_opt_outs(raw.decode("utf-8", "replace"))) from exc
    return None


async def _repository(session: Any, repo: str) -> Repository | None:
    return await session.scalar(
        select(Repository).where(func.lower(Repository.full_name) == repo.lower())
    )


async def get_repo_config(
    ctx: Any, repo: str, installation_id: int | None = None, *, refresh: bool = False,
    row: Repository | None = None,
) -> RepoConfig:
    """The repository's settings, from the cache on its row when fresh, else from GitHub.
    `row`: the repository row when the caller has just read it."""
    now = utcnow()
    if row is None:
        async with ctx.sessionmaker() as session:
            row = await _repository(session, repo)
    if (
        not refresh
        and row is not None
        and row.config_fetched_at is not None
        and now - row.config_fetched_at < CONFIG_TTL
    ):
        if row.config_error:
            return replace(RepoConfig.from_dict(row.config), source="invalid", error=row.config_error)
        return RepoConfig.from_dict(row.config)
    if ctx.github is None or installation_id is None or not ctx.settings.has_app_credentials:
        # Nothing to read it with (an installation's files need the app's own token); not
        # cached, so the first read after credentials are configured fetches it.
        return RepoConfig()
    error: str | None = None
    try:
        text = await _fetch_file(ctx, repo, installation_id)
        config = RepoConfig() if text is None else parse_config_text(text)
    except ConfigError as exc:
        error = str(exc)
        config = RepoConfig(source="invalid", error=error, **exc.opt_outs)
    async with ctx.sessionmaker() as session:
        # not on a row marked private meanwhile (privacy62: `forget` cleared it; the WHERE
        # is evaluated again after a concurrent `forget`'s commit)
        await session.execute(update(Repository).where(
            func.lower(Repository.full_name) == repo.lower(), Repository.private.is_not(True))
            .values(config=config.as_dict(), config_error=error, config_fetched_at=now))
        await session.commit()
    if error:
        log.warning("invalid .github/rltracker.yml in %s: %s (defaults apply)", repo, error)
        from bot.speaking.records import record_once

        digest = hashlib.sha1(error.encode()).hexdigest()[:12]
        await record_once(
            ctx,
            repo=repo,
            number=None,
            kind="config",
            status="skipped",
            reason=f"invalid .github/rltracker.yml, defaults apply: {error}",
            dedupe_key=f"{repo}:config:{digest}",
        )
    return config


async def config_now(ctx: Any, sit: Any, config: RepoConfig) -> RepoConfig:
    """The repository's settings read again right before a spontaneous comment is posted
    (`sit`: its bot.speaking.situation.Situation): the cache decided minutes ago, and an
    opt-out pushed while the delivery waited must hold. One contents read per comment
    posted (a few a day); `config` when there is nothing to read it with."""
    if ctx.github is None or sit.installation_id is None or not ctx.settings.has_app_credentials:
        return config
    return await get_repo_config(ctx, sit.repo, sit.installation_id, refresh=True)


async def refresh_installed(ctx: Any, reserve: int) -> dict[str, int] | str:
    """Nightly (the scheduler's `settings` step): every installed repository's settings file
    read again onto its row. The app gets no push events, so a file it cannot use was said
    only when someone ran `/rltracker recheck` or the app was about to comment there; read
    each night, its problem is on the repositories' page (/repos/) and in the night's report
    until it is fixed, and `get_repo_config` records its `config` skip once per problem. Two
    contents requests a repository, through its installation's token; an installation whose
    REST budget is below `reserve` (the one the rules refresh keeps for webhooks,
    contribution.REST_RESERVE, above this module) is left to the next night (`deferred`), one
    suspended or uninstalled is not asked (its token is refused)."""
    if ctx.github is None or not ctx.settings.has_app_credentials:
        return "skipped: no app credentials (a repository's settings are read with its installation's token)"
    from bot.store.installations import silenced_installations

    async with ctx.sessionmaker() as session:
        silenced = await silenced_installations(session)
        installed = (await session.execute(
            select(Repository.full_name, Repository.installation_id)
            .where(Repository.installation_id.is_not(None), Repository.private.is_not(True))
            .order_by(Repository.full_name))).all()
    counts = {"read": 0, "invalid": 0, "failed": 0, "deferred": 0}
    for repo, installation_id in installed:
        if installation_id in silenced:
            continue
        left = (await ctx.github.api(installation_id)).rate_left("core")
        if left is not None and left < reserve:
            counts["deferred"] += 1
            continue
        try:
            config = await get_repo_config(ctx, repo, installation_id, refresh=True)
        except Exception as exc:  # noqa: BLE001 - one repository must not stop the others
            log.warning("nightly: the settings file of %s could not be read: %s", repo, exc)
            counts["failed"] += 1
            continue
        counts["read"] += 1
        counts["invalid"] += config.source == "invalid"
    return counts


def effective_dry_run(ctx: Any, config: RepoConfig) -> bool:
    return bool(ctx.settings.dry_run or config.dry_run)


__all__ = [
    "CONFIG_TTL",
    "ConfigError",
    "RepoConfig",
    "config_now",
    "effective_dry_run",
    "get_repo_config",
    "parse_config_text",
    "refresh_installed",
    "validate_config",
]
