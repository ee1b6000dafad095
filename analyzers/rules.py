"""Contribution-rule summaries: what a project asks of contributors, from its CONTRIBUTING file,
PR and issue templates, agent guides, workflows, CODEOWNERS and rulesets.

`summarize_rules(files)` takes `{repository path: text}` and returns facts, each with a topic, a
short statement in our own words, the source file and the evidence (the sentence that matched).
Sentence rules are data (analyzers/rules_patterns.yaml): groups of phrases matched with spaCy's
PhraseMatcher (and token patterns with the Matcher); a rule fires on a segment when every group
has a hit. Structural facts (stale workflows, CODEOWNERS, rulesets, forms) come from
analyzers/rules_structured.py. Known facts that no file states (repository layout, history) can
be added per framework from analyzers/rules_observed.yaml (`framework=`).

`format_rules_markdown(summary, lang)` renders the summary for a GitHub comment or the CLI: only
our statements and file names, never the files' own text beyond short code names.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from analyzers import rules_structured as structured
from analyzers.guide_places import sub_project_guides, sub_project_of
from analyzers.rules_text import (
    IT_IS_NOT_ASKED,
    MAX_CHARS,
    Segment,
    bounded_runs,
    file_kind,
    form_segments,
    front_matter,
    inline,
    load_yaml,
    markdown_segments,
    match_form,
    repository_path,
)

if TYPE_CHECKING:
    from analyzers.nlp import SubstringTable

# 7: conditions kept in glossed sentences, audience-scoped and maintainers' sections, accent-free
# French/Spanish (rules71); contrasts, wishes, tests for one kind of change (rules72); RFC 2119
# MAY, Korean waivers (rules73); the organisation's .github files, PR template folders and a
# CONTRIBUTING's linked pages read (fetch72).
# 6: Japanese guides, waivers, conditions kept on docs/changelog/speed rules, approver counts,
# commit subjects, news fragments (rules66); 5: rules as other projects write them, Chinese guides through a gloss, conditions and scope
# kept (rules65, rulesj65, ruleszh65, rulesm65); 4: statements only with the details their sentence names, citations only of the files that
# state the rule (rules64); 3: MyST admonitions, lead + item segments, contributions sent
# elsewhere (rules7).
RULES_VERSION = "10"
# The topics a researcher proposing a method needs (for a short comment:
# format_rules_markdown(summary, lang, topics=PROPOSAL_TOPICS, max_per_topic=3)).
PROPOSAL_TOPICS = ["general", "scope", "issue-first", "tests", "docs", "lint", "sign-off",
                   "pr-title", "algorithms", "paper", "review", "ci", "ai-policy"]
HERE = Path(__file__).resolve().parent
PATTERNS_FILE = HERE / "rules_patterns.yaml"
OBSERVED_FILE = HERE / "rules_observed.yaml"
MAX_EVIDENCE = 200
YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # a safe loader either way
MAX_CITED = 3  # files named after a rule in the rendered summary
KIND_ORDER = {"contributing": 0, "pr_template": 1, "governance": 2, "issue_template": 3,
              "issue_config": 3, "discussion_template": 4, "doc": 5, "agents": 6}
_PLACEHOLDER = re.compile(r"\{(\w+)\}")
_MENTION = re.compile(r"@(?=[\w-])")
# (an underscore inside a name is kept: "kd_baseline" is no emphasis in CommonMark, and
# "kd baseline" named nothing the file names, rules79)
_MARKUP = re.compile(r"[<>\[\]`*|#\\]|(?<!\w)_|_(?!\w)")


def plain(text: str) -> str:
    """A short phrase taken from a file (a table cell, a bold lead, an extracted value) made
    inert for Markdown and HTML: markup characters dropped, but a name's inner underscore."""
    return " ".join(_MARKUP.sub(" ", text).split())[:120]


@dataclass(frozen=True)
class Rule:
    id: str
    topic: str
    groups: tuple[tuple[str, ...], ...]  # phrase keys per group (all groups must hit)
    none: tuple[str, ...]
    section: tuple[str, ...]
    kinds: tuple[str, ...]
    segment_kinds: tuple[str, ...]
    unless: tuple[str, ...]
    extract: tuple[tuple[str, re.Pattern[str]], ...]
    extract_all: tuple[tuple[str, re.Pattern[str]], ...]
    statement: str
    fallback: tuple[str, ...]  # tried in order when the statement's placeholders have no value
    statement_zh: str | None
    strength: str
    collect: bool
    collect_value: str
    prefer_combined: bool
    directive: bool  # only sentences that ask for something (modal, imperative, checklist)
    codes_match: re.Pattern[str] | None  # only code spans like this fill {code} / {codes}
    collect_codes: bool  # collect: one fact listing the matching code spans of every hit
    collect_format: str  # collect: each hit rendered with this template (e.g. "{label} in {code}")
    collect_plain: bool  # collect: values listed as plain lower-case words, not code spans
    within: int  # > 0: a first-group hit is followed within this many tokens (no punctuation
    # between) by a last-group hit ("must have informative docstrings")
    when: tuple[str, ...] = ()  # extracted values the main statement needs beyond its
    # placeholders: its details are said only of a segment that names them, else a fallback
    bare_paths: bool = False  # no code span like codes_match: paths written as plain text
    # ("Put new wrappers in kea/wrappers/") fill {code} / {codes}
    lower: tuple[str, ...] = ()  # extracted values said mid-statement (first letter lowered)
    keep_condition: bool = False  # a rule the file states under a condition ("if you change
    # the public API, add an entry ...") is stated with it, not as asked of every PR
    conditional: str = ""  # with keep_condition: the statement said under a condition, its
    # `{condition}` filled ("Open an issue first, for a new X"), when the statement itself names
    # the cases ("... new features or larger changes ...") the condition replaces
    absence: bool = False  # the statement says a rule is NOT stated ("No sign-off rule is
    # stated; ..."): never made when a file has sentences the patterns cannot read
    permission: bool = False  # the statement says what is allowed ("Anyone in the community
    # may review a PR"), not what is asked: a waiver ("... is welcome to review") cannot undo it
    weak_first: tuple[str, ...] = ()  # first-group keys that alone do not say the topic
    none_if_weak: tuple[str, ...] = ()  # veto words when the first group's hits are all weak
    # ("benchmark" beside "accuracy" is an evaluation, not a speed measurement) (rules73)


@dataclass
class Table:
    topics: dict[str, dict[str, str]]
    core: tuple[str, ...]
    rules: list[Rule]
    phrase_matcher: Any
    token_matcher: Any
    signatures: list[dict[str, Any]]
    texts: dict[str, dict[str, str]]
    by_first_key: dict[str, list[int]]  # matcher key -> rules whose first group holds it
    modal: re.Pattern[str]  # words that make a sentence a request ("must", "please", ...)
    waived: re.Pattern[str]  # words that say a thing is not asked ("you do not need to", ...)
    imperative: frozenset[str]  # verbs that make a sentence starting with them a request
    lead_adverbs: frozenset[str]  # "always", "never", ...: the verb after them counts
    conditions: frozenset[str]  # "if", "when", ...: the request follows the first comma
    checklist_sections: tuple[str, ...]  # headings whose list items are requests
    template_table_sections: tuple[str, ...]  # a PR template's headings whose table rows are
    offers: re.Pattern[str]  # a list introduced as kinds of contribution ("ways you can help:")
    question_starts: frozenset[str]  # "Do you want to add docs?" asks a question, not for a thing
    commit_type: re.Pattern[str]  # "test: adding missing tests": a kind of commit described
    contrasts: frozenset[tuple[str, str]]  # ("rather", "than"): what follows is not asked
    contrast: re.Pattern[str]  # the same two words in a text


def _nlp() -> Any:
    try:
        from analyzers.nlp import nlp
    except ImportError:  # pragma: no cover - until the shared pipeline exists
        from analyzers.rules_text import _fallback_nlp as nlp
    return nlp()


@lru_cache(maxsize=1)
def _patterns_data() -> dict[str, Any]:
    """rules_patterns.yaml as read (libyaml when present: ~10x faster than pure Python)."""
    return yaml.load(PATTERNS_FILE.read_text(encoding="utf-8"), Loader=YAML_LOADER)  # noqa: S506


@dataclass(frozen=True)
class Wording:
    """What a summary is rendered with: the topics' names and the fixed texts. Plain data from
    the pattern file, without spaCy, so rendering a stored summary builds no matcher."""

    topics: dict[str, dict[str, str]]
    texts: dict[str, dict[str, str]]


def wording() -> Wording:
    data = _patterns_data()
    return Wording(topics=data["topics"], texts=data["texts"])


@lru_cache(maxsize=1)
def table() -> Table:
    """The rule table, compiled once: one PhraseMatcher and one Matcher for all rules."""
    from spacy.matcher import Matcher, PhraseMatcher

    data = _patterns_data()
    pipe = _nlp()
    phrases = PhraseMatcher(pipe.vocab, attr="LOWER")
    tokens = Matcher(pipe.vocab)
    keys: dict[str, str] = {}  # phrase text or pattern repr -> matcher key

    def key_for(entry: Any) -> str:
        if isinstance(entry, str):
            norm = entry.lower().strip()
            if norm not in keys:
                keys[norm] = f"p{len(keys)}"
                phrases.add(keys[norm], [pipe.make_doc(match_form(norm))])
            return keys[norm]
        rep = repr(entry)
        if rep not in keys:
            keys[rep] = f"t{len(keys)}"
            tokens.add(keys[rep], [entry])
        return keys[rep]

    rules = []
    for raw in data["rules"]:
        rules.append(Rule(
            id=raw["id"],
            topic=raw["topic"],
            groups=tuple(tuple(key_for(e) for e in group) for group in raw["all"]),
            none=tuple(key_for(e) for e in raw.get("none", [])),
            section=tuple(s.lower() for s in raw.get("section", [])),
            kinds=tuple(raw.get("kinds", [])),
            segment_kinds=tuple(raw.get("segments", [])),
            unless=tuple(raw.get("unless", [])),
            extract=tuple((k, re.compile(v, re.I)) for k, v in (raw.get("extract") or {}).items()),
            extract_all=tuple(
                (k, re.compile(v, re.I)) for k, v in (raw.get("extract_all") or {}).items()
            ),
            statement=raw["statement"],
            fallback=tuple([raw["fallback"]] if isinstance(raw.get("fallback"), str)
                           else raw.get("fallback") or ()),
            statement_zh=raw.get("statement_zh"),
            strength=raw.get("strength", "rule"),
            collect=bool(raw.get("collect", False)),
            collect_value=str(raw.get("collect_value", "")),
            prefer_combined=raw.get("prefer") == "combined",
            directive=bool(raw.get("directive", False)),
            codes_match=re.compile(raw["codes_match"], re.I) if raw.get("codes_match") else None,
            collect_codes=bool(raw.get("collect_codes", False)),
            collect_format=str(raw.get("collect_format", "")),
            collect_plain=bool(raw.get("collect_plain", False)),
            within=int(raw.get("within", 0)),
            when=tuple(raw.get("when", [])),
            bare_paths=bool(raw.get("bare_paths", False)),
            lower=tuple(raw.get("lower", [])),
            keep_condition=bool(raw.get("keep_condition", False)),
            conditional=str(raw.get("conditional", "")),
            absence=bool(raw.get("absence", False)),
            permission=bool(raw.get("permission", False)),
            weak_first=tuple(key_for(e) for e in raw.get("weak_first", [])),
            none_if_weak=tuple(key_for(e) for e in raw.get("none_if_weak", [])),
        ))
    by_first_key: dict[str, list[int]] = {}
    for i, rule in enumerate(rules):
        for key in rule.groups[0]:
            by_first_key.setdefault(key, []).append(i)
    cues = data["directive"]
    modal = re.compile(r"\b(?:" + "|".join(
        re.escape(m).replace(r"\ ", r"\s{1,3}") for m in sorted(cues["modal"], key=len, reverse=True)
    ) + r")\b")
    waived = re.compile(r"(?:^|\W)(?:" + "|".join(
        re.escape(m).replace(r"\ ", r"\s{1,3}") for m in sorted(cues["waived"], key=len, reverse=True)
    ) + r")(?:\W|$)")
    return Table(
        modal=modal,
        waived=waived,
        imperative=frozenset(cues["imperative"]),
        lead_adverbs=frozenset(cues.get("lead_adverbs", [])),
        conditions=frozenset(cues.get("conditions", [])),
        checklist_sections=tuple(cues.get("sections", [])),
        template_table_sections=tuple(cues.get("template_table_sections", [])),
        offers=re.compile(r"\b(?:" + "|".join(
            re.escape(m).replace(r"\ ", r"\s{1,3}") for m in sorted(cues["offers"], key=len, reverse=True)
        ) + r")\b"),
        question_starts=frozenset(cues["question_starts"]),
        commit_type=re.compile(r"^(?:" + "|".join(map(re.escape, cues.get("commit_types", []))) +
                               r")(?:\([\w-]{1,20}\))?(?::|\s{1,3}[—–-])\s"),
        contrasts=frozenset((first, second) for first, second in (c.split(" ", 1) for c in cues["contrasts"])),
        contrast=re.compile(r"\b(?:" + "|".join(
            re.escape(c).replace(r"\ ", r"\s{1,3}") for c in cues["contrasts"]) + r")\b"),
        by_first_key=by_first_key,
        topics=data["topics"],
        core=tuple(data["core_topics"]),
        rules=rules,
        phrase_matcher=phrases,
        token_matcher=tokens,
        signatures=data.get("workflow_signatures", []),
        texts=data["texts"],
    )


@lru_cache(maxsize=1)
def observed_facts() -> dict[str, list[dict[str, Any]]]:
    data = yaml.load(OBSERVED_FILE.read_text(encoding="utf-8"), Loader=YAML_LOADER) or {}  # noqa: S506
    return {k: list(v or []) for k, v in data.items()}


# --- segmentation of every file -----------------------------------------------------------


@lru_cache(maxsize=3)
def _gloss_phrases(language: str) -> SubstringTable:
    """The known phrases of one language (`chinese_gloss`, `japanese_gloss`, `korean_gloss`) as a lookup."""
    from analyzers.nlp import SubstringTable

    return SubstringTable(dict(_patterns_data().get(f"{language}_gloss", {}).items()))


# Kana (hiragana, katakana) mark a Japanese text: Chinese has none; Hangul a Korean one.
_KANA = re.compile(r"[\u3040-\u30ff]")
_HANGUL = re.compile(r"[\uac00-\ud7a3\u1100-\u11ff\u3130-\u318f]")


# Counts said in Chinese: "30 天" is "30 days", "两位维护者" is "two approvals".
_ZH_WAIT = re.compile(r"(\d{1,3})\s{0,2}(天|日|周|个月)")
_ZH_WAIT_UNIT = {"天": "days", "日": "days", "周": "weeks", "个月": "months"}
_ZH_APPROVERS = re.compile(r"(两|二|三|[2-9])\s{0,2}[位名个人]\s{0,2}(?:の\s{0,2})?(?:维护者|审核者|评审者|メンテナー?|レビュアー|reviewers?|maintainers?)", re.I)
_ZH_NUMBER = {"两": "two", "二": "two", "三": "three"}
# "新增算法的 PR" (PRs that add an algorithm): the PRs a rule is about, a condition (rules71);
# "未签署 CLA 的 PR" or "45 天没有动态的 PR" (no verb of change) are not.
# "对公开接口的改动，" (changes to the public API): the changes a rule is about, likewise.
_ZH_SCOPED_PRS = re.compile(r"(?:新增|修改|改动|变更|添加|增加|涉及|改变)[^，。；：！？,.;:!?\n]{1,24}?的\s{0,2}(?:pr|PR|pull request)"
                            r"|对[^，。；：！？,.;:!?\n]{1,24}?的(?:改动|修改|变更|更改)")
