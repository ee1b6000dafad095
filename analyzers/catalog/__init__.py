"""The catalog: methods, failure kinds and frameworks, loaded once from the YAML beside this file.

It is the single source the comments, pages and reports use, so it is validated at load
time: a method naming an unknown failure kind or framework is an error, not a silent gap.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import yaml

CATALOG_DIR = Path(__file__).resolve().parent

# The failure keys of the analysis contract, in contract order. Other kinds in
# failures.yaml (length_bias) are things methods address, never a report's category.
CONTRACT_FAILURE_KEYS: tuple[str, ...] = (
    "entropy_collapse",
    "entropy_explosion",
    "collapse_or_divergence",
    "rollout_training_mismatch",
    "response_length_drift",
    "stale_rollout_data",
    "kl_growth",
    "moe_instability",
    "groups_without_signal",
    "other_failure",
)


# The concern keys of the analysis contract (`review.concerns`), in contract order: what
# analyzers/review.py finds, titled in concerns.yaml.
CONTRACT_CONCERN_KEYS: tuple[str, ...] = (
    "design_or_interface",
    "tests_or_docs",
    "maintenance_burden",
    "evidence",
    "placement",
    "demand",
    "already_covered",
    "other",
)


class CatalogError(ValueError):
    """The catalog YAML is malformed or inconsistent."""


@dataclass(frozen=True)
class Framework:
    id: str
    name: str
    repo: str
    former_repos: list[str]
    default_branch: str
    verified_commit: str
    config_style: str
    verified_date: str | None = None

    @property
    def repos(self) -> list[str]:
        return [self.repo, *self.former_repos]


@dataclass(frozen=True)
class FailureKind:
    key: str
    title: str
    title_zh: str
    description: str
    description_zh: str

    @property
    def in_contract(self) -> bool:
        return self.key in CONTRACT_FAILURE_KEYS


@dataclass(frozen=True)
class ConcernKind:
    """A kind of concern as people read it: its title and what it means, in one line."""

    key: str
    title: str
    description: str


@dataclass(frozen=True)
class PaperRef:
    arxiv_id: str | None
    title: str
    source: str | None = None  # for sources that are not papers, e.g. "blog post, Yao et al."
    url: str | None = None  # where a source without an arXiv id is read (a blog post)


@dataclass(frozen=True)
class Caution:
    text: str
    source: str
    # our Chinese wording, clause for clause (`clauses` / `clauses_zh`), each clause keeping
    # the English one's facts (`facts`); a Chinese comment shows it (review zh82)
    text_zh: str | None = None


@dataclass(frozen=True)
class Option:
    framework: str
    name: str
    set_by: str
    keys: list[str]
    value_hint: str | None
    file: str
    status: str
    default: str | None = None
    commit: str | None = None
    note: str | None = None
    first_commit: str | None = None
    # "<sha> <date>": an earlier commit that brought the same method to this framework under
    # another option name, as the first commit's note names it (the study dates the landing by
    # it; `first_commit` finds only the string of the option as it is now)
    first_landing: str | None = None
    # `key=value` settings without which this option does not turn the method on (ROLL's
    # pg_clip_high needs use_pg_clip_range: true); `key` is matched as the end of a pasted
    # path, `value` as `value_hint` is (the project's own field, read from the catalog's
    # facts: a caution or the default that says so)
    requires: tuple[str, ...] = ()
    # the framework runs the method unless a config turns it off (the catalog's default says
    # so: verl's clip_ratio_c 3.0 "on by default"): suggested only to a config that turns it off
    on_by_default: bool = False
    # `set_by` as a Chinese comment says it: the settings in backticks (the English
    # rendering's code spans), the words around them in Chinese, the facts kept (review zh82)
    set_by_zh: str | None = None

    @property
    def experimental(self) -> bool:
        return "experimental" in self.status

    @property
    def is_builtin(self) -> bool:
        """True when the method is always on (no switch to suggest)."""
        return "not an option" in self.status or not self.keys


@dataclass(frozen=True)
class Method:
    id: str
    name: str
    aliases: list[str]
    papers: list[PaperRef]
    first_public: str | None
    failures: list[str]
    cautions: list[Caution]
    options: dict[str, list[Option]]
    # Near relatives that are not this method (e.g. a switch that does something similar).
    related: dict[str, list[Option]] = field(default_factory=dict)
    note: str | None = None

    def has(self, framework: str) -> bool:
        return bool(self.options.get(framework))

    @property
    def arxiv_ids(self) -> list[str]:
        return [p.arxiv_id for p in self.papers if p.arxiv_id]


@dataclass(frozen=True)
class Catalog:
    frameworks: dict[str, Framework]
    failures: dict[str, FailureKind]
    methods: dict[str, Method]
    _repo_index: dict[str, str] = field(repr=False, default_factory=dict)

    def framework_for_repo(self, full_name: str) -> Framework | None:
        fid = self._repo_index.get(full_name.strip().lower())
        return self.frameworks[fid] if fid else None

    def canonical_repo(self, full_name: str) -> str:
        fw = self.framework_for_repo(full_name)
        return fw.repo if fw else full_name

    def names_of(self, full_name: str) -> list[str]:
        """`full_name`, then every other name its framework's repository has had (a renamed
        one, as the catalog spells it; compared without case): the names a thread, an action
        or a deletion of that repository may be stored under. Only `full_name` for another."""
        fw = self.framework_for_repo(full_name)
        return [full_name, *(n for n in (fw.repos if fw else []) if n.lower() != full_name.lower())]

    def listed_name(self, full_name: str) -> str | None:
        """`full_name` as the catalog spells it (a current or former name of a tracked
        repository, typed in any case), else None."""
        fw = self.framework_for_repo(full_name)
        return next((n for n in (fw.repos if fw else []) if n.lower() == full_name.lower()), None)

    def methods_for_failure(self, key: str) -> list[Method]:
        return [m for m in self.methods.values() if key in m.failures]

    def runner_up(self, failure: Mapping[str, Any]) -> FailureKind | None:
        """The second kind an analysis's `failure` lists (`categories`, the leading kind
        first): the first one this catalog knows that is not `category`, or None."""
        categories = failure.get("categories")
        if not isinstance(categories, list):
            return None
        leading = failure.get("category")
        for key in categories:
            if isinstance(key, str) and key != leading and key in self.failures:
                return self.failures[key]
        return None

    def method_for_arxiv(self, arxiv_id: str) -> list[Method]:
        return [m for m in self.methods.values() if arxiv_id in m.arxiv_ids]

    def options_for(self, framework: str) -> list[tuple[Method, Option]]:
        return [(m, o) for m in self.methods.values() for o in m.options.get(framework, [])]


def _require(d: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in d or d[key] is None:
        raise CatalogError(f"{where}: missing required field {key!r}")
    return d[key]


def _str_list(value: Any, where: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise CatalogError(f"{where}: expected a list of strings")
    return list(value)


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


# Words whose full stop ends no sentence: the splitter cut grpo's caution "(see Dr. GRPO and
# token-level loss)" after "Dr.", and a comment shows one clause of a caution (review left83).
# Matched in any case, as a word of their own; a version ("v0.3.", "v0.4.1.") is one too.
ABBREVIATIONS = ("Dr.", "e.g.", "i.e.", "vs.", "et al.", "cf.", "Fig.", "Eq.", "approx.")
_ABBREVIATION_END = re.compile(
    r"(?:^|[\s(\[\"'])(?:" + "|".join(re.escape(a) for a in ABBREVIATIONS)
    + r"|v\d+(?:\.\d+)*\.)$", re.IGNORECASE)
# The longest abbreviation looked back at (a version longer than this is not one).
_ABBREVIATION_SPAN = 24
_STOP = re.compile(r"[.;] ")


def clauses(text: str) -> list[str]:
    """The sentences and ';'-separated clauses of an English catalog text, each ending with a
    full stop: the pieces a comment shows one of (a caution's clause about the framework). A
    full stop ends one unless it is an abbreviation's (ABBREVIATIONS)."""
    text = " ".join(text.split())
    pieces: list[str] = []
    start = 0
    for stop in _STOP.finditer(text):
        end = stop.start() + 1
        if text[stop.start()] == "." and _ABBREVIATION_END.search(
                text[max(start, end - _ABBREVIATION_SPAN):end]):
            continue
        pieces.append(text[start:end].rstrip(";"))
        start = stop.end()
    pieces.append(text[start:])
    out: list[str] = []
    for sentence in pieces:
        sentence = sentence.strip()
        if sentence:
            out.append(sentence[0].upper() + sentence[1:] + ("" if sentence.endswith(".") else "."))
    return out


_ZH_STOPS = re.compile(r"[。；]")


def clauses_zh(text: str) -> list[str]:
    """The clauses of a Chinese catalog text, cut at "。" and "；" (`clauses`' English stops),
    without them."""
    return [c.strip() for c in _ZH_STOPS.split(" ".join(text.split())) if c.strip()]


# The facts a translation keeps: runs of printable ASCII, their edge punctuation and a
# possessive "'s" taken off; a run is a fact when it holds a digit, `_ = / < > | ( #`, a dot
# inside it, starts with "-" (a flag), or has a capital past its first letter (TRL, KL,
# IcePop, GRPOConfig); hyphenated words are judged by their parts ("IS-weight" keeps IS,
# "NeMo-RL" NeMo and RL, "low-probability" nothing); a lone "=" ("0 = synchronous") and
# short words joined by a slash ("and/or") are prose, a lone ">=" a fact.
_ASCII_RUN = re.compile(r"[!-~]+")
_EDGE = ".,;:()'\"!?[]`*"
_FACT_MARK = re.compile(r"[\d_=/<>|(#]|\w\.\w|^-")
_CAPITAL_INSIDE = re.compile(r"^.+[A-Z]")


_SLASHED_WORDS = re.compile(r"^[a-z]{1,3}(?:/[a-z]{1,3})+$")


def _fact_parts(token: str) -> list[str]:
    if not any(ch.isalnum() for ch in token):
        return [token] if "<" in token or ">" in token else []  # ">= 0" is a fact, "a = b" prose
    if _SLASHED_WORDS.match(token):
        return []  # "and/or"
    if _FACT_MARK.search(token):
        return [token]
    if "-" in token.strip("-"):
        return [p for part in token.split("-") for p in _fact_parts(part)]
    return [token] if _CAPITAL_INSIDE.match(token) else []


def facts(text: str) -> set[str]:
    """The option names, values, numbers, versions, paths and proper names of `text`
    (English or Chinese): what a Chinese wording must hold exactly as the English does."""
    out: set[str] = set()
    for run in _ASCII_RUN.findall(text):
        token = run.strip(_EDGE)
        if token.endswith("'s"):
            token = token[:-2]
        token = token.strip(_EDGE)
        if token:
            out.update(_fact_parts(token))
    return out


def _differ(english: str, chinese: str) -> str | None:
    """How `chinese` changes the facts of `english` (None when it keeps them all)."""
    en, zh = facts(english), facts(chinese)
    if en == zh:
        return None
    return f"lacks {sorted(en - zh)}, adds {sorted(zh - en)}"


def _caution(c: Any, where: str) -> Caution:
    text, source = str(_require(c, "text", where)), str(_require(c, "source", where))
    text_zh = _opt_str(c.get("text_zh"))
    if text_zh is not None:
        en, zh = clauses(text), clauses_zh(text_zh)
        if len(en) != len(zh):
            raise CatalogError(f"{where}: caution from {source!r}: text_zh has {len(zh)} clauses, "
                               f"text {len(en)} (one Chinese clause for each)")
        for i, (e, z) in enumerate(zip(en, zh, strict=True)):
            changed = _differ(e, z)
            if changed:
                raise CatalogError(f"{where}: caution from {source!r}, clause {i + 1}: text_zh {changed}")
    return Caution(text=text, source=source, text_zh=text_zh)


# The dates the study reads (analyzers.study): a first public version (a year, a month or a
# day) and the day written right after a commit hash. One no calendar has, or that the study
# cannot read, is an error here: /study raised on the first and left the method out, without
# a word, on the second (review dates64).
_PUBLIC_DATE = re.compile(r"^(\d{4})(?:-(\d{2})(?:-(\d{2}))?)?$")
_COMMIT_DATE = re.compile(r"^\s*[0-9a-f]{6,40}\s+(\d{4}-\d{2}-\d{2})\b")


def _public_date(value: Any, where: str) -> str | None:
    text = _opt_str(value)
    if text is None:
        return None
    m = _PUBLIC_DATE.match(text.strip())
    try:
        if m is None:
            raise ValueError
        date(int(m.group(1)), int(m.group(2) or 1), int(m.group(3) or 1))
    except ValueError:
        raise CatalogError(f"{where}.first_public: {text!r} is not a date (YYYY, YYYY-MM or "
                           "YYYY-MM-DD)") from None
    return text


def _commit(value: Any, where: str) -> str | None:
    text = _opt_str(value)
    m = _COMMIT_DATE.match(text or "")
    if m is not None:
        try:
            date.fromisoformat(m.group(1))
        except ValueError:
            raise CatalogError(f"{where}: {text!r}: {m.group(1)} is no calendar day") from None
    return text


# libyaml's loader when present: the pure-Python one takes seconds on methods.yaml.
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _load_yaml(path: Path) -> dict[str, Any]:
    with path.open(encoding="utf-8") as fh:
        data = yaml.load(fh, Loader=_Loader)  # noqa: S506 - a safe loader either way
    if not isinstance(data, dict):
        raise CatalogError(f"{path.name}: expected a mapping at top level")
    return data


def _requires(value: Any, where: str) -> list[str]:
    out = _str_list(value, where)
    for item in out:
        key, sep, val = item.partition("=")
        if not sep or not key.strip() or not val.strip():
            raise CatalogError(f"{where}: {item!r} is not key=value")
    return out


def _set_by_zh(o: Mapping[str, Any], where: str) -> str | None:
    zh = _opt_str(o.get("set_by_zh"))
    if zh is not None:
        if zh.count("`") % 2:
            raise CatalogError(f"{where}: set_by_zh has an unclosed code span")
        changed = _differ(str(o.get("set_by")), zh)
        if changed:
            raise CatalogError(f"{where}: set_by_zh {changed}")
    return zh


def _build_options(
    raw: Any, where: str, frameworks: Mapping[str, Framework]
) -> dict[str, list[Option]]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise CatalogError(f"{where}: expected framework -> list of options")
    out: dict[str, list[Option]] = {}
    for fw_id, items in raw.items():
        if fw_id not in frameworks:
            raise CatalogError(f"{where}: unknown framework id {fw_id!r}")
        opts = []
        for i, o in enumerate(items or []):
            w = f"{where}.{fw_id}[{i}]"
            status = str(_require(o, "status", w))
            if status.startswith("not found"):
                # An option absent at the snapshot must never read as "this framework has it".
                raise CatalogError(f"{w}: options must exist at the snapshot (status {status!r})")
            opts.append(
                Option(
                    framework=fw_id,
                    name=str(_require(o, "name", w)),
                    set_by=str(_require(o, "set_by", w)),
                    keys=_str_list(o.get("keys"), w + ".keys"),
                    value_hint=_opt_str(o.get("value_hint")),
                    file=str(_require(o, "file", w)),
                    status=status,
                    default=_opt_str(o.get("default")),
                    commit=_opt_str(o.get("commit")) or frameworks[fw_id].verified_commit,
                    note=_opt_str(o.get("note")),
                    first_commit=_commit(o.get("first_commit"), w + ".first_commit"),
                    first_landing=_commit(o.get("first_landing"), w + ".first_landing"),
                    requires=tuple(_requires(o.get("requires"), w + ".requires")),
                    on_by_default=o.get("on_by_default") is True,
                    set_by_zh=_set_by_zh(o, w),
                )
            )
        if opts:
            out[fw_id] = opts
    return out


def load_catalog_from(directory: Path) -> Catalog:
    """Load and validate the catalog in `directory` (uncached; tests use it on bad data)."""
    fw_data = _load_yaml(directory / "frameworks.yaml").get("frameworks") or []
    frameworks: dict[str, Framework] = {}
    for i, f in enumerate(fw_data):
        w = f"frameworks.yaml[{i}]"
        fid = str(_require(f, "id", w))
        if fid in frameworks:
            raise CatalogError(f"{w}: duplicate framework id {fid!r}")
        frameworks[fid] = Framework(
            id=fid,
            name=str(_require(f, "name", w)),
            repo=str(_require(f, "repo", w)),
            former_repos=_str_list(f.get("former_repos"), w),
            default_branch=str(f.get("default_branch") or "main"),
            verified_commit=str(_require(f, "verified_commit", w)),
            config_style=str(f.get("config_style") or ""),
            verified_date=_opt_str(f.get("verified_date")),
        )
    repo_index: dict[str, str] = {}
    for fw in frameworks.values():
        for r in fw.repos:
            if r.lower() in repo_index:
                raise CatalogError(f"repository {r!r} belongs to two frameworks")
            repo_index[r.lower()] = fw.id

    fail_data = _load_yaml(directory / "failures.yaml").get("failures") or {}
    failures: dict[str, FailureKind] = {}
    for key, f in fail_data.items():
        w = f"failures.yaml:{key}"
        failures[key] = FailureKind(
            key=key,
            title=str(_require(f, "title", w)),
            title_zh=str(_require(f, "title_zh", w)),
            description=str(_require(f, "description", w)),
            description_zh=str(_require(f, "description_zh", w)),
        )
    missing = [k for k in CONTRACT_FAILURE_KEYS if k not in failures]
    if missing:
        raise CatalogError(f"failures.yaml: contract failure keys missing: {missing}")

    meth_data = _load_yaml(directory / "methods.yaml").get("methods") or []
    methods: dict[str, Method] = {}
    for i, m in enumerate(meth_data):
        mid = str(_require(m, "id", f"methods.yaml[{i}]"))
        w = f"methods.yaml:{mid}"
        if mid in methods:
            raise CatalogError(f"{w}: duplicate method id")
        fails = _str_list(m.get("failures"), w + ".failures")
        for k in fails:
            if k not in failures:
                raise CatalogError(f"{w}: unknown failure key {k!r}")
        papers = []
        for p in m.get("papers") or []:
            papers.append(
                PaperRef(
                    arxiv_id=_opt_str(p.get("arxiv_id")),
                    title=str(_require(p, "title", w)),
                    source=_opt_str(p.get("source")),
                    url=_opt_str(p.get("url")),
                )
            )
        cautions = [_caution(c, w) for c in m.get("cautions") or []]
        methods[mid] = Method(
            id=mid,
            name=str(_require(m, "name", w)),
            aliases=_str_list(m.get("aliases"), w + ".aliases"),
            papers=papers,
            first_public=_public_date(m.get("first_public"), w),
            failures=fails,
            cautions=cautions,
            options=_build_options(m.get("options"), w + ".options", frameworks),
            related=_build_options(m.get("related"), w + ".related", frameworks),
            note=_opt_str(m.get("note")),
        )
    return Catalog(
        frameworks=frameworks, failures=failures, methods=methods, _repo_index=repo_index
    )


def load_concerns_from(path: Path) -> dict[str, ConcernKind]:
    """The concern kinds in `path` (a concerns.yaml), validated: exactly the contract's keys,
    in its order, each with a title and a description."""
    data = _load_yaml(path).get("concerns") or {}
    concerns = {
        key: ConcernKind(key=key, title=str(_require(c, "title", f"{path.name}:{key}")),
                         description=str(_require(c, "description", f"{path.name}:{key}")))
        for key, c in data.items()
    }
    if tuple(concerns) != CONTRACT_CONCERN_KEYS:
        raise CatalogError(f"{path.name}: the contract's concern keys, in its order, are "
                           f"{list(CONTRACT_CONCERN_KEYS)}; it has {list(concerns)}")
    return concerns


@functools.cache
def concern_kinds() -> dict[str, ConcernKind]:
    """The contract's concern kinds, titled (concerns.yaml beside this file), loaded once."""
    return load_concerns_from(CATALOG_DIR / "concerns.yaml")


@functools.cache
def load_catalog() -> Catalog:
    """The project's catalog, loaded and validated once per process."""
    return load_catalog_from(CATALOG_DIR)


def canonical_repo(full_name: str) -> str:
    """A repository's current name (`volcengine/verl` -> `verl-project/verl`) in the project's
    catalog; any other name unchanged."""
    return load_catalog().canonical_repo(full_name)


def framework_id(full_name: str) -> str | None:
    """The id of the tracked framework `full_name` (current or former name) is, else None."""
    framework = load_catalog().framework_for_repo(full_name)
    return framework.id if framework is not None else None


__all__ = [
    "CONTRACT_CONCERN_KEYS",
    "CONTRACT_FAILURE_KEYS",
    "Catalog",
    "CatalogError",
    "Caution",
    "ConcernKind",
    "FailureKind",
    "Framework",
    "Method",
    "Option",
    "PaperRef",
    "canonical_repo",
    "concern_kinds",
    "framework_id",
    "load_catalog",
    "load_catalog_from",
    "load_concerns_from",
]