_ZH_PUNCT = {"，": ",", "、": ",", "；": ";", "：": ":", "。": ".", "！": "!", "？": "?", "（": "(", "）": ")",
             "「": '"', "」": '"'}
_ZH_PLURAL = {"pr": "PRs", "issue": "issues", "pull request": "pull requests"}
_LATIN_RUN = re.compile(r"[\x21-\x7e](?:[\x20-\x7e]{0,400}[\x21-\x7e])?")


@lru_cache(maxsize=1)
def _traditional_chinese() -> tuple[dict[int, str], re.Pattern[str], dict[str, str]]:
    """rules_patterns.yaml `chinese_traditional`: the Traditional characters the Chinese gloss
    needs mapped to their Simplified forms (a str.translate table and a pattern finding any of
    them), and the Taiwan words, each padded to its own length."""
    data = _patterns_data()["chinese_traditional"]
    pairs = data["characters"].split()
    words = {word: simplified.ljust(len(word)) for word, simplified in data["words"].items()}
    return ({ord(pair[0]): pair[1] for pair in pairs},
            re.compile("[" + "".join(pair[0] for pair in pairs) + "]"),
            words)


def _simplified(text: str) -> str:
    """A Chinese text in the Simplified spelling the gloss reads, character for character (so
    offsets in it are offsets in the text): unchanged unless it has Traditional characters."""
    table, traditional, words = _traditional_chinese()
    if traditional.search(text) is None:
        return text
    text = text.translate(table)
    for word, simplified in words.items():
        text = text.replace(word, simplified)
    return text


def _lower_in_place(text: str) -> str:
    """The text in lower case, each character where it was (a few letters lengthen when
    lowered, "İ": those stay as written), so offsets in it are offsets in the text."""
    low = text.lower()
    if len(low) != len(text):
        low = "".join(c.lower() if len(c.lower()) == 1 else c for c in text)
    return low


def gloss_zh(text: str) -> str:
    """A Chinese or Japanese sentence read in English for the rule patterns: the glosses of
    the known phrases (rules_patterns.yaml `chinese_gloss`, or `japanese_gloss` for a text
    with kana), its counts, its punctuation and its Latin runs (paths, commands, "issue",
    "PR"), in text order; "" for text without either. Only words the file has are glossed, so
    no rule is read that the sentence does not state."""
    # analyzers.nlp imports spaCy: imported here, so rendering a stored summary (this module's
    # format_rules_markdown, on the event loop) never loads it.
    from analyzers.nlp import has_cjk

    if text.isascii():
        return ""
    japanese = _KANA.search(text) is not None
    korean = not japanese and _HANGUL.search(text) is not None
    if not japanese and not korean and not has_cjk(text):
        return ""
    if not japanese and not korean:
        text = _simplified(text)
    low = _lower_in_place(text)
    spans: list[tuple[int, int, str]] = []
    for m in _ZH_WAIT.finditer(text):
        spans.append((m.start(), m.end(), f"{m.group(1)} {_ZH_WAIT_UNIT[m.group(2)]}"))
    for m in _ZH_APPROVERS.finditer(text):
        spans.append((m.start(), m.end(), f"{_ZH_NUMBER.get(m.group(1), m.group(1))} approvals"))
    for m in _ZH_SCOPED_PRS.finditer(text):
        # only "的 PR" is glossed so: the words before it ("新增算法") are read as usual
        spans.append((m.group().rindex("的") + m.start(), m.end(), "in some cases PRs"))
    language = "japanese" if japanese else "korean" if korean else "chinese"
    for hit in _gloss_phrases(language).find(low, lowered=True):
        spans.append((hit.start, hit.start + len(hit.text), hit.label))
    covered = bytearray(len(text))
    kept: list[tuple[int, str]] = []
    # longer spans first, so the phrases inside them are not read again
    for start, end, words in sorted(spans, key=lambda s: (s[0] - s[1], s[0])):
        if any(covered[start:end]):
            continue
        covered[start:end] = b"\x01" * (end - start)
        kept.append((start, words))
    for i, ch in enumerate(text):
        if ch in _ZH_PUNCT and not covered[i]:
            kept.append((i, _ZH_PUNCT[ch]))
    for m in _LATIN_RUN.finditer(text):
        run = "".join(ch if not covered[m.start() + k] else " " for k, ch in enumerate(m.group()))
        if run.strip():
            # Chinese nouns have no number: "超过 30 天的 PR" speaks of PRs
            kept.append((m.start(), _ZH_PLURAL.get(run.strip().lower(), run.strip())))
    kept.sort(key=lambda k: k[0])
    return " ".join(words for _, words in kept)


def _whole_words(phrases: Any) -> re.Pattern[str]:
    """Phrases as one pattern of whole words, longest first (one C-level pass per sentence);
    a phrase ending in an apostrophe ("n'", "avant d'") may run into the next word."""
    alternatives = sorted(map(re.escape, phrases or ()), key=len, reverse=True)
    if not alternatives:
        return re.compile(r"(?!)")  # no phrase: matches nothing (not the empty string)
    return re.compile(r"(?<![^\W\d_])(?:" + "|".join(alternatives) + r")(?:(?<=['’])|(?![^\W\d_]))")


def _latin_languages() -> list[str]:
    """The languages in Latin script read through a gloss (rules_patterns.yaml `latin_languages`)."""
    return list(_patterns_data()["latin_languages"])


def _unread_words() -> list[str]:
    """The function words of every glossed Latin-script language and of the unread ones."""
    data = _patterns_data()
    return [w for language in _latin_languages() for w in data[f"{language}_words"]] + list(
        data["unread_language_words"])


@lru_cache(maxsize=1)
def _function_words() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """rules_patterns.yaml's function words of the languages English is told from (French,
    Spanish, German, Portuguese and Vietnamese are read through a gloss but still counted here:
    rules68's note and absence rule use them), and the English ones."""
    return _whole_words(_unread_words()), _whole_words(_patterns_data()["unread_language_english"])


@dataclass(frozen=True)
class LatinLanguage:
    """One language read through its gloss: its function words, its phrases with the names
    (pattern, phrase -> English), its own phrases alone, its negations and its "without"."""

    words: re.Pattern[str]
    pattern: re.Pattern[str]
    glosses: dict[str, str]
    own: re.Pattern[str]
    negation: re.Pattern[str]
    without: re.Pattern[str]


@dataclass(frozen=True)
class LatinGloss:
    """Guides in Latin script read in English (rules_patterns.yaml `latin_languages`, each with
    `<language>_gloss` and `<language>_words`): the languages, and the headings that scope or
    drop a section."""

    languages: dict[str, LatinLanguage]
    audience: re.Pattern[str]
    maintainers: re.Pattern[str]
    retired: re.Pattern[str]
    retired_remarks: re.Pattern[str]


@lru_cache(maxsize=1)
def _latin_gloss() -> LatinGloss:
    data = _patterns_data()
    languages = {}
    for language in _latin_languages():
        own = {w.lower(): english for english, words in data[f"{language}_gloss"].items() for w in words}
        glosses = {name.lower(): name for name in data["latin_names"]} | own
        # French and Spanish share `latin_negation` / `latin_without`; a language whose "no" is
        # another word ("no" is Portuguese "in the") has its own list
        negation = data.get(f"{language}_negation", data["latin_negation"])
        without = data.get(f"{language}_without", data["latin_without"])
        languages[language] = LatinLanguage(_whole_words(data[f"{language}_words"]), _whole_words(glosses),
                                            glosses, _whole_words(own), _whole_words(negation),
                                            _whole_words(without))
    return LatinGloss(languages, _whole_words(data["audience_headings"]), _whole_words(data["maintainer_headings"]),
                      _whole_words(data["retired_headings"]), _whole_words(data["retired_remarks"]))


# What a gloss keeps of the words it has no phrase for: names and paths ("CHANGELOG.md",
# "tests/", "pkg.module", "LOSSES", "snake_case", taken whole before any phrase inside them)
# and punctuation.
_LATIN_TOKEN = re.compile(r"\S{1,300}")
_LATIN_TOKEN_EDGES = "`'\"«»“”()[]{}<>,;:.!?*"
_LATIN_NAME = re.compile(r"[/_]|\.\w")
_LATIN_PUNCT = re.compile(r"[,;:()!?]|\.(?=\s|$)")
_LATIN_PIECE = re.compile(r"(?<=[.;!?])\s+")
# French « ne ... que » is "only" ("n'est fusionnée qu'après l'approbation": merged only after
# the approval), not a negation, when no other negation word is in the piece (rules71).
_NE_QUE = re.compile(r"(?<![^\W\d_])(?:ne\s|n['’])[^.;!?]{1,80}?(?<![^\W\d_])(qu(?:e(?![^\W\d_])|['’]))")
_NE_ALONE = frozenset({"ne", "n'", "n’"})


def gloss_latin(text: str) -> str:
    """A French or Spanish sentence read in English for the rule patterns (as gloss_zh reads
    Chinese): "" for any other text. A piece (sentence or "; " part) with a negation states
    nothing ("ne doivent jamais être poussés" is no request to push), unless "without" undoes
    it ("aucune PR n'est fusionnée sans l'approbation de ..." needs the approval); other words
    than the known phrases, names and paths are dropped, so no rule is read that the sentence
    does not state. A sentence whose every piece is negated reads as "." (nothing)."""
    gl = _latin_gloss()
    low = _URL.sub(" ", text[:4096].lower())
    counts = {name: len(language.words.findall(low)) for name, language in gl.languages.items()}
    if not any(counts.values()):
        return ""  # English, Italian, ...: not read
    # French, Spanish, German, Portuguese or Vietnamese: more of its function words and phrases
    # (not its loanwords) than English function words, at least two ("Chaque PR doit recevoir
    # l'approbation ..."); the language the sentence has most of (the first listed on a tie)
    counts = {name: n + len(gl.languages[name].own.findall(low)) for name, n in counts.items()}
    best = max(counts, key=lambda name: counts[name])
    if counts[best] < 2 or counts[best] <= len(_function_words()[1].findall(low)):
        return ""
    language = gl.languages[best]
    pattern, glosses = language.pattern, language.glosses
    words: list[str] = []
    for piece in _LATIN_PIECE.split(text[:4096])[:64]:
        low_piece = _lower_in_place(piece)
        undone = False
        kept: list[tuple[int, str]] = []
        covered = bytearray(len(piece))
        only = _NE_QUE.search(low_piece)
        if only and _NE_ALONE.issuperset(language.negation.findall(low_piece)):
            kept.append((only.start(1), "only"))  # « ne ... que »: a restriction
            covered[only.start(1):only.end(1)] = b"\x01" * (only.end(1) - only.start(1))
        elif language.negation.search(low_piece):
            if not language.without.search(low_piece):
                continue
            undone = True  # "no ... without X": X is asked for
        for m in _LATIN_TOKEN.finditer(piece):
            name = m.group().strip(_LATIN_TOKEN_EDGES)
            if len(name) > 1 and (_LATIN_NAME.search(name) or name.isupper()) \
                    and name.lower() not in glosses:  # "IA" is a word: "AI"
                at = m.start() + m.group().index(name)
                kept.append((at, name))
                covered[at:at + len(name)] = b"\x01" * len(name)
        for m in pattern.finditer(low_piece):
            if any(covered[m.start():m.end()]):
                continue
            english = glosses[m.group()]
            if undone and language.without.fullmatch(m.group()):
                english = "needs"
            kept.append((m.start(), english))
            covered[m.start():m.end()] = b"\x01" * (m.end() - m.start())
        for m in _LATIN_PUNCT.finditer(piece):
            if not covered[m.start()]:
                kept.append((m.start(), m.group()))
        kept.sort(key=lambda k: k[0])
        words += [w for _, w in kept]
    return " ".join(words) or "."


def addressed_to_some(heading: str) -> bool:
    """Whether a heading addresses some contributors only ("Pour les membres du laboratoire",
    "Solo para el equipo interno"): rules_patterns.yaml `audience_headings`."""
    return _latin_gloss().audience.search(heading[:300].lower()) is not None


def addressed_to_maintainers(heading: str) -> bool:
    """Whether a heading addresses the people who merge ("Maintainers only", "For maintainers"):
    rules_patterns.yaml `maintainer_headings`."""
    return _latin_gloss().maintainers.search(heading[:300].lower()) is not None


# A heading that names the version or date before which its rules held ("Before v0.6", "Prior to
# version 3", "Until 2024", "Pre-1.0 rules"): the rules of an old release (rules76).
_RETIRED_SINCE = re.compile(r"^(?:before|prior to|until|up to|pre-?)\s{0,2}(?:v|version\s{1,2}|release\s{1,2})?\d")


def retired_heading(heading: str) -> bool:
    """Whether a heading says its section's rules no longer apply ("Old rules (deprecated)",
    "Legacy process", "Before v0.6"): rules_patterns.yaml `retired_headings` / `retired_remarks`."""
    heading = heading[:300].lower()
    gloss = _latin_gloss()
    return bool(gloss.retired.search(heading) or _RETIRED_SINCE.match(heading)
                or any(gloss.retired_remarks.search(remark) for remark in _HEADING_REMARK.findall(heading)))


# A paragraph or list item led by a bold label ("**Deprecated:** ...", "> __Legacy:__ ...",
# "- **Old process (before v2):** ..."): the label is read as a heading of that paragraph only.
_BOLD_LABEL = re.compile(r"^ {0,3}(?:>\s{0,3})?(?:(?:[-*+]|\d{1,3}[.)])\s{1,4})?(\*\*|__)([^*_\n]{1,80}?)"
                         r"\s{0,2}[:.]?\s{0,2}\1\s{0,2}[:.]?")
_LIST_START = re.compile(r"^ {0,3}(?:>\s{0,3})?(?:[-*+]|\d{1,3}[.)])\s")


def retired_label(label: str) -> bool:
    """Whether a bold label says its paragraph no longer applies: a retired heading's words, or
    only a retired remark ("Deprecated", "Legacy", "Obsolete", with a parenthesised aside)."""
    label = label.strip().lower()
    bare = _HEADING_REMARK.sub(" ", label).strip()
    return retired_heading(label) or bool(bare and _latin_gloss().retired_remarks.fullmatch(bare))


def drop_retired_paragraphs(text: str) -> str:
    """The text without the paragraphs and list items led by a retired bold label (rules78:
    "**Deprecated:** Sign the CLA ..." under no heading of its own is the old rule, as a
    retired heading's section is). One pass over the lines; fenced blocks are kept."""
    lines = text[:MAX_CHARS].split("\n")
    fenced = dropping = False
    opens = True  # whether the line opens a paragraph (after a blank line or a heading)
    for i, line in enumerate(lines):
        if _FENCE_LINE.match(line):
            fenced = not fenced
            dropping = False
        if fenced:
            continue
        if not line.strip() or _ATX_HEADING.match(line):
            dropping, opens = False, True
            continue
        starts, opens = opens or bool(_LIST_START.match(line)), False
        if starts and (m := _BOLD_LABEL.match(line)) and retired_label(m.group(2)):
            dropping = True
        elif dropping and _LIST_START.match(line):
            dropping = False  # the next item of the list is not the labelled one
        if dropping:
            lines[i] = ""
    return "\n".join(lines) + text[MAX_CHARS:]


# A sentence that tells contributors a section is not for them ("Contributors can skip it.",
# "You can skip this section."): said as a whole sentence, not under a condition ("If you only
# change docs, you can skip this section" keeps the section's rules for everyone else).
_SECTION_SKIP = re.compile(
    r"(?:^|[.!?]\s)\s{0,3}(?:[-*>]\s{1,3})?(?:[~*_]{1,2})?(?:"
    r"(?:most\s|external\s|other\s)?(?:contributors|you)\s"
    r"(?:can|may|could)\s(?:safely\s)?(?:skip|ignore)\s(?:it|this|this\s(?:section|part|page|chapter))"
    # or that its rules no longer apply ("These rules no longer apply.", "This section is
    # deprecated.") (rules76)
    r"|(?:these|the following|this section[’']?s?)\s(?:rules\s|guidelines\s|instructions\s|steps\s"
    r"|requirements\s)?(?:no longer apply|no longer applies|(?:is|are) no longer (?:in effect|valid|required|used)"
    r"|(?:is|are) (?:deprecated|obsolete|outdated))"
    # or that it is for who merges ("The rest of this section is for maintainers.") (rules82)
    r"|(?:this|the rest of this|the following)\s(?:section|part|page|chapter)\s(?:is|are)\s(?:only\s)?"
    r"(?:for|meant for|intended for|addressed to)\s(?:the\s)?(?:maintainers|committers|release managers"
    r"|reviewers|the core team)"
    r")\s{0,3}[~*_]{0,2}[.!]", re.I)


# A later note that replaces the rules above it where they disagree ("This paragraph replaces the
# sections above wherever they disagree.", "The following supersedes the rules above."): the
# rules above it that the note speaks of no longer hold; the note's own rules do (rules77).
_REPLACES_ABOVE = re.compile(
    r"\b(?:this|the following|these|the)\s(?:paragraph|section|note|update|notice|change|changes"
    r"|rules|text)?\s?(?:below\s)?(?:replaces|supersedes|overrides|takes precedence over|replace"
    r"|supersede|override|take precedence over)\s(?:the|all|any|every)?\s?(?:\w{1,20}\s){0,2}"
    r"(?:above|earlier|before|previously)\b"
    r"|\b(?:the|any|all)\s(?:rules|sections|guidelines|instructions)\s(?:above|earlier)\s(?:are|is)\s"
    r"(?:replaced|superseded|overridden)\b", re.I)


def replacing_notes(segments: list[Segment]) -> dict[int, int]:
    """The segments of later notes that replace the rules above them ({segment index: index of
    the note's first sentence}): the sentence that says so and those after it under the same
    heading of the same file."""
    notes: dict[int, int] = {}
    start: int | None = None
    for i, seg in enumerate(segments):
        if start is not None and (seg.file != segments[start].file or seg.section != segments[start].section
                                  or seg.kind == "heading"):
            start = None
        if start is None and seg.kind != "code" and _REPLACES_ABOVE.search(seg.matched[:2000]):
            start = i
        if start is not None:
            notes[i] = start
    return notes


_LETTERS = re.compile(r"[^\W\d_]+")
_URL = re.compile(r"\b(?:https?://|www\.)\S{1,2000}")  # "github.com/..." is not Portuguese "com"


def unread_language(text: str) -> bool:
    """Whether a sentence is in a language the extractor reads only in part or not at all:
    prose in a Latin-script language read through a short gloss (`latin_languages`: French,
    Spanish, German, Portuguese, Vietnamese, Italian; more of their function words than
    English ones, at least two), or letters mostly outside the Latin script (Cyrillic, Arabic,
    ...). Chinese, Japanese and Korean are read through their gloss and do not count."""
    from analyzers.nlp import has_cjk

    low = _URL.sub(" ", text[:4096].lower())
    if not text.isascii():
        if has_cjk(text) or _KANA.search(text) or _HANGUL.search(text):
            return False
        letters = sum(len(w) for w in _LETTERS.findall(low))
        if sum(1 for ch in low if ch.isalpha() and ord(ch) > 0x24F) * 2 > letters > 0:
            return True
    unread, english = _function_words()
    foreign = len(unread.findall(low))
    return foreign >= 2 and foreign > len(english.findall(low))


# Letters English does not write (accented Latin, Greek, Cyrillic, Hebrew, Arabic, Indic, ...):
# a file without any is not looked at word by word (the frameworks' guides: ~10 ms saved).
_OTHER_LETTERS = re.compile(r"[\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f\u0370-\u1fff]")


def files_read_word_by_word(segments: list[Segment]) -> set[str]:
    """The files whose sentences are looked at for French and Spanish (and other languages):
    those with a letter English does not write, and those whose prose has more French, Spanish
    or German function words than English ones, at least four, in their first 3000 characters
    (written without accents, rules71; one count per file, not per sentence)."""
    files = {s.file for s in segments if _OTHER_LETTERS.search(s.text)}
    prose: dict[str, list[str]] = {}
    size: dict[str, int] = {}
    for seg in segments:
        # the first 3000 characters of prose tell the language of a guide
        if seg.file not in files and seg.kind != "code" and size.get(seg.file, 0) < 3000:
            prose.setdefault(seg.file, []).append(seg.text)
            size[seg.file] = size.get(seg.file, 0) + len(seg.text)
    unread, english = _function_word_sets()
    for path, texts in prose.items():
        # words counted by set lookup (the whole-word patterns cost 20 ms on the frameworks)
        words = _LETTERS.findall(_URL.sub(" ", "\n".join(texts)[:3000].lower()))
        foreign = sum(1 for w in words if w in unread)
        if foreign >= 4 and foreign > sum(1 for w in words if w in english):
            files.add(path)
    return files


@lru_cache(maxsize=1)
def _function_word_sets() -> tuple[frozenset[str], frozenset[str]]:
    """The function words of _function_words as sets of single words."""
    unread = [w for words in map(str.split, _unread_words()) for w in words]
    return frozenset(map(str.lower, unread)), frozenset(map(str.lower, _patterns_data()["unread_language_english"]))


def has_unread_prose(segments: list[Segment]) -> bool:
    """Whether any sentence (not code) of the files is in a language the extractor does not
    read; only the files _segments marked (files_read_word_by_word) are looked at."""
    return any(s.kind != "code" and s.word_by_word and unread_language(s.text) for s in segments)


# A yes/no question that opens a terse rule as its condition ("Touched `x/`? Numbers in the PR.",
# "Found a bug? Open an issue.", "Over 200 lines? Ask first."): read as "If you touched `x/`,
# numbers in the PR." A question word or an auxiliary opens a question asked (a FAQ's "Do I need
# to sign a CLA? No."), which is not a condition; one question and one answer only (rules78).
_QUESTION_CONDITION = re.compile(r"(?P<question>[^?\s][^?]{2,100})\?\s{1,3}(?P<rest>[^?\s][^?]{2,300})")
_ASKED = re.compile(
    r"(?:how|what|why|where|when|who|whom|whose|which|do|does|did|is|are|was|were|am|can|could|should"
    r"|shall|will|would|may|might|must|have|has|had|need|q|question|faq|any)\b", re.I)
_PAST_VERB = re.compile(r"[a-z]{2,20}ed|found|made|wrote|broke|built|hit|got|ran|brought|bought|took|saw|sent|chose", re.I)


def restate_question(text: str) -> str:
    """The text as "If you <question>, <rest>" when a yes/no question opens it as a condition,
    else ""."""
    m = _QUESTION_CONDITION.fullmatch(text.strip()[:420])
    if m is None or _ASKED.match(m.group("question")):
        return ""
    question, rest = m.group("question"), m.group("rest")
    first = question.split(None, 1)[0]
    subject = "If you " if _PAST_VERB.fullmatch(first) else "If "
    return f"{subject}{first[0].lower()}{question[1:]}, {rest[0].lower()}{rest[1:]}"


def _gloss_segment(seg: Segment, latin: bool = False) -> None:
    """Chinese, Japanese and Korean segments (and with `latin`, French and Spanish ones) are
    matched on their English gloss (their evidence stays as written); such a heading or list
    intro is read with its gloss too ("## 提交 PR 之前", "## Journal des modifications")."""
    def gloss(text: str) -> str:
        return gloss_zh(text) or (gloss_latin(text) if latin else "")

    seg.gloss = gloss(seg.text)
    if not seg.gloss and seg.kind in ("item", "sentence") and (restated := restate_question(seg.text)):
        seg.gloss, seg.restated = restated, True
    if section := gloss(seg.section):
        seg.section = f"{seg.section} {section}"
    if intro := gloss(seg.intro):
        seg.intro = f"{seg.intro} {intro}"


_ATX_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*)$")
_FENCE_LINE = re.compile(r"^ {0,3}(?:`{3,}|~{3,})")


def scoped_sections(text: str) -> tuple[set[str], set[str]]:
    """The headings (as segments name them: plain, lower case) under a heading addressed to
    some contributors only (scoped), and those under a heading addressed to maintainers or
    whose text says contributors can skip it (dropped: no contributor rule): that heading and
    its subheadings. One pass over the lines (a "# comment" in a fenced block is no heading);
    a name also used by a heading outside the dropped ones is not dropped."""
    scoped: set[str] = set()
    dropped: set[str] = set()
    kept: set[str] = set()  # headings outside the dropped ones
    open_at: int | None = None  # the level of the open addressed heading
    drop_at: int | None = None  # the level of the open heading for maintainers
    name, level = "", 0  # the current heading
    fenced = False
    for line in text[:MAX_CHARS].split("\n"):
        if _FENCE_LINE.match(line):
            fenced = not fenced
        if fenced:
            continue
        if not (m := _ATX_HEADING.match(line)):
            if drop_at is None and name and _SECTION_SKIP.search(line[:2000]):
                drop_at = level  # "Contributors can skip it.": this heading and those under it
                kept.discard(name)
                dropped.add(name)
            continue
        level = len(m.group(1))
        if open_at is not None and level <= open_at:
            open_at = None
        if drop_at is not None and level <= drop_at:
            drop_at = None
        name = inline(m.group(2).strip("# "))[0].lower()
        if drop_at is None and (addressed_to_maintainers(name) or retired_heading(name)):
            drop_at = level
        if drop_at is not None:
            dropped.add(name)
            continue
        kept.add(name)
        if open_at is None and addressed_to_some(name):
            open_at = level
        if open_at is not None:
            scoped.add(name)
    return scoped, dropped - kept


def part_files(kinds: Mapping[str, str], files: Mapping[str, str]) -> dict[str, tuple[str, str]]:
    """Files that ask their rules of some pull requests only ({path: (wording key, name)}), so
    a rule only they state is said as theirs, not of every PR (rules75):
    - a PR template of a `PULL_REQUEST_TEMPLATE/` folder holding several: each is chosen for
      one kind of pull request ("new_trainer.md"), named by its file name in words;
    - a sub-project's own guide (`packages/<name>/CONTRIBUTING.md`, `sdk/python/CONTRIBUTING.md`:
      the folders the fetch reads one from, analyzers/guide_places.py), and the pages inside its
      folder: their rules are the sub-project's, named by its folder (fetch82)."""
    folder = [p for p, k in kinds.items() if k == "pr_template"
              and p.lower().rsplit("/", 2)[-2:-1] == ["pull_request_template"]]
    parts = {p: ("template_scoped", re.sub(r"[\s_-]+", " ", p.rsplit("/", 1)[-1].rsplit(".", 1)[0]).strip())
             for p in folder} if len(folder) > 1 else {}
    guides = sub_project_guides({p: files[p] for p in kinds})
    parts.update({p: ("package_scoped", folder) for p, folder in guides.items()})
    # a page inside a package's folder (one its guide links to, fetch79) is the package's too
    folders = frozenset(guides.values())
    parts.update({p: ("package_scoped", folder) for p, k in kinds.items()
                  if k in ("doc", "contributing") and p not in guides
                  and (folder := sub_project_of(p, folders))})
    return parts


# A rule whose object points back at what the sentence before it told ("needs that table",
# "requires those numbers", "must include the same plots").
_POINTS_BACK = re.compile(
    r"\b(?:needs?|requires?|must\s(?:include|have|come\swith|carry))\s(?:that|those|these|the\ssame)\s"
    r"(?:tables?|numbers|results|comparisons?|reports?|figures|plots?|curves?|scores?)\b", re.I)


# A sentence whose subject is what the sentence before it named: the check ("The `validate`
# workflow checks the layout. It must pass before a maintainer looks at the PR."), the reviews
# ("Each new tutorial gets two reviews ... Both must approve before merging.") (rules83).
_SUBJECT_POINTS_BACK = re.compile(
    r"^\s{0,3}(?:(?:it|this|they|both)\s{1,3}(?:must|has\s{1,3}to|have\s{1,3}to|needs?\s{1,3}to|should)\s{1,3}"
    r"(?:pass|be\s{1,3}green|succeed)|(?:both|they|all\s{1,3}of\s{1,3}them)\s{1,3}(?:must|have\s{1,3}to|need\s{1,3}to)"
    r"\s{1,3}approve)\b", re.I)


def _segments(files: Mapping[str, str], kinds: dict[str, str]) -> list[Segment]:
    out: list[Segment] = []
    parts = part_files(kinds, files)
    for path, text in files.items():
        kind = kinds[path]
        if kind in ("workflow", "codeowners", "ruleset"):
            continue
        if path.lower().endswith((".yml", ".yaml")):
            data = load_yaml(text)
            if kind == "issue_config" and isinstance(data, dict):
                for link in data.get("contact_links") or []:
                    if isinstance(link, dict) and isinstance(link.get("about"), str):
                        out += markdown_segments(link["about"], path)
            else:
                out += form_segments(data, path)
            continue
        meta, body = front_matter(text) if kind == "issue_template" else ({}, text)
        for key in ("name", "about"):
            if isinstance(meta.get(key), str):
                out += markdown_segments(meta[key], path)
        body = drop_retired_paragraphs(body)
        start = len(out)
        out += markdown_segments(body, path)
        # (headings only: one pass over the lines, cheaper than searching the whole text)
        scoped, dropped = scoped_sections(body)
        if scoped or path in parts:
            for seg in out[start:]:
                seg.scoped = path in parts or seg.section.split(" / ", 1)[0] in scoped
        if dropped:
            # a section for the people who merge asks nothing of contributors (rules72)
            out[start:] = [seg for seg in out[start:] if seg.section.split(" / ", 1)[0] not in dropped]
    closed: dict[str, str] = {}  # per file, the numbered-rule section a "---" has closed
    for seg in out:
        if _NUMBERED_RULE.match(seg.section):
            if seg.kind == "heading":
                closed.pop(seg.file, None)
            elif _THEMATIC_BREAK.fullmatch(seg.text):
                closed[seg.file] = seg.section
            if closed.get(seg.file) == seg.section:
                seg.section = ""  # "---" then "Not a rule, just a note: ..."
    for i in range(1, len(out)):
        seg, before = out[i], out[i - 1]
        if (seg.kind == before.kind == "sentence" and seg.file == before.file
                and seg.section == before.section and (_POINTS_BACK.search(seg.text[:600])
                                                       or _SUBJECT_POINTS_BACK.search(seg.text[:600]))):
            # "Any change to a head needs that table." after a story's "She put the accuracy
            # ... in the PR description.": the rule asks what the sentence before it tells
            # (rules79: a benchmark rule told only as a story was not read)
            out[i] = Segment(f"{seg.text.rstrip('.')}: {before.text}", seg.file, "sentence",
                             seg.section, codes=[*seg.codes, *before.codes], scoped=seg.scoped)
    # French and Spanish are looked for only in files with a letter English does not write or
    # mostly foreign function words (as has_unread_prose): English guides are not read word by word.
    latin = files_read_word_by_word(out)
    for seg in out:
        seg.word_by_word = seg.file in latin
        _gloss_segment(seg, seg.word_by_word)
    # An item joined to its lead helps only when the lead asks for something ("The PR needs
    # to include:"); other leads' items are read on their own and in the combined segment.
    asks: dict[str, bool] = {}
    kept = []
    for seg in out:
        if seg.kind == "lead_item":
            if seg.intro not in asks:
                lead = Segment(seg.intro, seg.file, "sentence")
                _gloss_segment(lead, seg.file in latin)
                asks[seg.intro] = is_directive(lead, kinds.get(seg.file, ""))
            if not asks[seg.intro]:
                continue
        if (seg.kind == "sentence" and len(seg.text) < 40 and kept and kept[-1].kind == "sentence"
                and kept[-1].file == seg.file and kept[-1].section == seg.section
                and is_bare_waiver(seg.text)):
            # "Post the numbers.\n\nNot required.": a bare waiver, a sentence of its own (in the
            # same paragraph or the next), waives the sentence just before it (rules70 read it
            # only inside one segment)
            kept.pop()
        kept.append(seg)
    return kept


_LEAD_NOISE = re.compile(r"^[^A-Za-z]{0,12}(?:\((?:optional|required)\)\s{0,3})?", re.I)
# Clause ends for finding an imperative; ", so" and ", then" start a request after a reason
# ("The changelog is built from titles, so prefix the title with ..."), and ", but" one after
# an answer ("It is, but tell us which parts a model wrote").
_CLAUSE = re.compile(r"[.;!?]\s+|:\s+(?=[A-Za-z])|,\s(?:so|then|but)\s")
MAX_COMMAND = 60
MAX_COMMANDS = 3


_NON_WORD = re.compile(r"[^\w\s'-]")
_LAST_SENTENCE = re.compile(r"[.!?]\s")  # a list's intro is the sentence just before it
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


@lru_cache(maxsize=256)
def _heading_words(section: str) -> str:
    """A heading as " word word ...": punctuation ("Tests/Docs", "(AI)") becomes a space."""
    return " " + _NON_WORD.sub(" ", section)


# A table header that asks for what its rows name ("Change | Required with it", "then also").
_ASKING_HEADER = re.compile(r"\b(?:required|also|needed|what to do|to do)\b")


# A guide of numbered rules ("## Rule 3: Test what you add", "### Règle 2 : ..."): what is
# written under such a heading states the rule, in the present tense too ("Every PR adds a
# bullet to the changelog"), except its rationale ("*Why:* ...") and what follows a thematic
# break ("---") in it (rules69).
_NUMBERED_RULE = re.compile(r"(?:rule|règle|regla)\s{1,3}\d{1,3}\b")
_RATIONALE = re.compile(r"[*_ ]{0,3}(?:why|rationale|reason|pourquoi|por qué|motivo)\s{0,2}[*_]{0,2}\s{0,2}:", re.I)
_THEMATIC_BREAK = re.compile(r"[-*_ ]{3,}")


def required_form_box(seg: Segment, kind: str) -> bool:
    """A box an issue form will not submit unchecked (`required: true`, form_segments): a
    commitment the author makes, read as a checklist entry (rule kind `issue_form_box`)."""
    return kind == "issue_template" and seg.checkbox and seg.file.lower().endswith((".yml", ".yaml"))


def is_directive(seg: Segment, kind: str) -> bool:
    """A segment that asks something of contributors: a modal or request word ("must",
    "should", "please", "make sure", "we require"), a sentence that starts with an imperative
    verb ("Add tests ..."), or an item of a PR template's checklist (boxes and "Did you ...?"
    questions alike). Descriptions ("We use pytest.") are not requests."""
    if kind == "pr_template" and (seg.checkbox or (seg.kind == "item" and seg.text.endswith("?"))):
        return True
    if required_form_box(seg, kind):
        return True
    if kind == "contributing" and seg.checkbox and _PR_CHECKLIST.search(f"{seg.section} {seg.intro[-300:]}"):
        return True  # a guide's PR checklist ("Tick every box in your PR description") (rules76)
    tab = table()
    if kind == "pr_template" and seg.kind == "row" and seg.section and any(
            f" {w}" in _heading_words(seg.section) for w in tab.template_table_sections):
        return True  # a row of a PR template's "Checks" table is a checklist entry
    if seg.kind == "item" and tab.commit_type.match(seg.text[:40]):
        return False  # "test: adding missing tests" in a list of commit types describes one
    if seg.kind == "combined":
        # the whole list joined to its lead ("We follow Conventional Commits: feat: ...; ...")
        items = seg.text[:600].split(": ", 1)[-1].split("; ")
        if len(items) > 1 and all(tab.commit_type.match(item[:40]) for item in items[:-1]):
            return False
    if seg.text.endswith("?") and seg.text.split(" ", 1)[0].lower() in tab.question_starts:
        return False  # "Do you want to add documentation?": a question heading or FAQ entry
    if seg.intro and seg.kind in ("item", "combined", "lead_item") and tab.offers.search(
            _LAST_SENTENCE.split(seg.intro[-300:].lower())[-1]):
        return False  # "Ways you can contribute:" lists kinds of help, not requests
    if seg.intro and seg.kind in ("item", "lead_item") and (
            lead := _LAST_SENTENCE.split(seg.intro[-300:].lower())[-1].strip()).endswith(":") \
            and tab.modal.search(lead):
        return True  # an item of a list whose lead asks ("提交 PR 前请确认：", "Please make sure:")
    if seg.kind in ("item", "combined", "row") and seg.section and any(
            f" {w}" in _heading_words(seg.section) for w in tab.checklist_sections):
        return True  # an item (or a table row) of a checklist or requirements section
    if seg.kind == "row" and seg.intro and (
            tab.modal.search(header := seg.intro[:300].lower()) or _ASKING_HEADER.search(header)):
        return True  # a row of a table headed "If you change ... | you also need to ..."
    if _NUMBERED_RULE.match(seg.section) and seg.kind in ("sentence", "item") \
            and not _RATIONALE.match(seg.text):
        return True  # a sentence under "## Rule 3: Test what you add" spells the rule out
    if seg.kind == "item" and seg.restated and len(seg.text) <= MAX_TERSE_RULE:
        return True  # "Touched `x/`? Numbers in the PR.": a condition and what it asks (rules78)
    if seg.kind == "item" and len(seg.text) <= MAX_TERSE_RULE and _TERSE_RULE.search(_PARENTHESES.sub(" ", seg.text)):
        return True  # "PR title = squash commit: ...", "New envs → `pkg/envs/`": a terse rule
    low = seg.matched[:600].lower()
    if "?" in low:
        # "Do I need to update the docs for a typo fix? No.": a question (an FAQ entry) asks
        # nothing; the sentences around it still may
        low = " ".join(s for s in _SENTENCE_END.split(low)
                       if not (s.endswith("?") and s.split(" ", 1)[0] in tab.question_starts))
    if _PROVISO.search(low):
        return True  # "... is welcome as long as the PR names the tool": the proviso is asked
    if tab.waived.search(low):
        # "You do not need to add an entry" asks nothing: the modal inside a waiver is not
        # a request (the rest of the sentence may still be one).
        # a sentence's or clause's end after the waiver is kept ("The CLA is gone: sign off
        # every commit" still asks its second clause, rules77)
        low = tab.waived.sub(lambda m: f" {m.group(0)[-1]} " if m.group(0)[-1] in ".;:!?" else " ", low)
    if tab.modal.search(low):
        return True
    # Any sentence of the segment may be the request ("No benchmarks in tests/. Put them ...").
    for clause in _CLAUSE.split(low)[:8]:
        clause = _LEAD_NOISE.sub("", clause)
        # "If you change the router, the gating or the loss, attach ...": the request follows
        # the condition's last comma, not always its first (rules72); a few pieces are tried
        pieces = clause.split(",", 8)[1:] if clause.split(" ", 1)[0] in tab.conditions else [clause]
        for piece in pieces or [clause]:
            words = piece.strip().split(" ", 3)
            while len(words) > 1 and words[0].strip(",") in tab.lead_adverbs:
                words = words[1:]
            if words and words[0].strip(":,.") in tab.imperative:
                return True
    return False


# A list item that states a rule without a verb, as a mapping: "PR title = squash commit",
# "New envs → `pkg/envs/`", "No response for 60 days -> PR closed" (rules76).
# Short, and the mark outside parentheses: "GPU tests (`tests.yml` → `gpu-tests` job): builds
# an image and runs ..." describes a CI job.
_TERSE_RULE = re.compile(r"\S\s{1,3}(?:→|⇒|->|=>|=)\s{1,3}\S")
_PARENTHESES = re.compile(r"\([^()]{0,200}\)")
MAX_TERSE_RULE = 120


# A guide's list of boxes is a PR checklist when its heading or the sentence before it speaks of
# the PR, its review or ticking the boxes (a roadmap's "- [ ] Support X" asks nothing).
_PR_CHECKLIST = re.compile(r"\b(?:prs?|pull requests?|review|reviewing|submit|submitting|merge|merging|tick|check (?:off|each|every)|boxe?s?)\b", re.I)


# Where one clause ends and the next begins, so "Using AI tools is fine; you do not have to
# disclose it" waives only the disclosure.
CLAUSE_BREAKS = frozenset({".", ";", ":", "!", "?", ",", "but", "however", "although", "though",
                           "whereas", "except"})


CONDITIONAL = frozenset({"if", "when", "whenever", "once", "unless"})


# The letters around the first "." of "e.g." and "i.e.".
_E_G = frozenset({("e", "g"), ("i", "e")})


# Where a sentence ends inside a segment (a bare "Not needed." waives the sentence before it).
SENTENCE_BREAKS = frozenset({".", ";", "!", "?"})


_EDGE_PUNCTUATION = re.compile(r"^[\W_]+|[\W_]+$")


def is_bare_waiver(text: str) -> bool:
    """True when a clause or a heading's remark is nothing but a waiver ("Not needed.",
    "(optional)", "Not required"): it says of what it is attached to that it is not asked."""
    bare = _EDGE_PUNCTUATION.sub("", text.lower())
    return bool(bare) and not _EDGE_PUNCTUATION.sub("", table().waived.sub(" ", bare))


# Who decides, not who contributes: "Maintainers may close ..." is a consequence, a rule.
_DECIDERS = frozenset({"maintainer", "maintainers", "we", "reviewer", "reviewers", "committer",
                       "committers", "admins", "owners", "team", "bot", "they", "it", "ci"})


_MAY = re.compile(r"\bmay\b")
_OBLIGATIONS = frozenset({"must", "shall", "required", "require", "requires", "need", "needs"})


def _permits(doc: Any, i: int) -> bool:
    """True when token i is "may" saying what a contributor is allowed to do: RFC 2119's
    "MAY" or "may" + a verb ("titles MAY start with ...", "you may open a PR without an
    issue"), unless its subject is who decides ("Reviewers MAY close ...", "a maintainer who
    holds the administrator role may merge ...": consequences, rules) or it says what may
    happen ("PRs may be closed"). The subject is looked for back to the clause's start (rules73)."""
    token = doc[i]
    if token.lower_ != "may" or i + 1 >= len(doc) or doc[i + 1].lower_ in ("be", "not", "also"):
        return False
    for back in range(i - 1, max(i - 13, -1), -1):
        word = doc[back].lower_
        if word in CLAUSE_BREAKS:
            break
        if word in _DECIDERS:
            return False
    return True


# A wish of the contributor's as a clause of its own or a sentence's last words ("If you want,
# you can add a test", "open an issue first if you like"): the sentence asks nothing. "If you
# want to add a trainer, ..." is a condition and is not one (rules82).
_BARE_WISH = re.compile(r"\b(?:if|when|whenever)\s(?:you|you'd|you\swould)\s(?:want|like|wish|prefer"
                        r"|feel\slike\sit|care)(?:\sto)?$")
_WISH_WORDS = re.compile(r"\b(?:if|when|whenever)\s(?:you|you'd|you\swould)\s(?:want|like|wish|prefer"
                         r"|feel|care)\b")


# A clause whose subject is other projects ("Many repositories, e.g. X, require a CLA; we ...",
# "Other frameworks ask for ..."): what follows it to the end of its sentence is their rule, not
# this project's; "Like many projects, we require ..." (a comparison) is no such subject (rules82).
_OTHERS_SUBJECT = re.compile(r"^(?:the\s)?(?:many|most|some|other|several)\s(?:other\s)?"
                             r"(?:projects|repositories|repos|frameworks|libraries|codebases)\b")


# Another guide quoted or named for its own rule ("As the kernel guide puts it, 'every patch must
# be signed off'", "We recommend the X guide, which asks every commit to be signed off"): from
# that clause to the end of its sentence is the other guide's rule, as _OTHERS_SUBJECT's is; a
# guide of this project's own ("as this guide says", "our handbook") is no other (rules84).
_GUIDE_WORDS = r"(?:guide|guides|guidelines|handbook|manual|style\sguide|pep\s\d{1,4}|rfc\s\d{1,5})"
_QUOTED_GUIDE = re.compile(r"^as\s(?!(?:this|our|the\sabove|below)\b)(?:[\w'’-]{1,30}\s){0,6}?" + _GUIDE_WORDS
                           + r"\s(?:puts\sit|says|writes|states|phrases\sit|notes|asks|requires)\b")
_GUIDE_WHICH = re.compile(r"^which\s(?:asks|requires|says|wants|expects|tells|recommends|mandates)\b")
_GUIDE_CUE = re.compile(r"\b" + _GUIDE_WORDS + r"\b")
_GUIDE_END = re.compile(r"(?<!\bthis\s)(?<!\bour\s)\b" + _GUIDE_WORDS + r"$")


def _other_guide_clauses(texts: list[str]) -> list[int]:
    """The clauses (of plain lower-case `texts`) that open another guide's rule: a quote's lead
    ("as the kernel guide puts it") or a relative clause after a guide's name ("..., which asks
    ...")."""
    return [i for i, text in enumerate(texts) if _QUOTED_GUIDE.match(text) or (
        i > 0 and _GUIDE_WHICH.match(text) and _GUIDE_END.search(texts[i - 1]))]


# What a permission asks in return ("... is welcome as long as the PR says which tool").
_PROVISO = re.compile(r"\b(?:as long as|so long as|provided that|on condition that|on the condition that)\b")


# A rule told as the past: a practice the project had ("We used to run a stale bot that closed
# ...", "X required a CLA until version 0.6", "Until 2023 we asked for ..."): history, no rule
# of today, its whole sentence (rules83). "is used to" (a tool's use) and a present "are
# required until CI passes" are not; a version, a year or "recently" bounds the past.
_PAST_BOUND = (r"(?:(?:version|release)\s{1,3}v?\d|v\d|\d{1,3}\.\d|(?:19|20)\d\d\b|recently\b"
               r"|last\s{1,3}(?:year|month|release|version)\b)")
_PAST_OBLIGED = r"(?<!\bis\s)(?<!\bare\s)(?<!\bbe\s)(?<!\bbeen\s)\b(?:had\s{1,3}to|(?:was|were)\s{1,3}(?:required|mandatory|needed|asked)|required|asked|needed)"
TOLD_AS_PAST = re.compile(
    r"\b(?:we|they|it|there|maintainers|the\s{1,3}project)\s{1,3}(?:once\s{1,3}|previously\s{1,3})?used\s{1,3}to\s"
    r"|\bused\s{1,3}to\s{1,3}(?:require|ask|need|be\s{1,3}(?:required|mandatory|needed))\b"
    r"|" + _PAST_OBLIGED + r"\b[^.;!?]{0,160}?\buntil\s{1,3}"
    + _PAST_BOUND + r"|\b(?:until|before|prior\s{1,3}to)\s{1,3}" + _PAST_BOUND + r"[\w.]{0,12},?\s{1,3}"
    r"(?:[^.;!?]{0,120}?\s)?" + _PAST_OBLIGED + r"\b", re.I)


def _name_dot(doc: Any, i: int) -> bool:
    """True when token i is the dot inside a name ("`changelog.d/` is deprecated"): match_form
    spaced it out, so the word before it is followed by a space, which a full stop of text as
    written never is (a gloss's is: glosses are not asked), and a word follows it. Such a dot
    cuts no clause (rules84)."""
    return (doc[i].text == "." and 0 < i < len(doc) - 1 and bool(doc[i - 1].whitespace_)
            and doc[i + 1].text[:1].isalnum())


def waived_clauses(doc: Any, glossed: bool = False) -> list[int]:
    """Per token of a matched segment, the clause index when that clause says the thing is
    not asked ("you do not need to sign a CLA", "signing off is optional"), else -1. A bare
    waiver ("Optional: post the numbers.") and a waiver that is the sentence's condition
    ("If you are curious, run ...") waive their whole sentence; a bare waiver alone in its
    sentence ("Post the numbers. Not needed.") the sentence before it. What follows "rather
    than" / "instead of" to the end of its clause is named as not asked ("the DCO rather than a
    CLA"); those two words are not (they may be a rule's own words: "... instead of here")."""
    tab = table()
    clause_of: list[int] = []
    texts: list[list[str]] = [[]]
    sentence_of = [0]  # per clause, its sentence
    contrasted: set[int] = set()  # clauses that start with "rather than" / "instead of"
    contrast_words: set[int] = set()  # the tokens "rather", "than" themselves
    for token in doc:
        pair = (token.lower_, doc[token.i + 1].lower_) if token.i + 1 < len(doc) else None
        contrast = pair in tab.contrasts
        if (token.lower_ in CLAUSE_BREAKS and (glossed or not _name_dot(doc, token.i)) or contrast) and texts[-1]:
            texts.append([])
            # "e.g." / "i.e." end no sentence (the text is matched with "." spaced out) (rules82)
            sentence_of.append(sentence_of[-1] + (token.lower_ in SENTENCE_BREAKS and not (
                pair is not None and token.i > 0 and (doc[token.i - 1].lower_, pair[1][:1]) in _E_G)))
        if contrast:
            contrasted.add(len(texts) - 1)
            contrast_words |= {token.i, token.i + 1}
        clause_of.append(len(texts) - 1)
        texts[-1].append(token.text_with_ws.lower())  # "don't" is two tokens: keep the text
    # A condition ("If there is no activity for 60 days, ...") states no waiver, nor does a
    # permission with a proviso ("AI-written code is welcome as long as you say so": rules77).
    waived = {i for i, words in enumerate(texts)
              if words[0].strip() not in CONDITIONAL and tab.waived.search(text := "".join(words))
              and not _PROVISO.search(text)}
    # "Contributors MAY use AI tools, but MUST NOT submit code they do not understand": a
    # permission beside an obligation in one sentence waives nothing
    obliged = {sentence_of[clause_of[token.i]] for token in doc if token.lower_ in _OBLIGATIONS}
    waived |= {clause_of[token.i] for token in doc if _permits(doc, token.i)
               and sentence_of[clause_of[token.i]] not in obliged}
    whole: set[int] = set()  # sentences waived as a whole
    not_asked: set[int] = set()  # sentences ending "..., but it's not required" (rules85)
    for i, words in enumerate(texts):
        text = _EDGE_PUNCTUATION.sub("", "".join(words))
        if _BARE_WISH.search(text):
            whole.add(sentence_of[i])  # its own sentence only: the wish is in it
        elif is_bare_waiver(text):
            whole.add(sentence_of[i])
            if sentence_of.count(sentence_of[i]) == 1:
                # "Post the numbers. Not needed." (alone in its sentence: about the one before);
                # "Optional: post the numbers." is a label over its own sentence only
                whole.add(sentence_of[i] - 1)
        elif words[0].strip() in CONDITIONAL and tab.waived.match(text):
            whole.add(sentence_of[i])
        elif IT_IS_NOT_ASKED.fullmatch(text):
            not_asked.add(sentence_of[i])
    sentences: dict[int, str] = {}
    for i, words in enumerate(texts):
        sentences[sentence_of[i]] = sentences.get(sentence_of[i], "") + "".join(words)
    whole |= {s for s, text in sentences.items() if TOLD_AS_PAST.search(text)}
    # ... and the question it answers ("Do I need an issue first? It's wise for a big change,
    # but it's not a requirement."): the "?" that ends the question opens the answer's sentence
    whole |= not_asked | {s - 1 for s in not_asked if sentences[s].lstrip().startswith("?")}
    waived |= {i for i, sentence in enumerate(sentence_of) if sentence in whole}
    others = [i for i, words in enumerate(texts) if _OTHERS_SUBJECT.match("".join(words).strip())]
    others += _other_guide_clauses([_EDGE_PUNCTUATION.sub("", "".join(words)) for words in texts])
    waived |= {i for first in others for i in range(first, len(texts)) if sentence_of[i] == sentence_of[first]}
    waived |= contrasted
    return [c if c in waived and (c not in contrasted or i not in contrast_words) else -1
            for i, c in enumerate(clause_of)]


_HEADING_REMARK = re.compile(r"\(([^()]{1,60})\)")


def lead_waives(seg: Segment) -> bool:
    """True when a list item's lead says what follows is not asked ("Things you do not need to
    do:", "Some things she did not have to do:"): its items state no rule (rules77)."""
    if not seg.intro or seg.kind not in ("item", "combined", "lead_item"):
        return False
    lead = _LAST_SENTENCE.split(seg.intro[-300:].lower())[-1].strip()
    return lead.endswith(":") and table().waived.search(_INVITATION.sub(" ", lead)) is not None


# A lead that welcomes a kind of contribution ("Bug fixes to the harness are welcome as ordinary
# pull requests:"): the items are the rules for it, not wishes (rules83).
_INVITATION = re.compile(
    r"\b(?:contributions?|pull\s{1,3}requests?|prs?|patches|bug\s{1,3}fixes|fixes|improvements|features?)\b"
    r"[^.:;]{0,80}?\b(?:are|is)\s{1,3}(?:\w{1,12}\s{1,3})?welcome\b")


# The whole box, or with a short remark ("N/A (docs only)"): "No new warnings" is a box to tick.
_NO_BOX = re.compile(r"(?:n/?a|none|no|not applicable|not needed|not required|does not apply"
                     r"|doesn[’']t apply|no changes? needed|nothing to add)(?:\s{0,3}[(:—–-][^\n]{0,60})?", re.I)


def chosen_boxes(segments: list[Segment]) -> set[int]:
    """The checkbox items (ids) of a list that also offers a "not needed" / "N/A" box ("## Changelog"
    / "- [ ] Not needed" / "- [ ] Added to CHANGELOG.md"): one box of them is ticked, a choice, so
    none of them is a rule (rules82). A list is the boxes of one file, section and indent."""
    lists: dict[tuple[str, str, int], list[Segment]] = {}
    for seg in segments:
        if seg.kind == "item" and seg.checkbox:
            lists.setdefault((seg.file, seg.section, seg.indent), []).append(seg)
    return {id(box) for boxes in lists.values()
            if any(_NO_BOX.fullmatch(_EDGE_PUNCTUATION.sub("", b.text[:120])) for b in boxes) for box in boxes}


def heading_waives(section: str) -> bool:
    """True when a heading is marked as not asked ("## Performance impact (optional)"): what
    is requested under it is not a rule."""
    return (any(is_bare_waiver(remark) for remark in _HEADING_REMARK.findall(section[:300]))
            or _WAIVING_HEADING.search(section[:300].split(" / ", 1)[0]) is not None)


# A heading over what is not asked ("## Things you don't need to do", "## What you do not have to
# do"): like such a list lead (lead_waives), what it lists states no rule (rules85). Only "need
# to" / "have to" waivers: a heading's "optional" or "welcome" names a kind of contribution.
_WAIVING_HEADING = re.compile(
    r"\b(?:you|contributors|authors|we)\s{1,3}(?:do\s{1,3}not|don[’']?t|never)\s{1,3}(?:need|have)\s{1,3}to\b"
    r"|\bno\s{1,3}need\s{1,3}to\b|^not\s{1,3}(?:required|needed)\b")


def _command(code: str) -> str:
    """A command from a code line or span, without a shell prompt, cut at a word boundary."""
    code = code.strip()
    if code.startswith("$ "):
        code = code[2:].strip()
    if " #" in code:  # a shell comment after the command
        code = code.split(" #", 1)[0].rstrip()
    if len(code) > MAX_COMMAND:
        code = code[:MAX_COMMAND].rsplit(" ", 1)[0] + " …"
    return code


# A path written as plain text: a lower-case folder then "/" (then more parts, or a file); read
# only by rules with `bare_paths`, only when no code span matches. The lookbehind keeps URLs
# ("https://host/a/b") out; slash pairs of prose ("and/or", "input/output") are left out.
_BARE_PATH = re.compile(r"(?<![\w/.:@~-])((?:[a-z_][\w.-]{0,40}/){1,6}(?:[\w.-]{1,40}/?)?)(?![\w/])")
_PROSE_SLASH = frozenset({"and", "or", "input", "output", "read", "write", "true", "false", "yes",
                          "no", "on", "off", "i", "o", "w", "either", "he", "she", "his", "her",
                          "him", "they", "ci", "pr", "prs", "issues", "client", "server", "train",
                          "test", "eval", "dev", "cpu", "gpu", "tp", "dp", "pp"})


def _bare_paths(text: str, folders: bool = False) -> list[str]:
    """Paths written as plain text; with `folders`, one without an extension or a last slash
    is a folder ("put in quoll/sims and ..."): only in text without code spans, where two
    spans read as a path ("bare `pip`/`pip install`") cannot be."""
    found = []
    for m in _BARE_PATH.finditer(text[:2000]):
        path = m.group(1).rstrip(".")
        parts = [p for p in path.split("/") if p]
        if parts[0] in _PROSE_SLASH or (len(parts) < 2 and not path.endswith("/")):
            continue
        if folders and "." not in parts[-1] and not path.endswith("/"):
            path += "/"
        found.append(path)
    return found


_NUMBER_WORDS = frozenset({"one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"})


def _fill(rule: Rule, seg: Segment, piece: int | None = None) -> tuple[str, dict[str, str]] | None:
    """The rule's statement with its placeholders filled from the segment, or None."""
    values: dict[str, str] = {}
    codes = [c.replace("`", "") for c in seg.codes if c.strip()]
    if rule.codes_match is not None:
        codes = [_command(c) for c in codes if rule.codes_match.search(_command(c))]
        if not codes and rule.bare_paths:
            codes = [c for c in _bare_paths(seg.matched, folders=not seg.codes) if rule.codes_match.search(c)]
        if rule.collect_codes and codes:
            values["_codes"] = "\n".join(codes)
    if codes:
        values["code"] = f"`{codes[0]}`"
        # A bare placeholder such as `{type}` names a slot, not a value: not listed.
        listed = [c for c in dict.fromkeys(codes) if not (c.startswith("{") and c.endswith("}"))]
        if listed:
            values["codes"] = ", ".join(f"`{c}`" for c in listed)
    if seg.head:
        values["head"] = plain(seg.head)
    for name, pattern in rule.extract:
        m = pattern.search(seg.matched[:2000])
        if m and plain(m.group(1)):
            value = plain(m.group(1))
            # a count or a noun that opened the sentence ("Two approvals are required", "Issues
            # without activity ...") is said mid-statement; "PRs" keeps its capitals
            if value.lower() in _NUMBER_WORDS or (name in rule.lower and (
                    value[1:2].islower() or value[:2] == "A ")):  # "A new algorithm" mid-sentence
                value = value[0].lower() + value[1:]
            values[name] = value
    listed_text = _blank_retired_names(seg.matched[:2000]) if rule.extract_all else ""
    for name, pattern in rule.extract_all:
        found = list(dict.fromkeys(x.replace("`", "") for x in pattern.findall(listed_text)))
        if found:
            values[name] = ", ".join(f"`{x}`" for x in found[:10])
            values[f"_all_{name}"] = "\n".join(found)
    templates = ((True, rule.statement), *((False, f) for f in rule.fallback))
    for rank, (primary, template) in enumerate(templates):
        needed = _PLACEHOLDER.findall(template) + (list(rule.when) if primary else [])
        if all(n in values or n == "items" for n in needed):
            values["_primary"] = "1" if primary else ""
            values["_rank"] = str(rank)  # the fuller statement a segment gives, the earlier
            statement = _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)
            if statement[:1].islower():  # a value from mid-sentence opens it ("public classes")
                statement = statement[0].upper() + statement[1:]
            if rule.keep_condition and seg.kind != "combined" and (not seg.gloss or seg.restated):
                header = row_header_condition(seg)  # nearer than the section's heading
                condition = stated_condition(seg.matched, table().waived, piece, "" if header else seg.section)
                if condition == "" and header:
                    condition = header
                if condition is not None:
                    values["_conditional"] = (
                        rule.conditional.replace("{condition}", condition) if condition and rule.conditional
                        else f"{statement.rstrip('.')}, {condition}." if condition else "")
            elif rule.keep_condition and seg.kind == "combined" and (condition := heading_condition(seg.section)):
                # a list joined to its lead tells nothing of which item has a condition, but
                # the heading above it names the changes the whole list is about (rules79)
                values["_conditional"] = f"{statement.rstrip('.')}, {condition}."
            elif rule.keep_condition and seg.kind != "combined" and GLOSSED_CONDITION.search(seg.gloss):
                # a glossed sentence's condition is in the file's word order, not English: the
                # rule is said as conditional without quoting it (a sentence without one tells
                # nothing: the gloss may have missed its condition)
                values["_conditional"] = f"{statement.rstrip('.')}, in the cases the guide names."
            return statement, values
    return None


# Names a sentence says were replaced or dropped are not listed as today's ("flake8 and black are
# replaced by ruff", "We replaced black with ruff format", "ruff, instead of flake8", "isort was
# dropped"): the names before a passive "replaced / dropped / removed / retired / deprecated /
# no longer used", and those after "replace(d) X with", "switched / moved / migrated from",
# "instead of", "in place of", "no longer use", "stopped using" (rules78). "replaced by X" names
# the new tool. Bounded runs of names: linear on long texts.
_NAME_RUN = r"`?[\w.+-]{1,40}`?(?:(?:\s{0,3},\s{0,3}|\s{1,3}(?:and|or|&)\s{1,3}|\s{0,3},\s{0,3}(?:and|or)\s{1,3}" \
    r")`?[\w.+-]{1,40}`?){0,5}"
_NAME_SEPARATOR = re.compile(r"\s{0,3},\s{0,3}(?:(?:and|or)\s{1,3})?|\s{1,3}(?:and|or|&)\s{1,3}", re.I)
_RETIRED_NAMES = re.compile(
    r"(?<![\w`])(?P<before>" + _NAME_RUN + r")(?:\s{1,3}(?:are|is|were|was|have\s{1,3}been|has\s{1,3}been"
    r"|got|get)\s{1,3}(?:now\s{1,3}|both\s{1,3}|all\s{1,3})?(?:replaced|superseded|dropped|removed|retired"
    r"|deprecated|gone|no\s{1,3}longer\s{1,3}(?:used|needed|run|required))\b"
    r"|,?\s{1,3}(?:replaced|superseded)\s{1,3}by\b)"
    r"|\b(?:replaced|replaces|replace|swapped|swap)\s{1,3}(?!by\b|with\b)(?P<swapped>" + _NAME_RUN + r")"
    r"|\b(?:(?:switched|switching|moved|moving|migrated|migrating|moved\s{1,3}away)\s{1,3}from"
    r"|instead\s{1,3}of|in\s{1,3}place\s{1,3}of|no\s{1,3}longer\s{1,3}uses?|stopped\s{1,3}using)"
    r"\s{1,3}(?P<after>" + _NAME_RUN + r")", re.I)


def _blank_retired_names(text: str) -> str:
    """The text with the names it says were replaced or dropped blanked (same length)."""
    def blank(m: re.Match[str]) -> str:
        name = next(g for g in ("before", "swapped", "after") if m.group(g) is not None)
        start, end = m.span(name)
        whole = m.group()
        return whole[:start - m.start()] + " " * (end - start) + whole[end - m.start():]
    return _RETIRED_NAMES.sub(blank, text)


# A clause that calls a step optional ("Building the site with `make docs` is optional, though
# handy"): the commands it names are no request (rules78).
_OPTIONAL_CLAUSE = re.compile(r"\b(?:is|are)\s{1,3}(?:entirely\s{1,3}|completely\s{1,3}|totally\s{1,3})?optional\b"
                              r"|\bnot\s{1,3}(?:required|necessary|mandatory|needed)\b", re.I)
_CLAUSE_BREAK = re.compile(r"[.;!?]\s|[;:]")


def optional_commands(segments: list[Segment]) -> dict[str, set[str]]:
    """Per file, the commands (code spans, spaces collapsed) a clause of its prose calls optional."""
    found: dict[str, set[str]] = {}
    for seg in segments:
        if seg.kind == "code" or not seg.codes or seg.gloss:
            continue
        for clause in _CLAUSE_BREAK.split(seg.text[:2000]):
            if _OPTIONAL_CLAUSE.search(clause):
                commands = {" ".join(c.replace("`", "").split()) for c in seg.codes}
                # a command, not a flag ("the `--forked` flag is not necessary")
                found.setdefault(seg.file, set()).update(
                    c for c in commands if " " in c and c[0].isalnum() and c in clause)
    return found


def retired_names(segments: list[Segment]) -> dict[str, set[str]]:
    """Per file, the names (lower case, no backticks) its sentences say were replaced or dropped."""
    names: dict[str, set[str]] = {}
    for seg in segments:
        for m in _RETIRED_NAMES.finditer(seg.matched[:2000]):
            run = next(g for g in m.groups() if g is not None)
            names.setdefault(seg.file, set()).update(
                n for n in (x.strip("`. ").lower() for x in _NAME_SEPARATOR.split(run)) if n)
    return names


# A condition a rule is stated under: "if" / "when" / "whenever" / "unless" and its clause, to
# the next punctuation. Not a condition: "if needed" and the like (they narrow nothing), "if in
# doubt" (advice), "when to ..." (a topic); nor "if" after a verb that asks whether ("check if
# the docs build", "state if an AI tool was used").
_CONDITION = re.compile(
    r"(?:^|(?<=[\s,(]))(if|when|whenever|unless)\s(?!(?:needed|necessary|applicable|appropriate|relevant"
    r"|possible|required|any|so|in doubt|unsure|not sure|to|you are (?:unsure|not sure|in doubt)"
    r"|you have (?:any )?questions?|you want|you like|you wish|you prefer|you can|you could)\b)"
    r"([^,;:()!?\n]{3,120}?)(?=\s*(?:[,;:()!?]|\.(?:\s|$)|$))", re.I)
_NOT_A_CONDITION_AFTER = frozenset({
    # "check if ...": whether
    "check", "checks", "see", "verify", "test", "know", "ask", "asks", "sure", "unsure", "whether",
    "confirm", "decide", "determine", "wonder", "tell", "find", "out", "look", "mention", "state",
    "indicate", "say", "note",
    # "explain what happens when ...": a time the text is about
    "happens", "happen", "behaves", "behave", "works", "work", "what", "how", "behaviour",
    "behavior", "occurs", "fails"})
# "when you open a PR": every PR, no condition
_EVERY_PR = re.compile(r"(?:you\s)?(?:open|submit|send|create|make|file)(?:ing)?\s(?:a|the|your)\s"
                       r"(?:new\s)?(?:pr|pull\srequest)s?", re.I)
# "When reviewing, check that the PR has a changelog entry": the reviewer's time, no condition of
# the PR's; what is checked is asked of every PR (rules82)
_REVIEWING = re.compile(r"(?:(?:you|a\smaintainer|maintainers|a\sreviewer|reviewers)\s(?:are\s)?"
                        r"review(?:s|ing)?|reviewing)\b", re.I)
MAX_CONDITION = 80
# A request whose condition is the sentence before it ("Sometimes you touch the kernels. In that
# case, add ...", "Does your PR change the API? If so, ..."): said as conditional (rules84).
_EARLIER_CONDITION = re.compile(r"^\W{0,3}(?:in\s(?:that|this|such\sa|those|these|such)\scases?|if\sso|if\sthat\sis"
                                r"\sthe\scase|when\sthat\shappens|if\sit\sdoes|if\syou\sdo)\b", re.I)
# A table whose header row opens with a condition ("| If your PR changes the public API | What
# to do |"): its rows' requests are asked under it (rules84).
_HEADER_CONDITION = re.compile(r"^\W{0,3}(?:if|when|whenever)\s([^—|]{3,120}?)\s*(?:—|$)", re.I)


def row_header_condition(seg: Segment) -> str:
    """The condition a table row's header row states in its first cell, as our plain text, or
    "" (rows keep their own condition first)."""
    m = _HEADER_CONDITION.match(seg.intro) if seg.kind == "row" else None
    if m is None:
        return ""
    clause = " ".join(_CONDITION_MARKUP.sub(" ", m.group(1)).split())
    if clause.endswith(("...", "…")):
        # "| If you change ... | you also need to ... |": each row's first cell ends the condition
        clause = f"{clause.rstrip('.… ')} {' '.join(_CONDITION_MARKUP.sub(' ', seg.head).split())}".strip()
    word = seg.intro.split()[0].lower()
    return f"{word} {clause}" if len(clause) <= MAX_CONDITION else "in the cases the guide names"


# A subject limited by "only" ("Only employees of Acme need to sign ...", "Only PRs that change
# the API must ..."): the rule's scope; not a count or an order ("only one", "only the first").
_ONLY_SUBJECT = re.compile(
    r"(?:^|(?<=[\s,(]))only\s(?!(?:if|when|whenever|once|after|before|then|a|an|one|two|the|this|that"
    r"|in|on|at|to|by|with|be|we|you|it|they)\b)((?:[\w'’`/.-]{1,40}\s){1,6}?)(?=(?:need|needs|must"
    r"|have\sto|has\sto|are\srequired|is\srequired|should)\b)", re.I)
# What a gloss (Chinese, Japanese, Korean, French, Spanish) reads as a condition: "如果" /
# "Si vous ..." / "Cuando ..." are "in some cases", Japanese "場合" is "if", and a Chinese
# "新增 X 的 PR" (PRs that add X) is "in some cases PRs" (analyzers.rules.gloss_zh).
GLOSSED_CONDITION = re.compile(r"\b(?:if|in some cases)\b")
# A condition said as the PRs it is about: "a PR that touches `pkg/io/`", "pull requests which
# change the sampler" (to the next punctuation; the plural without an article since rules76;
# "PRs that add an environment need two approvals", rules80).
# Or as the folder the rule holds under: "changes under / to `pkg/io/` need two approvals", "two
# approvals for anything under `pkg/core/` or `pkg/net/`" (one or two folders, ending in "/": "add
# your changes to `CHANGES.md`" names a file to write to, not the changes a rule is about).
_SCOPE_CONDITION = re.compile(
    r"\b((?:(?:a|any)\s(?:pr|pull\srequest|change)|prs|pull\srequests)\s(?:that|which)\s"
    r"(?:touch(?:es)?|changes?|modif(?:y|ies)|alters?|adds?|introduces?|removes?)\s[^,;:()!?\n]{3,120}?)"
    r"(?=\s(?:must|should|need|needs|require|requires|get|gets)\b|\s*(?:[,;:()!?]|\.(?:\s|$)|$))"
    r"|\b((?:anything|everything|changes|code|files)\s(?:under|to)\s(?:the\s)?`?(?:[\w.-]{1,40}/){1,6}`?"
    r"(?:\s(?:or|and)\s`?(?:[\w.-]{1,40}/){1,6}`?)?)"
    # or as the folder that is the sentence's subject: "`pkg/core/` needs 2 approvals" (rules76)
    r"|^[-*\s]{0,4}(`?(?:[\w.-]{1,40}/){1,6}`?)(?=\s(?:needs?|requires?|gets?)\b)"
    # or as the new thing it opens with: "For a new speech model, include ..." (rules79)
    r"|^[-*\s]{0,4}for\s((?:a|an|any|each|every)\snew\s[\w -]{3,80}?)(?=,)"
    # or as the changes a sentence opens with: "For changes to the kernels or the scheduler,
    # include ...", "For GPU kernel changes, paste ..." (to the comma before the request: a
    # list's commas are followed by an article or "or"; "For all changes" is every PR) (rules80)
    r"|^[-*\s]{0,4}for\s((?:changes|prs|pull\srequests)\s(?:to|in|under|of)\s[^;:()!?\n]{2,120}?"
    r"|(?!(?:all|any|every|most|other|more|such|these|those|your|our|their|the|small|trivial|minor"
    r"|performance|perf|speed)\s)"  # ("For performance changes" is what a speed rule says already)
    r"(?:[\w/.-]{2,30}\s){1,3}(?:changes|prs|pull\srequests))"
    r"(?=,\s(?!(?:the|a|an|or|and|its|their)\s)|\s{0,2}[;:])",
    re.I)
# A scope that names the file's own project ("pull requests that change this package"): every
# PR the file speaks to (a package guide's scope is said from its path, part_files) (rules76).
_THIS_PROJECT = re.compile(r"\bth(?:is|e)\s(?:package|project|repository|repo|library|crate|codebase)$", re.I)
_CONDITION_MARKUP = re.compile(r"[<>\[\]`*|#\\]|(?<!\w)_|_(?!\w)")
# Sentences and "; " parts of a segment. A name's dot is not an end: in the matched text
# (analyzers.rules_text.match_form) it has a space before it, so both texts cut alike.
_PIECES = re.compile(r"(?<=\S)[.!?;]\s+(?=\S)")
_SENTENCE_BREAK = re.compile(r"(?<=\S)[.!?]\s+(?=\S)")


# A heading that names the changes its section is about ("Changes to the sampler", "Changing
# the loss", "New schedulers", "Adding a new environment"): a request under it with no condition
# of its own is asked of those changes (rules79: "## Changes to training behaviour ... Paste the
# mean reward" was said of every PR). Not a question ("New here?") nor a heading for newcomers.
_CHANGE_HEADING = re.compile(
    r"(?:changes?\s(?:to|in|of)|changing|modifying|touching)\s[^?/()]{3,60}"
    r"|(?:adding\s(?:an?\s)?)?new\s(?!(?:contributors?|here|to|comers?|features?))[^?/()]{3,60}")

_HEADING_GLOSS = re.compile(r"\([^()]{0,80}\)")


def heading_condition(section: str) -> str:
    """"for changes to the sampler" from a section whose own heading names a kind of change,
    else "" (a heading above it does not: "Changes / Style" is the style's)."""
    # (a parenthetical is a gloss of the heading: "Adding a new trainer (new algorithm)", rules80)
    heading = " ".join(_CONDITION_MARKUP.sub(" ", _HEADING_GLOSS.sub(" ", section.rsplit(" / ", 1)[-1])).split()).lower()
    if not _CHANGE_HEADING.fullmatch(heading) or _THIS_PROJECT.search(heading):
        return ""
    return f"when {heading}" if heading.startswith("adding") else f"for {heading}"


def stated_condition(text: str, waived: re.Pattern[str], piece: int | None = None,
                     section: str = "") -> str | None:
    """The condition a request is stated under ("if you change the public API"), as our short
    plain text, looked for in the sentence or "; " part `piece` of `text` (the one holding the
    rule's words), else in the heading of its `section` (heading_condition); "" when it has
    none; None when that part is not known. "We do not ask for X, unless Y" asks X if Y."""
    pieces = _PIECES.split(text.rstrip(".!?; "))
    if piece is None and len(pieces) > 1 or piece is not None and piece >= len(pieces):
        return None
    text = pieces[piece or 0]
    if _EARLIER_CONDITION.match(text):
        return "in the cases the guide names"  # the sentence before it is the condition (rules84)
    for m in _CONDITION.finditer(text[:600]):
        before = text[: m.start()].split()
        if before and before[-1].lower().strip(",") in _NOT_A_CONDITION_AFTER:
            continue
        # markup dropped as plain() does, but a name's inner "_" kept ("pkg_name/")
        clause = " ".join(_CONDITION_MARKUP.sub(" ", m.group(2)).split())
        word = m.group(1).lower()
        if _EVERY_PR.fullmatch(clause) or _REVIEWING.match(clause):
            return ""
        if clause.lower() in ("yes", "no", "not"):
            # "If yes: ..." answers a template's question: the condition is the question's
            return "in the cases the guide names"
        if len(clause) > MAX_CONDITION:
            return "in the cases the guide names"
        if word == "unless" and waived.search(text[: m.start()].lower()):
            word = "if"  # the waiver ends where its exception starts
        return f"{word} {clause}"
    if m := _SCOPE_CONDITION.search(text[:600]):
        # "The exception is a PR that touches `pkg/io/`: there, include ...": said of those PRs
        clause = " ".join(_CONDITION_MARKUP.sub(" ", m.group(1) or m.group(2) or (
            f"changes under {m.group(3)}" if m.group(3) else m.group(4) or m.group(5))).split())
        clause = clause if clause[:2].isupper() else clause[0].lower() + clause[1:]  # "PRs that ..."
        if _THIS_PROJECT.search(clause):
            return ""  # "PRs that change this package": the file's own scope, no narrower one
        return f"for {clause}" if len(clause) <= MAX_CONDITION else "in the cases the guide names"
    if m := _ONLY_SUBJECT.search(text[:600]):
        # "Only employees of Acme need to sign the CLA": asked of them, not of everyone (rules84)
        clause = " ".join(_CONDITION_MARKUP.sub(" ", m.group(1)).split())
        return f"for {clause} only" if len(clause) <= MAX_CONDITION else "in the cases the guide names"
    return heading_condition(section) if section else ""


def _fill_zh(template: str | None, values: dict[str, str]) -> str | None:
    """The Chinese statement with the same values, or None (the English one is used)."""
    if not template:
        return None
    if not all(n in values for n in _PLACEHOLDER.findall(template)):
        return None
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


def _evidence(seg: Segment) -> str:
    text = seg.text
    return text if len(text) <= MAX_EVIDENCE else text[: MAX_EVIDENCE - 1] + "…"


# An AI word as a part of a name ("@acme-ai/maintainers", "acme-ai/trainer",
# "https://github.com/acme-ai", "tools/ai/run.py") names a team, repository, path or site, not
# AI tools (rules73). A chunk of the text without spaces is a name when it starts with "@" or
# has a "/" and is not only plain words ("AI/LLM tools" keeps both words).
_CHUNK = re.compile(r"\S+")
_AI_WORD = re.compile(r"(?<![a-z0-9])(?:ai|llms?|gpt|chatgpt|copilot|claude)(?![a-z0-9])", re.I)
_PLAIN_SLASHED = re.compile(r"[A-Za-z]+(?:/[A-Za-z]+){1,3}[.,;:!?)]?")


def unnamed_ai(text: str) -> str:
    """The text with AI words inside handles, paths and URLs blanked ("_" each letter, so
    offsets stay)."""
    if not _AI_WORD.search(text):
        return text

    def blank(m: re.Match[str]) -> str:
        chunk = m.group()
        if not (chunk.lstrip("`(\"'[").startswith("@") or "/" in chunk) \
                or _PLAIN_SLASHED.fullmatch(chunk.strip("`(\"'[")):
            return chunk
        return _AI_WORD.sub(lambda w: "_" * len(w.group()), chunk)

    return _CHUNK.sub(blank, text)


def _match(segments: list[Segment], kinds: dict[str, str], files: Mapping[str, str]) -> list[dict[str, Any]]:
    tab = table()
    parts = part_files(kinds, files)
    directive: dict[int, bool] = {}  # per segment, computed when a directive rule asks
    pipe = _nlp()
    strings = pipe.vocab.strings
    hits_by_rule: dict[str, list[tuple[Segment, str, dict[str, str]]]] = {}
    # absence rules whose words a sentence (not an example) names: that sentence may state
    # the rule in words the patterns lack ("each commit will carry a `Signed-off-by` line")
    named_in_prose: set[str] = set()
    docs = pipe.tokenizer.pipe(bounded_runs(match_form(unnamed_ai(s.matched))) for s in segments)
    notes = replacing_notes(segments)
    choices = chosen_boxes(segments)
    # per replacing note (by its first sentence's index), the words the note speaks of
    replaced_words: dict[int, set[str]] = {}
    for index, (seg, doc) in enumerate(zip(segments, docs, strict=True)):
        matches = tab.phrase_matcher(doc)
        if len(tab.token_matcher):
            matches += tab.token_matcher(doc)
        if not matches:
            continue
        found = {strings[m] for m, _, _ in matches}
        if index in notes:
            replaced_words.setdefault(notes[index], set()).update(found)
        waived: list[int] | None = None  # computed when a rule is about to fire
        # Only rules whose first group has a hit can fire: look those up instead of all.
        candidates = sorted({i for k in found for i in tab.by_first_key.get(k, ())})
        for rule in (tab.rules[i] for i in candidates):
            if rule.kinds and kinds.get(seg.file) not in rule.kinds and not (
                    "issue_form_box" in rule.kinds and required_form_box(seg, kinds.get(seg.file, ""))):
                continue
            if rule.absence and seg.kind != "code":
                named_in_prose.add(rule.id)
                continue
            if rule.segment_kinds and seg.kind not in rule.segment_kinds:
                continue
            # A section word matches at the start of a heading word ("test" in "Testing",
            # not in "Latest").
            if rule.section and not any(f" {s}" in _heading_words(seg.section)
                                        for s in rule.section):
                continue
            vetoed = any(k in found for k in rule.none)
            if rule.none_if_weak and any(k in found for k in rule.none_if_weak) and not any(
                    k in found and k not in rule.weak_first for k in rule.groups[0]):
                continue
            if vetoed and not _SENTENCE_BREAK.search(doc.text):
                continue  # one sentence: its veto word is about the rule's words
            if rule.directive:
                if id(seg) not in directive:
                    directive[id(seg)] = is_directive(seg, kinds.get(seg.file, ""))
                if not directive[id(seg)]:
                    continue
            if all(any(k in found for k in group) for group in rule.groups):
                if rule.within and not _near(rule, matches, doc, strings):
                    continue
                if vetoed and not _stated_apart_from_veto(rule, matches, doc, strings):
                    continue
                if waived is None and not rule.permission:
                    waived = ([0] * len(doc) if heading_waives(seg.section) or lead_waives(seg)
                              or id(seg) in choices
                              else waived_clauses(doc, bool(seg.gloss)) if tab.waived.search(low := doc.text.lower())
                              or tab.contrast.search(low) or _MAY.search(low)
                              or _WISH_WORDS.search(low) or TOLD_AS_PAST.search(low)
                              or _GUIDE_CUE.search(low) or IT_IS_NOT_ASKED.search(low) else [])
                if waived and not rule.permission and _group_waived(rule, matches, waived, strings):
                    continue
                piece = _piece_of_hit(rule, matches, doc, strings) if rule.keep_condition else None
                filled = _fill(rule, seg, piece)
                if filled is not None and filled[1].get("_conditional") and not seg.gloss \
                        and _stated_in_a_clause_without_condition(rule, matches, doc, strings):
                    filled[1]["_conditional"] = ""
                if filled is not None:
                    hits_by_rule.setdefault(rule.id, []).append((seg, *filled))
    if replaced_words:
        # A rule stated above a note that replaces it is not stated: its subject's words (the
        # first group of the rule or of the rules that say it more strongly, its `unless`) are
        # among the note's ("The CLA is gone" retires a CLA bot's rule too).
        position = {id(seg): i for i, seg in enumerate(segments)}
        by_id = {rule.id: rule for rule in tab.rules}
        for rule in tab.rules:
            if rule.id in hits_by_rule:
                subject = set(rule.groups[0]).union(*(by_id[u].groups[0] for u in rule.unless if u in by_id))
                # per file, the last note that names the rule's subject: hits before it are retired
                last: dict[str, int] = {}
                for start, words in replaced_words.items():
                    if not words.isdisjoint(subject):
                        file = segments[start].file
                        last[file] = max(last.get(file, -1), start)
                hits_by_rule[rule.id] = [h for h in hits_by_rule[rule.id]
                                         if position[id(h[0])] >= last.get(h[0].file, -1)]
    optional = optional_commands(segments)
    if optional:
        # A command listed in a code block ("make docs   # build the docs locally") that the
        # file's prose calls optional asks nothing (rules78: a menu of targets said as a rule)
        for rule_id, hits in hits_by_rule.items():
            hits_by_rule[rule_id] = [h for h in hits if h[0].kind != "code" or not any(
                " ".join(h[0].text.split()).startswith(command) for command in optional.get(h[0].file, ()))]
    listing = [rule for rule in tab.rules if rule.extract_all and rule.id in hits_by_rule]
    if listing:
        # A name a file says was replaced or dropped is not listed from its other sentences
        # either ("We used pylint for years" above "pylint has been replaced by ruff").
        retired = retired_names(segments)
        for rule in listing:
            for seg, _, values in hits_by_rule[rule.id]:
                gone = retired.get(seg.file)
                for name, _ in rule.extract_all:
                    if gone and f"_all_{name}" in values:
                        kept_names = [x for x in values[f"_all_{name}"].split("\n") if x.lower() not in gone]
                        values[f"_all_{name}"] = "\n".join(kept_names)
                        if not kept_names:
                            values.pop(f"_all_{name}")
                            values.pop(name, None)
    facts: list[dict[str, Any]] = []
    for rule in tab.rules:
        if rule.collect_codes and rule.id in hits_by_rule:
            # Only the segments that gave a matching code count (a rule without one is silent).
            hits_by_rule[rule.id] = [h for h in hits_by_rule[rule.id] if h[2].get("_codes")]
        elif rule.collect and rule.collect_value and rule.id in hits_by_rule:
            # Likewise a list of extracted values cites only the files that gave one (a file
            # that only mentions "labels" is not cited for "Labels that start CI jobs: ...").
            key = rule.collect_value
            hits_by_rule[rule.id] = [h for h in hits_by_rule[rule.id]
                                     if h[2].get(key) or h[2].get(f"_all_{key}")]
        elif rule.collect and rule.collect_format and rule.id in hits_by_rule:
            # And a formatted list only the segments that fill an item: a table's header row
            # ("Component — Directory") was the evidence of "Where code goes, from the table".
            needed = _PLACEHOLDER.findall(rule.collect_format)
            hits_by_rule[rule.id] = [h for h in hits_by_rule[rule.id]
                                     if all(n in h[2] for n in needed)]
    fired = {rule_id for rule_id, hits in hits_by_rule.items() if hits}
    packages = {p for p, (key, _) in parts.items() if key == "package_scoped"}
    for rule in tab.rules:
        hits = hits_by_rule.get(rule.id)
        # Made redundant by a rule that only package guides state, a rule is silent in those
        # guides alone: another package's guide, or the repository's, stating it in the weaker
        # words is still cited, and said of its package or of every PR (fetch79).
        stronger_in = {seg.file for u in rule.unless if u in fired for seg, _, _ in hits_by_rule[u]}
        if hits and stronger_in and stronger_in <= packages:
            hits = [h for h in hits if h[0].file not in stronger_in]
            redundant = False
        else:
            redundant = bool(stronger_in)
        # A rule made redundant by another (`unless`) is silent, and its files are not cited
        # for the other's statement: a PR template that only asks for tests was cited for
        # "without good tests a PR is not merged" (rules64). Citing fewer files never states
        # a rule a file does not contain; the weaker readings such files gave were often not
        # rules at all (docs/rules.md, review rules64).
        if not hits or redundant:
            continue
        if rule.absence and (rule.id in named_in_prose or has_unread_prose(segments)):
            # "No sign-off rule is stated" is said of every file, from an example (a code
            # block): a sentence naming the trailer, or a French or Spanish sentence, may state
            # the rule the patterns cannot see (rules68: a French DCO rule and a required
            # issue-form checkbox were read as "no sign-off rule")
            continue
        conditional = False
        if rule.keep_condition:
            # Stated under its condition only when every sentence that states it has one (a
            # list joined to its lead, or several sentences, tells nothing of which has it).
            known = [h for h in hits if "_conditional" in h[2]]
            conditional = bool(known) and all(h[2]["_conditional"] for h in known)
            if conditional:
                hits = known
        # A rule read under a heading addressed to some contributors is said as theirs, unless
        # another sentence states it for everyone (then that one is cited).
        scoped = all(seg.scoped for seg, _, _ in hits)
        if not scoped:
            hits = [h for h in hits if not h[0].scoped]
        sources = list(dict.fromkeys(seg.file for seg, _, _ in hits))
        if rule.collect_codes:
            found = [x for _, _, v in hits for x in v.get("_codes", "").split("\n") if x]
            if not found:
                continue
            joined = ", ".join(f"`{x}`" for x in list(dict.fromkeys(found))[:MAX_COMMANDS])
            statement = rule.statement.replace("{items}", joined)
            zh = rule.statement_zh.replace("{items}", joined) if rule.statement_zh else None
        elif rule.collect:
            # One fact listing every match: the extracted value, else the head, else the text.
            key = f"_all_{rule.collect_value}"
            if rule.collect_format:
                items = list(dict.fromkeys(
                    _PLACEHOLDER.sub(lambda m, v=values: v.get(m.group(1), ""), rule.collect_format)
                    for _, _, values in hits
                    if all(n in values for n in _PLACEHOLDER.findall(rule.collect_format))
                ))
                if not items:
                    continue
                joined = "; ".join(items[:8])
            elif any(key in v for _, _, v in hits):
                found = [x for _, _, v in hits for x in v.get(key, "").split("\n") if x]
                if rule.collect_plain:
                    joined = ", ".join(dict.fromkeys(plain(x).lower() for x in found))
                else:
                    joined = ", ".join(f"`{x}`" for x in dict.fromkeys(found))
            else:
                items = list(dict.fromkeys(
                    values.get(rule.collect_value, "") or plain(seg.head or seg.text)
                    for seg, _, values in hits
                    if not rule.collect_value or values.get(rule.collect_value)
                ))
                joined = "; ".join(items[:8])
            if not joined:
                continue  # every hit lacked the value to list: nothing to state
            statement = rule.statement.replace("{items}", joined)
            zh = rule.statement_zh.replace("{items}", joined) if rule.statement_zh else None
        else:
            # Prefer a segment that filled the full statement, then the fuller fallback.
            # With `prefer: combined`, a "lead: items" segment (the whole list) wins ties.
            hits.sort(key=lambda h: (
                int(h[2].get("_rank") or 0),
                rule.prefer_combined and h[0].kind != "combined",
            ))
            statement = hits[0][1]
            zh = _fill_zh(rule.statement_zh, hits[0][2]) if hits[0][2].get("_primary") else None
            if conditional:
                # the condition is the file's words: said in English, not after a Chinese rule;
                # several different ones are not all said (the first alone would narrow the rule)
                said = dict.fromkeys(h[2]["_conditional"] for h in hits)
                statement = (hits[0][2]["_conditional"] if len(said) == 1
                             else f"{statement.rstrip('.')}, in the cases the guide names.")
                zh = None
        unscoped = (statement, zh)
        said_of: list[str] = []
        if scoped:
            scope_key = "scoped"
            said_by = {parts[f][0] for f in sources if f in parts}
            if all(seg.file in parts for seg, _, _ in hits) and len(said_by) == 1:
                # asked by named PR templates or a package's guide: said of their pull requests
                scope_key = said_by.pop()
                said_of = list(dict.fromkeys(parts[f][1] for f in sources))
            statement, zh = _scoped_statement(statement, zh, scope_key, said_of)
        fact = {
            "topic": rule.topic,
            "rule": rule.id,
            "statement": statement,
            "statement_zh": zh,
            "strength": rule.strength,
            "source": sources[0],
            "sources": sources,
            "evidence": _evidence(hits[0][0]),
            "observed": False,
        }
        if scoped and said_of and scope_key == "package_scoped":
            fact["packages"] = said_of
            fact["_unscoped"] = unscoped
        facts.append(fact)
    return _merge_same_statements(facts)


def _scoped_statement(statement: str, zh: str | None, key: str,
                      names: list[str]) -> tuple[str, str | None]:
    """A statement (English, Chinese) said of some pull requests only: texts[key], naming
    `names` (the PR templates, the packages) where it has `{names}`."""
    quoted = ", ".join(f"“{name}”" for name in names)
    if key == "package_scoped" and len(names) > 1:
        key = "packages_scoped"  # several packages, each by its own guide (fetch82)
    scope = {lang: text.replace("{names}", quoted) for lang, text in wording().texts[key].items()}
    return f"{statement.rstrip('.')} {scope['en']}.", (f"{zh.rstrip('。')}{scope['zh']}。" if zh else None)


def said_of_packages(facts: list[dict[str, Any]], kinds: Mapping[str, str],
                     files: Mapping[str, str]) -> list[dict[str, Any]]:
    """Facts that only package guides state, said of those packages: `packages` names them
    (their folders) and the statement says so. A setting only package guides state (a
    policy block's) is theirs too, not every PR's; the same statement from several packages'
    guides, whichever rule read it, is ONE fact naming and citing each package (fetch79:
    it was said of one package, or twice, or of every PR). One the repository's own files
    state for every PR covers them: the packages' copies are not said again."""
    parts = part_files(kinds, files)
    names = {p: name for p, (key, name) in parts.items() if key == "package_scoped"}
    for fact in facts:
        sources = [s for s in fact.get("sources") or [] if s]
        if ("packages" not in fact and not fact.get("observed") and sources
                and all(s in names for s in sources)):
            fact["packages"] = list(dict.fromkeys(names[s] for s in sources))
            fact["_unscoped"] = (fact["statement"], fact.get("statement_zh"))
    everyones = {(f["topic"], f["statement"]) for f in facts if "packages" not in f}
    kept: list[dict[str, Any]] = []
    merged: dict[tuple[str, str], dict[str, Any]] = {}
    for fact in facts:
        unscoped = fact.pop("_unscoped", None)
        if unscoped is None:
            kept.append(fact)
            continue
        key = (fact["topic"], unscoped[0])
        if key in everyones:
            continue
        first = merged.get(key)
        if first is None:
            merged[key] = fact
            fact["_unscoped"] = unscoped
            kept.append(fact)
        else:
            first["packages"] = list(dict.fromkeys(first["packages"] + fact["packages"]))
            first["sources"] = list(dict.fromkeys(first["sources"] + fact["sources"]))
    for fact in merged.values():
        statement, zh = fact.pop("_unscoped")
        fact["statement"], fact["statement_zh"] = _scoped_statement(
            statement, zh, "package_scoped", fact["packages"])
    return kept


def _near(rule: Rule, matches: list[tuple[int, int, int]], doc: Any, strings: Any) -> bool:
    """A hit of the rule's first group followed, within `rule.within` tokens and with no
    punctuation between, by a hit of its last group (a quote is no break: 'has written
    "approved" on it')."""
    first, last = set(rule.groups[0]), set(rule.groups[-1])
    ends = [end for m, _, end in matches if strings[m] in first]
    starts = sorted(start for m, start, _ in matches if strings[m] in last)
    for end in ends:
        # only the first start at or after the end can be near without punctuation between
        # (a later one has that start's span between too): one lookup per end, not one per
        # pair (64 KiB of "approval from two owners" without a full stop was quadratic)
        k = bisect.bisect_left(starts, end)
        if k < len(starts) and starts[k] - end < rule.within and not any(
                doc[i].is_punct and not doc[i].is_quote for i in range(end, starts[k])):
            return True
    return False


def _stated_apart_from_veto(rule: Rule, matches: list[tuple[int, int, int]], doc: Any,
                            strings: Any) -> bool:
    """A sentence of the segment holds a hit of every group of the rule and no veto word:
    "Merged only when CI is green. A maintainer can re-run a flaky job." states the CI rule;
    the "flaky" of the next sentence is not about it (a "; " part still is: it goes on with
    the same thing)."""
    ends = [m.end() for m in _SENTENCE_BREAK.finditer(doc.text)]

    def piece(start: int) -> int:
        return bisect.bisect_right(ends, doc[start].idx)

    vetoed = {piece(s) for m, s, _ in matches if strings[m] in rule.none}
    by_piece: dict[int, set[int]] = {}
    for m, s, _ in matches:
        p = piece(s)
        if p not in vetoed:
            for g, group in enumerate(rule.groups):
                if strings[m] in group:
                    by_piece.setdefault(p, set()).add(g)
    return any(len(groups) == len(rule.groups) for groups in by_piece.values())


def _piece_of_hit(rule: Rule, matches: list[tuple[int, int, int]], doc: Any, strings: Any) -> int:
    """Which sentence or "; " part of the segment states the rule: the first that holds a hit
    of every phrase group ("...; changes under `pkg/io/` need two approvals"), else the one
    holding the rule's last words (the request's object or check: "...; please check that it
    builds without warnings when ...")."""
    ends = [m.end() for m in _PIECES.finditer(doc.text)]  # a piece ends before each of these

    def piece(token: int) -> int:
        return bisect.bisect_right(ends, doc[token].idx + 1)

    groups = [set(g) for g in rule.groups]
    per_piece: dict[int, set[int]] = {}
    for m, start, _ in matches:
        word = strings[m]
        per_piece.setdefault(piece(start), set()).update(i for i, g in enumerate(groups) if word in g)
    whole = [p for p, found in sorted(per_piece.items()) if len(found) == len(groups)]
    if whole:
        return whole[0]
    last = groups[-1]
    return piece(min(s for m, s, _ in matches if strings[m] in last))


# Where one clause of a sentence ends and another starts: ", and" / ", but" / ", or", ";" and a
# sentence's end ("Individuals sign the ICLA, and if you contribute for your employer, ...").
_CLAUSE_JOINS = frozenset({"and", "but", "or", "while", "whereas"})


def _stated_in_a_clause_without_condition(rule: Rule, matches: list[tuple[int, int, int]], doc: Any,
                                          strings: Any) -> bool:
    """True when one clause of a sentence of the segment holds a hit of every phrase group of the
    rule and no condition word ("if", "when", "unless", "only") while a later clause of that
    sentence has one: the rule is asked of everyone there, and the condition is the later
    clause's (V larkspur's corporate CLA; rules84). A scope ("for changes under `csrc/`") or a
    heading's condition has no such word and is kept."""
    clause_of: list[int] = []
    sentence_of: dict[int, int] = {0: 0}
    clause = sentence = 0
    for token in doc:
        sentence_end = token.text in (".", "!", "?") and not _name_dot(doc, token.i)
        if sentence_end or token.text == ";" or (
                token.lower_ in _CLAUSE_JOINS and token.i > 0 and doc[token.i - 1].text == ","):
            clause += 1
            sentence += sentence_end
            sentence_of[clause] = sentence
        clause_of.append(clause)
    conditioned = {clause_of[t.i] for t in doc if t.lower_ in CONDITIONAL or t.lower_ == "only"}
    first_condition: dict[int, int] = {}  # per sentence, its first clause with a condition
    for c in sorted(conditioned, reverse=True):
        first_condition[sentence_of[c]] = c
    groups = [set(g) for g in rule.groups]
    found: dict[int, set[int]] = {}
    for m, start, _ in matches:
        found.setdefault(clause_of[start], set()).update(i for i, g in enumerate(groups) if strings[m] in g)
    # "If X, include A, and paste B": the opening condition is every clause's after it
    return any(len(hit) == len(groups) and c < first_condition.get(sentence_of[c], -1)
               for c, hit in found.items())


def _group_waived(rule: Rule, matches: list[tuple[int, int, int]], waived: list[int],
                  strings: Any) -> bool:
    """True when every hit of one of the rule's groups lies in a clause that says the thing
    is not asked: "You don't need to update the docs" states no docs rule."""
    for group in rule.groups:
        keys = set(group)
        if all(waived[start] >= 0 for m, start, _ in matches if strings[m] in keys):
            return True
    return False


def _merge_same_statements(facts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Two rules that say the same thing (the same statement on the same topic) become one
    fact citing the files of both."""
    kept: dict[tuple[str, str], dict[str, Any]] = {}
    for fact in facts:
        key = (fact["topic"], fact["statement"])
        first = kept.get(key)
        if first is None:
            kept[key] = fact
        else:
            first["sources"] = list(dict.fromkeys(first["sources"] + fact["sources"]))
    return list(kept.values())


def _structural(files: Mapping[str, str], kinds: dict[str, str]) -> list[dict[str, Any]]:
    tab = table()
    facts: list[dict[str, Any]] = []
    names = structured.template_names(dict(files), kinds)
    for path, text in files.items():
        kind = kinds[path]
        if kind == "workflow":
            facts += structured.workflow_facts(text, path, tab.signatures)
        elif kind == "yaml" and path.lower().rsplit("/", 1)[-1] in ("stale.yml", "stale.yaml"):
            facts += structured.probot_stale_facts(text, path)
        elif kind == "codeowners":
            facts += structured.codeowners_facts(text, path)
        elif kind == "ruleset":
            facts += structured.ruleset_facts(text, path)
        elif kind == "issue_config":
            facts += structured.issue_config_facts(text, path, names)
        elif kind in ("issue_template", "discussion_template") and path.lower().endswith(
            (".yml", ".yaml")
        ):
            facts += structured.form_facts(load_yaml(text), path, kind)
        elif kind in ("contributing", "governance"):
            pointer = structured.pointer_fact(text, path)
            if pointer:
                facts.append(pointer)
            facts += structured.policy_block_facts(text, path)
    if not any(k == "contributing" for k in kinds.values()):
        facts.append({"topic": "general", "rule": "no_contributing",
                      "statement": tab.texts["no_contributing"]["en"], "source": "",
                      "evidence": ""})
    if not any(k == "issue_config" for k in kinds.values()) and names:
        facts.append({"topic": "templates", "rule": "forms",
                      "statement": "Issue templates: " + ", ".join(names) + ".",
                      "source": next(p for p, k in kinds.items() if k == "issue_template"),
                      "evidence": ""})
    # Two stale facts (a caller workflow and the reusable one it calls) say the same thing.
    if any(f["rule"] == "stale_workflow" for f in facts):
        facts = [f for f in facts if f["rule"] != "stale_reusable"]
    for fact in facts:
        fact.setdefault("statement_zh", None)
        fact.setdefault("strength", "rule")
        fact.setdefault("sources", [fact["source"]] if fact["source"] else [])
        fact.setdefault("observed", False)
    return facts


def summarize_rules(files: Mapping[str, str], framework: str | None = None) -> dict[str, Any]:
    """Facts of the contribution files `files` ({repository path: text}).

    With `framework` (a catalog framework id), the curated observations for that framework are
    added, marked `observed: true` (facts of the repository layout or history, not of a file).
    """
    files = {repository_path(p): t for p, t in files.items()}
    kinds = {path: file_kind(path) for path, text in files.items() if isinstance(text, str)}
    # The main guide first, so a fact stated in several files cites CONTRIBUTING.
    files = {p: files[p] for p in sorted(kinds, key=lambda p: (KIND_ORDER.get(kinds[p], 9), p))}
    tab = table()
    segments = _segments(files, kinds)
    matched = _match(segments, kinds, files)
    stated_in_prose = {f["topic"] for f in matched}
    # a policy block's setting is said when the prose does not state its topic (rules77)
    facts = said_of_packages(
        [f for f in _structural(files, kinds)
         if not (f["rule"].startswith("policy_") and f["topic"] in stated_in_prose)] + matched, kinds, files)
    if framework:
        for obs in observed_facts().get(framework, []):
            facts.append({
                "topic": obs["topic"], "rule": "observed", "statement": obs["statement"],
                "statement_zh": None, "strength": obs.get("strength", "rule"),
                "source": obs.get("source", ""), "sources": [obs.get("source", "")],
                "evidence": "", "observed": True,
            })
    order = {t: i for i, t in enumerate(tab.topics)}
    facts.sort(key=lambda f: order.get(f["topic"], len(order)))
    stated = {f["topic"] for f in facts if f["strength"] == "rule"}
    summary: dict[str, Any] = {
        "version": RULES_VERSION,
        "framework": framework,
        "files": sorted(files),
        "facts": facts,
        "not_stated": [t for t in tab.core if t not in stated],
    }
    if has_unread_prose(segments):
        # said under the summary: a topic "not stated" may be stated in those sentences
        summary["unread_language"] = True
    return summary


# --- rendering ------------------------------------------------------------------------------


def _safe(text: str) -> str:
    """No @-mentions outside code spans when posted on GitHub."""
    parts = text.split("`")
    for i in range(0, len(parts), 2):
        parts[i] = _MENTION.sub("@\u200b", parts[i])
    return "`".join(parts)


# Control and direction characters of third-party text (file names, commands quoted from a
# file): posted as spaces, since an override or isolate reorders what follows it in a comment.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


def _cited_path(path: str) -> str:
    """A file's repository path as a code span: a name may hold `<!--`, `<details>`, a link,
    `*`, `@login` or `#12` (a repository's files are third-party text), and git allows
    newlines and control characters in names. Backticks are dropped (one-backtick spans keep
    the backtick parity that the mention and reference guards split on)."""
    path = " ".join(_CONTROL.sub(" ", str(path or "")).replace("`", "").split())
    return f"`{path}`" if path else ""


def _topic_in_text(name: str) -> str:
    """A topic's name inside a sentence: its first letter lowercased, an acronym kept ("CI",
    "PR title and commits", "sign-off / CLA")."""
    return name if name[:2].isupper() else name[:1].lower() + name[1:]


def _topic_name(topic: str, lang: str, tab: Wording) -> str:
    meta = tab.topics.get(topic)
    if meta is None:  # a topic of an older extractor, shown by its id
        return topic.replace("_", " ").replace("-", " ").capitalize()
    return meta["zh" if lang == "zh" else "en"]


def rules_outline(
    summary: Mapping[str, Any],
    lang: str = "en",
    topics: list[str] | None = None,
    max_per_topic: int | None = None,
    unknown: bool = False,
) -> dict[str, Any]:
    """What a rendered summary says, before any markup: the comment and CLI
    (format_rules_markdown) and the framework page (templates/site/framework.html) are both
    rendered from it, so they state the same rules, cite the same files and say the same of the
    topics no rule covers.

    `sections`: per topic (the table's order) its name and facts, each with `statement` (our
    words, backticks marking names), `cited` (the files stating it, the main one first, up to
    MAX_CITED) and `observed`. `notes`: the sentences after the facts (topics not stated,
    topics with advice only, no files at all). `partial`: (how, text before the files, the
    files, text after them) for files read in part or not at all. With `unknown`, topics an
    older extractor stored are kept, named by their id (the page); without, left out (the
    comment: the next refresh drops them)."""
    tab = wording()
    zh = lang == "zh"
    by_topic: dict[str, list[Mapping[str, Any]]] = {}
    for fact in summary.get("facts", []):
        if topics is None or fact["topic"] in topics:
            by_topic.setdefault(fact["topic"], []).append(fact)
    order = list(tab.topics)
    if unknown:
        order += [t for t in by_topic if t not in tab.topics]
    sections = []
    for topic in order:
        facts = by_topic.get(topic)
        if not facts:
            continue
        # Stated rules before hints, so a short rendering keeps the rules.
        facts = sorted(facts, key=lambda f: f.get("strength") == "hint")
        shown = []
        for fact in facts[: max_per_topic or None]:
            text = (fact.get("statement_zh") if zh else None) or fact["statement"]
            # Every file that states the rule (up to MAX_CITED), the main one first.
            cited = [fact.get("source") or ""] + [
                s for s in fact.get("sources") or [] if s and s != fact.get("source")]
            shown.append({"statement": text, "cited": [c for c in cited if c][:MAX_CITED],
                          "observed": bool(fact.get("observed")),
                          "strength": fact.get("strength", "rule")})
        sections.append({"topic": topic, "name": _topic_name(topic, lang, tab), "facts": shown})
    missing = [t for t in summary.get("not_stated", [])
               if (unknown or t in tab.topics) and (topics is None or t in topics)]
    notes = []
    if "files" in summary and not summary["files"] and not (summary.get("partial") or {}):
        # Nothing was read: said plainly, not as topics "not stated in the files read".
        notes.append(tab.texts["no_files"]["zh" if zh else "en"])
        missing = []
    # A topic printed above with advice only (no rule) is said as such, not as "not stated"
    # right under its advice.
    advice = [t for t in missing if t in by_topic]
    missing = [t for t in missing if t not in by_topic]
    for key, group in (("not_stated", missing), ("advice_only", advice)):
        if group and key in tab.texts:
            names = ("、" if zh else ", ").join(
                _topic_in_text(_topic_name(t, lang, tab)) for t in group)
            notes.append(tab.texts[key]["zh" if zh else "en"].format(topics=names))
    if summary.get("unread_language") and "unread_language" in tab.texts:
        notes.append(tab.texts["unread_language"]["zh" if zh else "en"])
    # Files GitHub served only in part or not at all (bot.speaking.contribution): said, so a
    # rule or a CONTRIBUTING file past the cut is not taken for absent.
    partial_files = summary.get("partial") or {}
    partial = []
    # "failed": GitHub refused the file; "unlisted": the tree listing that finds package
    # guides was cut or refused, keyed by a search pattern, not a path: its text names no file.
    for how in ("cut", "unread", "failed", "unlisted"):
        paths = [p for p, h in partial_files.items() if h == how][:MAX_CITED * 3]
        if paths and f"partial_{how}" in tab.texts:
            text = tab.texts[f"partial_{how}"]["zh" if zh else "en"]
            before, named, after = text.partition("{files}")
            partial.append({"how": how, "before": before, "paths": paths if named else [],
                            "after": after})
    return {"sections": sections, "notes": notes, "partial": partial,
            "no_files": bool(notes) and notes[0] == tab.texts["no_files"]["zh" if zh else "en"]}


def format_rules_markdown(
    summary: Mapping[str, Any],
    lang: str = "en",
    topics: list[str] | None = None,
    max_per_topic: int | None = None,
    heading: bool = True,
) -> str:
    """The summary as Markdown: a heading per topic, one bullet per fact with its source file,
    then the core topics no file speaks about. Only our statements and file names appear."""
    tab = wording()
    zh = lang == "zh"
    lines: list[str] = []
    if heading:
        title = tab.texts["title"]["zh" if zh else "en"]
        who = summary.get("framework") or ""
        lines.append(f"### {title}{f' — {who}' if who else ''}")
        lines.append("")
    outline = rules_outline(summary, lang, topics, max_per_topic)
    for section in outline["sections"]:
        lines.append(f"**{section['name']}**")
        for fact in section["facts"]:
            src = "; ".join(c for c in (_cited_path(p) for p in fact["cited"]) if c)
            note = tab.texts["observed"]["zh" if zh else "en"] if fact["observed"] else ""
            where = f" ({src}{note})" if src else (f" ({note.strip(', ')})" if note else "")
            lines.append(f"- {_safe(_CONTROL.sub(' ', fact['statement']))}{_safe(where)}")
        lines.append("")
    if outline["no_files"] and lines and lines[-1]:
        lines.append("")
    lines += outline["notes"]
    for part in outline["partial"]:
        paths = [c for c in (_cited_path(p) for p in part["paths"]) if c]
        lines.append("")
        lines.append(_safe(part["before"] + ", ".join(paths) + part["after"]))
    return "\n".join(lines).rstrip() + "\n"
