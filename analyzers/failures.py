"""Is this opening post a training-failure report, and which kind?

Reads the title and the opening post; later comments only as two small feature families
(the reporter's follow-ups, other people's replies), since they restate, guess and argue. The
vocabulary lives in failure_patterns.yaml; this module turns it into FEATURES, and two linear
models fitted on labelled threads (`make train`, analyzers/models/failure*.json) decide how
much each counts:

1. Lexicon features, from the prose (code blocks, HTML comments and template boilerplate
   removed; `snake_case` read as words), title and body apart:
   - per category: a phrase that names the failure ("entropy collapse", 熵坍塌); a metric and
     what it did close together in one sentence ("the KL keeps growing"), negated ("entropy
     does not drop") or about a remedy ("to avoid entropy collapse") counted apart; a metric
     in a pasted log that moved a lot (entropy 0.6 -> 0.01);
   - the symptom grammar: any metric class with any move class in ordinary words ("the reward
     does not grow" = reward|flat, "length keeps shrinking" = length|down, "loss is 0" =
     loss|zero, "KL is negative" = kl|negative; every wrong value also as the pooled
     `bad_value`), output of one repeated character, in English and Chinese;
   - the GUIDELINES' borderline calls, sentence by sentence ("about:*"): garbled output at
     inference or from step 0 vs appearing later in training, hangs, questions about what a
     metric means, asking with or without a symptom shown, exception names, training up while
     evaluation goes down, every sample of a group scoring alike, a failure verb with no
     metric; and "no_failure_cue" when nothing names a metric misbehaving; the moves of a
     healthy curve (entropy down, length or KL up ...) next to an improving reward, with
     nothing named wrong, show no symptom (_healthy_curve);
   - what else the post may be (feature request, crash, OOM, install, question, docs, speed);
   - narrative cues ("I noticed", "during training"), screenshots, pasted code, thread kind.
2. Hashed lemma 1-2-grams of title and prose, CJK character 1-3-grams (analyzers.learned).
3. confidence = P(report) from the binary model; `is_failure_report` when it reaches the
   model's decision threshold (best grouped-CV F1); the app comments only from `threshold()`
   (grouped-CV precision >= 0.90): a wrong comment on a maintainer's issue costs more than
   a missed one. The kind is the multiclass model's most probable category.

Everything is linear in the text: spaCy tokenisation (long runs broken up by analyzers.nlp),
PhraseMatcher, one pass over matches, `str.find` for Chinese, bounded regexes for logs.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from itertools import repeat
from operator import contains, or_
from pathlib import Path
from typing import Any, TypeVar

from analyzers import learned, nlp
from analyzers.accounts import by_bot
from analyzers.catalog import CONTRACT_FAILURE_KEYS
from analyzers.text import visible_text

PATTERNS_FILE = Path(__file__).with_name("failure_patterns.yaml")
T = TypeVar("T")

CATEGORIES: tuple[str, ...] = CONTRACT_FAILURE_KEYS
# Ties go to the more specific kind (earlier here).
_PRIORITY = {
    c: i
    for i, c in enumerate(
        (
            "moe_instability",
            "rollout_training_mismatch",
            "groups_without_signal",
            "entropy_collapse",
            "entropy_explosion",
            "kl_growth",
            "response_length_drift",
            "stale_rollout_data",
            "collapse_or_divergence",
            "other_failure",
        )
    )
}

# Prose beyond this is nearly always pasted output; the verdict is made by then.
MAX_PROSE = 12_000
MAX_TITLE = 400
KIND_MODEL_SURE = 0.6  # below this top probability the lexicon's leading kind decides (grouped CV, 0.1 grid)
MAX_SPEAKER_TEXT = 4_000  # characters of the post read for who speaks about whose run
_NEGATIONS = frozenset({"not", "n't", "never", "no", "without", "nor"})
_PREVENTION = frozenset(
    {
        "prevent", "avoid", "mitigate", "alleviate", "address", "fix", "solve", "tackle",
        "combat", "counter", "reduce", "handle", "against", "mitigation", "stabilize",
        "stabilise", "control", "monitor", "detect", "detection", "track",
    }
)  # fmt: skip


_SETTING_WORDS = frozenset(
    {
        "coef", "coeff", "coefficient", "weight", "bonus", "term", "penalty", "target",
        "regularization", "regularisation", "limit", "threshold", "budget", "schedule", "clip",
        "config", "setting", "parameter", "param", "cap", "max", "estimator", "type",
    }
)  # fmt: skip
# Moves that a negation just before takes away ("no spikes", "without any NaN"); a negated rise
# or fall is a move of its own (_NEGATABLE).
_NEGATED_AWAY = frozenset({"nan", "large", "wrong", "unstable", "degenerate"})
# Words before a 0 that make it the value a curve starts at ("from 0", 从 0).
_START_FROM = frozenset({"from", "从", "initially"})
_BELOW = frozenset({"below", "under"})
_POLICY_LOSS = frozenset({"pg", "policy", "actor", "surrogate"})
_ZH_POLICY_LOSS = ("pg", "policy", "actor", "策略")  # before 损失 / loss in Chinese text (pg_loss, 策略损失)
_ZH_PREVENTION = ("避免", "防止", "缓解", "抑制", "应对", "减轻", "预防", "解决")


def _after_remedy_word(lemmas: list[int], start: int, rules: _Rules) -> bool:
    """Whether one of the four tokens before `start` (`lemmas`: a document's lemma ids) is a
    remedy word ("to avoid entropy collapse", "monitor KL growth"): the words after it are
    about a remedy, not a report."""
    return not rules.lemma_ids.prevention.isdisjoint(lemmas[max(0, start - 4) : start])


def _signed_loss(lemmas: list[int], start: int, end: int, ids: _LemmaIds) -> bool:
    """Whether the words `start:end` (an other_failure cue) say a policy-gradient loss ("pg loss",
    "policy loss", "actor loss", named in them or just before) is negative: that loss is
    advantage-weighted and may be negative, so it is no impossible value (as a KL or a DPO loss
    would be; see _healthy_curve)."""
    span = lemmas[start:end]
    return ids.loss in span and ids.negative in span and not ids.policy_loss.isdisjoint(lemmas[max(0, start - 2) : end])


def _zh_signed_loss(low: str, pos: int, subject: str) -> bool:
    """_signed_loss for Chinese: the loss at `pos` is a policy-gradient loss (pg_loss, 策略损失)."""
    return subject in ("loss", "损失") and any(w in low[max(0, pos - 8) : pos] for w in _ZH_POLICY_LOSS)


def _zh_after_remedy_word(low: str, pos: int) -> bool:
    """The same for Chinese text, over the six characters before `pos` (避免熵坍塌)."""
    return any(w in low[max(0, pos - 6) : pos] for w in _ZH_PREVENTION)


@dataclass
class _Category:
    key: str
    zh_phrases: list[str]
    zh_subjects: list[str]
    zh_changes: list[str]
    context: list[str] = field(default_factory=list)

    @cached_property
    def zh_phrases_spaced(self) -> list[bool]:
        return [" " in p for p in self.zh_phrases]


@dataclass
class _Negative:
    key: str
    hard_title: nlp.TermSet
    title: nlp.TermSet
    title_start: tuple[str, ...]
    prose: nlp.TermSet
    code: nlp.TermSet


@dataclass(frozen=True)
class _LemmaIds:
    """Lemma ids (spaCy's string hashes, as a Doc's LEMMA array holds them) of the words read
    around a cue: comparing ints from one array per document instead of making a Token and
    decoding its lemma per look."""

    prevention: frozenset[int]
    negations: frozenset[int]
    settings: frozenset[int]
    long: int
    start_from: frozenset[int]  # "from 0", "从 0": the value a curve starts at
    below: frozenset[int]  # "below 0", "under zero": a negative value
    loss: int
    negative: int
    policy_loss: frozenset[int]  # "pg", "policy", "actor", "surrogate": a loss of either sign


@dataclass
class _Rules:
    window: int
    zh_window: int
    categories: dict[str, _Category]
    matcher: Any  # PhraseMatcher: "<category>|P", "|S", "|C", "|X" (context), "~m|", "~v|"
    # match id -> the label split at "|" ("<category>", "P"), ("~m", "<metric>"): a dict look-up
    # per match instead of decoding the label from the StringStore twice.
    labels: dict[int, tuple[str, str]]
    # lemma ids of the first word of every phrase of `matcher`: a text holding none of them
    # holds no match
    first_lemmas: frozenset[int]
    lemma_ids: _LemmaIds
    negatives: list[_Negative]
    observation_zh: list[str]
    log_min_points: int
    log_rules: list[dict[str, Any]]
    zh_metrics: list[tuple[str, str]]  # (term, metric class), longest terms first
    zh_moves: list[tuple[str, str]]  # (term, move class), `flat` first, longest first
    symptom_kinds: dict[str, str]  # "<metric>|<move>" -> the kind that symptom names

    @cached_property
    def zh_metric_terms(self) -> list[str]:
        return [term for term, _ in self.zh_metrics]

    @cached_property
    def zh_move_terms(self) -> list[str]:
        return [term for term, _ in self.zh_moves]


def _in_text(text: str, items: list[T], terms: list[str]) -> Iterator[T]:
    """The items (in their order) whose term (`terms[i]` for `items[i]`) is in `text`. The
    Chinese lexicon has hundreds of terms and a post holds few of them: the `in` tests run in
    one C loop, and only the terms found take a Python step."""
    return itertools.compress(items, map(contains, repeat(text), terms))


def _prepare(text: str) -> str:
    # snake_case, paths, hyphens and settings read as words: old_log_prob -> old log prob,
    # train/inference -> train inference, training-inference -> training inference,
    # max_staleness=8 -> max staleness = 8 (spaCy keeps "staleness=8" one token).
    # (Plain replaces, each a C pass over the text: str.translate with a table looks every
    # character up in it, ~30x slower on posts.)
    # "NaN" and "MoE" written in their usual case: spaCy keeps "NaN." / "MoE." at a sentence's
    # end one token (a capital before the period), so "the loss is NaN." named no NaN.
    return text.replace("_", " ").replace("/", " ").replace("-", " ").replace("=", " = ").replace("NaN", "nan").replace("MoE", "moe")


def _lemma_phrase(phrase: str) -> str:
    # Pattern phrases are written in lemma form already; joiners read as spaces, as in text.
    return _prepare(phrase).lower()


@lru_cache(maxsize=1)
def _rules() -> _Rules:
    data = nlp.load_patterns(PATTERNS_FILE)
    table: dict[str, list[str]] = {}
    categories: dict[str, _Category] = {}
    for key, spec in data["categories"].items():
        if key not in CATEGORIES:
            raise ValueError(f"failure_patterns.yaml: unknown category {key!r}")
        categories[key] = _Category(
            key=key,
            zh_phrases=[p.lower() for p in spec.get("zh_phrases", [])],
            zh_subjects=[p.lower() for p in spec.get("zh_subjects", [])],
            zh_changes=[p.lower() for p in spec.get("zh_changes", [])],
            context=[p.lower() for p in spec.get("context", [])],
        )
        for tag, name in (("P", "phrases"), ("S", "subjects"), ("C", "changes"), ("X", "context")):
            phrases = [_lemma_phrase(p) for p in spec.get(name, [])]
            if phrases:
                table[f"{key}|{tag}"] = phrases
    negatives = []
    for key, spec in data["negatives"].items():
        negatives.append(
            _Negative(
                key=key,
                hard_title=nlp.TermSet(spec.get("hard_title", [])),
                title=nlp.TermSet(spec.get("title", [])),
                title_start=tuple(s.lower() for s in spec.get("title_start", [])),
                prose=nlp.TermSet(spec.get("prose", [])),
                code=nlp.TermSet(spec.get("code", [])),
            )
        )
    obs = data["observation"]
    table["_obs|O"] = [_lemma_phrase(p) for p in obs["phrases"]]
    logs = data["log_metrics"]
    sym = data["symptoms"]
    # The symptom grammar shares the one matcher pass: labels "~m|<metric>", "~v|<move>".
    table.update({f"~m|{k}": [_lemma_phrase(p) for p in v] for k, v in sym["metrics"].items()})
    table.update({f"~v|{k}": [_lemma_phrase(p) for p in v] for k, v in sym["moves"].items()})

    def zh_terms(table: dict[str, list[str]]) -> list[tuple[str, str]]:
        pairs = [(str(t).lower(), k) for k, ts in table.items() for t in ts]
        # `flat` first: 不上升 must read as flat before 上升 reads as up.
        return sorted(pairs, key=lambda p: (0 if p[1] == "flat" else 1, -len(p[0])))

    docs = nlp.pattern_docs(table, attr="LEMMA")
    matcher = nlp.docs_matcher(docs, attr="LEMMA")
    strings = matcher.vocab.strings

    def ids(words: frozenset[str]) -> frozenset[int]:
        return frozenset(map(strings.add, words))

    return _Rules(
        window=int(data.get("window", 8)),
        zh_window=int(data.get("zh_window", 12)),
        categories=categories,
        matcher=matcher,
        labels={strings.add(label): (cat, tag) for label in table for cat, _, tag in [label.partition("|")]},
        first_lemmas=frozenset(d[0].lemma for label_docs in docs.values() for d in label_docs),
        lemma_ids=_LemmaIds(ids(_PREVENTION), ids(_NEGATIONS), ids(_SETTING_WORDS), strings.add("long"), ids(_START_FROM), ids(_BELOW),
                             strings.add("loss"), strings.add("negative"), ids(_POLICY_LOSS)),
        negatives=negatives,
        observation_zh=[p.lower() for p in obs.get("zh", [])],
        log_min_points=int(logs.get("min_points", 3)),
        log_rules=list(logs.get("rules", [])),
        zh_metrics=zh_terms(sym["zh_metrics"]),
        zh_moves=zh_terms(sym["zh_moves"]),
        symptom_kinds={pair: kind for kind, pairs in data.get("symptom_kinds", {}).items() for pair in pairs},
    )


@dataclass
class _Evidence:
    """Lexicon hits as named features ("<category>|<cue>" -> count) and the matched spans."""

    counts: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    phrases: list[str] = field(default_factory=list)
    context: set[str] = field(default_factory=set)
    observed: int = 0  # distinct narrative cues ("I noticed", "during training")

    def add(self, category: str, cue: str, text: str, weight: float = 1.0) -> None:
        self.counts[f"{category}|{cue}"] += weight
        self.counts[f"any|{cue}"] += weight
        self.note(text)

    def symptom(self, where: str, name: str, move: str) -> None:
        # Title and body apart, and pooled: a pair seen only in bodies still counts in a title.
        # A wrong value also counts as the pooled class "bad_value": the kinds of wrong value
        # tell kinds apart, the pooled class carries the evidence that a value is wrong.
        metric = name.partition("|")[0]
        if metric in _NOT_TRAINING_METRICS:
            # read, but neither a symptom nor pooled with the moves of training metrics
            for prefix in (f"{where}sym", "sym"):
                self.counts[f"{prefix}:{name}"] += 1.0
            return
        names = [name, f"{metric}|bad_value"] if move in _BAD_VALUES else [name]
        for prefix in (f"{where}sym", "sym"):
            for n in names:
                self.counts[f"{prefix}:{n}"] += 1.0
            self.counts[f"{prefix}:any|{move}"] += 1.0

    def note(self, text: str) -> None:
        if len(self.phrases) < 12:
            short = " ".join(text.split())[:60]
            if short and short not in self.phrases:
                self.phrases.append(short)


def _span_texts(document: Any, text: str) -> Callable[[int, int], str]:
    """document[start:end].text, sliced from `text` by the tokens' character offsets when the
    document holds `text` as it stands (a Span and its text make a Token per token; the
    slice is the same string). nlp.lemmatized cuts text past nlp.MAX_CHARS and breaks up long
    runs with spaces: such a document is read through its Spans, as before."""
    last = document[-1]
    if len(text) > nlp.MAX_CHARS or last.idx + len(last.text_with_ws) != len(text):
        return lambda start, end: document[start:end].text

    def span_text(start: int, end: int) -> str:
        end_token = document[end - 1]
        return text[document[start].idx : end_token.idx + len(end_token)]

    return span_text


def _english(text: str, where: str, rules: _Rules, ev: _Evidence) -> None:
    """Lexicon cues of one text ("t" title, "b" body) into `ev`."""
    document = nlp.tokens(text)  # sentences found (nlp.sentence_starts) only when a cue is
    lemmas = nlp.doc_lemmas(document)
    if rules.first_lemmas.isdisjoint(lemmas):
        return  # no phrase starts at any token (a third of the texts): the matcher finds nothing
    found = rules.matcher(nlp.set_lemmas(document, lemmas))
    if not found:
        return
    labels = rules.labels
    hits, symptom_hits = [], []
    for hit in found:
        (symptom_hits if labels[hit[0]][0][0] == "~" else hits).append(hit)
    span_text = _span_texts(document, text)
    # Sentence starts, so pairs never cross a sentence boundary (bisect per lookup): found
    # only for a text holding a pair to test (about half of those with a cue hold none).
    starts = _symptoms(document, lemmas, span_text, symptom_hits, where, rules, ev)
    if not hits:
        return

    def sent_of(i: int) -> int:
        return bisect.bisect_right(starts, i)

    by_cat: dict[str, dict[str, list[tuple[int, int]]]] = defaultdict(lambda: defaultdict(list))
    for match_id, start, end in hits:
        cat, tag = labels[match_id]
        by_cat[cat][tag].append((start, end))
    window = 10_000 if where == "t" else rules.window
    ids = rules.lemma_ids

    for cat, tags in by_cat.items():
        if cat == "_obs":
            ev.observed += len({lemmas[start] for start, _ in tags.get("O", [])})
            continue
        if cat == "moe_instability" and "X" in tags:
            ev.context.add("moe")
        for start, end in tags.get("P", []):
            cue = "remedy" if _after_remedy_word(lemmas, start, rules) else "phrase"
            if cat == "other_failure" and _signed_loss(lemmas, start, end, rules.lemma_ids):
                cue = "signed"
            ev.add(cat, f"{where}{cue}", span_text(start, end))
        # "entropy coeff", "kl penalty", "length limit" name a setting, not the metric:
        # turning a knob up is not the metric going up.
        subjects = [
            (ss, se) for ss, se in tags.get("S", [])
            if se >= len(lemmas) or lemmas[se] not in ids.settings
        ]  # fmt: skip
        changes = tags.get("C", [])
        if not subjects or not changes:
            continue
        if starts is None:
            starts = nlp.sentence_starts(document)
        used = 0
        for cs, ce in changes:
            if used >= 3:
                break
            negated = not ids.negations.isdisjoint(lemmas[max(0, cs - 2) : cs])
            if span_text(cs, ce).lower() in ("nan", "inf") and _in_error_message(document, starts, sent_of(cs), span_text):
                continue  # a crash's message (see _symptoms)
            for ss, se in subjects:
                if sent_of(ss) != sent_of(cs) or (ss < ce and cs < se):
                    continue  # other sentence, or the same words
                gap = cs - se if ss < cs else ss - ce
                if 0 <= gap <= window:
                    lo, hi = min(ss, cs), max(se, ce)
                    if negated:
                        cue = "negpair"  # "entropy does not drop" (or "reward does not go up")
                    else:
                        cue = "remedy" if _after_remedy_word(lemmas, lo, rules) else "pair"
                        if cat == "other_failure" and _signed_loss(lemmas, lo, hi, ids):
                            cue = "signed"
                    ev.add(cat, f"{where}{cue}", span_text(lo, hi))
                    used += 1
                    break


# A negated rise or fall is its own move: "the reward does not increase" (reward|not_up) is a
# symptom, "the entropy does not drop" (entropy|not_down) is a healthy run.
_NEGATABLE = frozenset({"up", "down"})
# Moves that describe a run going as it should.
_HEALTHY = frozenset(
    {"reward|up", "reward|not_down", "loss|down", "loss|not_up", "kl|not_up", "entropy|not_down", "grad|not_up"}
)
_BAD_VALUES = frozenset({"nan", "zero", "negative", "large", "wrong"})  # move classes of a wrong value
# Metric classes of the grammar that are not training dynamics (how fast the run goes): their
# moves are features of their own, never a symptom (_Evidence.symptom, _post_features).
_NOT_TRAINING_METRICS = frozenset({"speed"})
_NOT_SYMPTOM_KEYS = ("sym:any",) + tuple(f"sym:{m}|" for m in _NOT_TRAINING_METRICS)
MAX_SYMPTOM_HITS = 400  # matches read per text: a hostile body repeating metric words stays cheap


def _symptoms(
    document: Any, lemmas: list[int], span_text: Callable[[int, int], str], hits: list[Any], where: str,
    rules: _Rules, ev: _Evidence,
) -> list[int] | None:  # fmt: skip
    """Metric + move pairs of the symptom grammar ("the reward stays flat", "length keeps
    shrinking", "loss is 0"), nearest metric to each move in the same sentence (`lemmas`: the
    document's lemma ids; `span_text`: see _span_texts). Returns the document's sentence
    starts if it needed them (None: no metric and move to pair)."""
    metrics: list[tuple[int, int, str]] = []
    moves: list[tuple[int, int, str]] = []
    for match_id, start, end in hits[:MAX_SYMPTOM_HITS]:
        kind, cls = rules.labels[match_id]
        (metrics if kind == "~m" else moves).append((start, end, cls))
    if not metrics or not moves:
        return None
    starts = nlp.sentence_starts(document)
    window = 10_000 if where == "t" else 8
    seen: set[str] = set()
    for ms, me, move in moves:
        sent = bisect.bisect_right(starts, ms)
        best: tuple[int, str, int, int] | None = None
        for ss, se, metric in metrics:
            if (ss < me and ms < se) or bisect.bisect_right(starts, ss) != sent:
                continue
            gap = ms - se if ss < ms else ss - me
            # The subject usually comes first ("the reward drops"): a metric after the move
            # ("drop in reward") wins only when clearly nearer.
            rank = gap if ss < ms else gap + 3
            if 0 <= gap <= window and (best is None or rank < best[0]):
                best = (rank, metric, ss, se)
        if best is None:
            continue
        if move == "nan" and _in_error_message(document, starts, sent, span_text):
            continue  # "RuntimeError: probability tensor contains nan": a crash's message, not a metric
        lo = min(ms, best[2])
        if _after_remedy_word(lemmas, lo, rules):
            continue  # "to avoid the reward collapsing": about a remedy, not a symptom
        before = lemmas[max(0, ms - 3) : ms]
        ids = rules.lemma_ids
        if move == "zero" and ms and lemmas[ms - 1] in ids.start_from:
            continue  # "grows from 0 to 0.05", 从 0 开始: where a curve starts, not a wrong value
        if move == "zero" and ms and lemmas[ms - 1] in ids.below:
            move = "negative"  # "the loss is below zero"
        if move in _NEGATED_AWAY and not ids.negations.isdisjoint(lemmas[max(0, ms - 2) : ms]):
            continue  # "no spikes", "without NaN", "not unstable": said not to happen
        if move in _NEGATABLE and (not ids.negations.isdisjoint(before) or ids.long in before):
            move = "not_" + move  # "does not increase", "no longer grows", "does not drop"
        name = f"{_output_length(best[1], span_text(ms, me))}|{move}"
        ev.symptom(where, name, move)
        if name not in seen:
            seen.add(name)
            lo, hi = min(ms, best[2]), max(me, best[3])
            ev.note(span_text(lo, hi))
    return starts


# Outputs that get shorter, longer or shrink ("the answers get shorter every epoch", 回答越来越短) are
# the response length moving, however the post names the outputs.
_LENGTH_MOVES = ("short", "long", "shrink", "短", "变长", "越来越长", "越训越长")


def _output_length(metric: str, move_text: str) -> str:
    """`metric`, or "length" when the outputs move by a length word (see _LENGTH_MOVES)."""
    if metric == "output" and any(w in move_text.lower() for w in _LENGTH_MOVES):
        return "length"
    return metric


# An exception's message ("ValueError: reward tensor contains NaN", "error: ... inf"): a crash
# that stops the program (GUIDELINES: not a report), whatever value it names.
_ERROR_MESSAGE = re.compile(r"\b[A-Z][A-Za-z]{0,40}(?:Error|Exception)\b|(?i:\berror\s{0,2}:|\btraceback\b)")


def _in_error_message(document: Any, starts: list[int], sent: int, span_text: Callable[[int, int], str]) -> bool:
    end = starts[sent] if sent < len(starts) else len(document)
    return bool(_ERROR_MESSAGE.search(span_text(starts[sent - 1] if sent else 0, end)))


_ZH_NEGATORS = ("不", "没", "未")
_ZH_ASKING = ("怎么", "如何", "怎样", "能否", "如何才能")

# A question over a HEALTHY, moving curve is no report (GUIDELINES: "a question about a curve
# ('is this normal?') that shows a symptom is a report; one that shows healthy curves is not";
# a report states something going wrong). Healthy RL learning moves its curves by design: the
# policy sharpens (entropy falls), answers grow longer, the policy moves away from the reference
# (KL rises from 0), an RL loss falls, is noisy or negative. The grammar reads each such move
# as a pair like a symptom's; what tells a healthy curve is the post's own account of it: the
# reward or an evaluation improving alongside, and nothing named wrong (no other move, no wrong
# value, no failure named, no failure or severity word, no tenfold move, no run that changed).
# Such moves stay features (what moved, and how) but show no symptom: the post reads as what it
# is, a question or a note with no symptom shown, weighed by what the labelled threads taught
# the model about those (no feature of its own: no labelled thread is such a post, so grouped
# CV could not weigh one). Without an improvement named, a falling entropy asked about may be a
# collapse: it stays a symptom.
_SOFT = frozenset({"entropy|down", "entropy|flat", "length|up", "length|flat", "kl|up", "kl|down", "kl|flat",
                   "grad|down", "grad|flat", "loss|down", "loss|unstable", "loss|negative", "reward|unstable",
                   "output|up", "output|flat"})  # fmt: skip
_GAIN = frozenset({"reward|up", "reward|not_down"})  # the reward improving (read by the grammar)
_SOFT_KINDS = ("entropy_collapse", "response_length_drift", "kl_growth")  # their phrases name a soft move
# The reward or an evaluation improving in words the move lists lack ("accuracy keeps
# improving", 准确率在提升); bounded to one clause.
_IMPROVES = re.compile(
    r"(?i)\b(?:rewards?|accuracy|acc|scores?|val\w{0,8}|eval\w{0,8}|performance|pass@\d{1,3}|win\s{1,3}rate)\b[^.?!;,\n]{0,40}?"
    r"\b(?:improv\w{0,4}|gets?\s{1,3}better|getting\s{1,3}better)\b"
    r"|(?:奖励|准确率|验证集|效果|分数|reward|acc)[^。！？；，,\n]{0,12}?(?:提升|提高|变好)"
)
_NEGATED = re.compile(r"(?i)\b(?:not|n't|no|never|without|hardly|barely)\b|不|没|未")
# Whatever says the run is not healthy after all: a failure or severity word (collapse, NaN,
# truncated, sudden, spike, too high, near zero, fast), a run that changed ("at first",
# "anymore", 一开始), the reward or an evaluation falling within a clause. A word negated just
# before it ("no spikes", "without any NaN") does not count.
_UNHEALTHY = re.compile(
    r"(?i)\b(?:collaps\w{0,5}|diverg\w{0,5}|blow(?:s|ed|n|ing)?\s{1,3}up|blew\s{1,3}up|explod\w{0,3}|garbl\w{0,4}|gibberish"
    r"|truncat\w{0,4}|cut\s{1,3}off|nan|inf|sudden\w{0,2}|spik\w{1,3}|surg\w{1,3}|identical|diversity|hack\w{0,3}"
    r"|inflat\w{1,5}|max(?:imum)?\s{1,3}length|(?:near|almost|nearly|close\s{1,3}to)\s{1,3}(?:zero|0)|too\s{1,3}(?:large|high|low|big|fast)"
    r"|fast|quick\w{0,2}|rapid\w{0,2}|sharp\w{0,2}|dramatic\w{0,4}|drastic\w{0,4}|steep\w{0,2}|abnormal\w{0,2}"
    r"|at\s{1,3}first|initially|anymore|no\s{1,3}longer|exploit\w{0,4}|cheat\w{0,3}|shortcuts?)\b"
    r"|崩|坍塌|发散|乱码|截断|突然|骤|暴|飙|触顶|过低|过大|过高|接近0(?![.\d])|趋近|降到0(?![.\d])|降为0(?![.\d])|多样性|急剧|迅速|快速|很快"
    r"|一开始|起初|刚开始|不再"
    r"|(?:奖励|准确率|reward|acc|分数)[^。！？；，,\n]{0,12}?(?:下降|降|掉|变差)"
)
# A move by an order of magnitude or more ("from 0.6 to 0.01", "300 -> 8192", 从 1.2 降到 0.05):
# not a healthy pace, whatever the words around it. A start at 0 has no factor.
_FROM_TO = re.compile(
    r"(?i)(?:\bfrom|从)\s{0,3}(-?\d{1,7}(?:\.\d{1,8})?)[^\d\n]{0,16}?(?:\bto|->|→|到)\s{0,3}(-?\d{1,7}(?:\.\d{1,8})?)"
    r"|(-?\d{1,7}(?:\.\d{1,8})?)\s{0,3}(?:->|→|=>)\s{0,3}(-?\d{1,7}(?:\.\d{1,8})?)"
)
MAX_HEALTHY_FACTOR = 10.0


def _moved_tenfold(text: str) -> bool:
    """A from-to move in `text` by a factor of MAX_HEALTHY_FACTOR or more (first 20 read)."""
    for m in itertools.islice(_FROM_TO.finditer(text), 20):
        a, b = (float(g) for g in m.groups() if g is not None)
        lo, hi = sorted((abs(a), abs(b)))
        if lo > 0 and hi / lo >= MAX_HEALTHY_FACTOR:
            return True
    return False


def _said_unhealthy(text: str) -> bool:
    """A failure or severity word in `text` that no negation just before takes back."""
    for m in itertools.islice(_UNHEALTHY.finditer(text), 20):
        if not _NEGATED.search(text, max(0, m.start() - 8), m.start()):
            return True
    return False


def _healthy_curve(ev: _Evidence, text: str) -> bool:
    """Whether the post is over a healthy, moving curve (see _SOFT): every move the grammar
    read is one healthy learning makes (at least one) or a healthy one, the reward or an
    evaluation improves alongside, and nothing is named wrong (no other move, no wrong value,
    no failure named, no failure or severity word, no tenfold move). Its moves stay features
    (what moved, and how); they are no symptom."""
    pairs = {k[4:] for k in ev.counts if k.startswith("sym:") and not k.startswith(_NOT_SYMPTOM_KEYS) and not k.endswith("|bad_value")}
    # "training" is the generic subject: a move it shares with a metric named is that metric's
    # ("训练300步，熵降到0.6", "the KL to the reference model grows"), not one of its own.
    named_moves = {p.partition("|")[2] for p in pairs if not p.startswith("training|")}
    pairs = {p for p in pairs if not p.startswith("training|") or p.partition("|")[2] not in named_moves}
    if not pairs & _SOFT or not pairs <= (_SOFT | _HEALTHY):
        return False
    # A negative loss is other_failure's impossible value only for a loss that cannot be negative
    # (DPO's, a KL): next to an improving reward with nothing else wrong it is the policy-gradient
    # loss, advantage-weighted, which may be negative; its "negative loss" cue names no failure.
    negative_pg_loss = "loss|negative" in pairs and not any(p.endswith("|negative") for p in pairs - {"loss|negative"})
    for name in ev.counts:
        cat, _, how = name.partition("|")
        if cat in _PRIORITY and (how == "log" or (how[1:] in ("phrase", "zh_phrase") and cat not in _SOFT_KINDS)):
            if not (negative_pg_loss and cat == "other_failure" and how != "log"):
                return False  # a failure named (the soft kinds' phrases name a move: "length increase")
    gain = bool(pairs & _GAIN) or any(
        not _NEGATED.search(m.group()) for m in itertools.islice(_IMPROVES.finditer(text), 5)
    )  # fmt: skip
    if not gain:
        return False
    return not _said_unhealthy(text) and not _moved_tenfold(text)


def _decimal_follows(text: str, end: int) -> bool:
    """A term ending in 0 at `end` is the start of a number such as 0.5 or 05 (一直为0.5)."""
    return text[end : end + 1].isdigit() or (text[end : end + 1] == "." and text[end + 1 : end + 2].isdigit())


def _zh_symptoms(low: str, where: str, rules: _Rules, ev: _Evidence) -> None:
    """The symptom grammar in Chinese: a metric term, then a move term within the window."""
    window = 10_000 if where == "t" else rules.zh_window
    seen: set[str] = set()
    for term, metric in _in_text(low, rules.zh_metrics, rules.zh_metric_terms):
        pos = low.find(term)
        tries = 0
        while pos >= 0 and tries < 8:
            if _zh_after_remedy_word(low, pos):
                pos = low.find(term, pos + 1)  # 避免熵下降 "avoid the entropy dropping": a remedy
                tries += 1
                continue
            tail = low[pos + len(term) : pos + len(term) + min(window, 40)]
            # The nearest move after the metric (熵缓慢下降,奖励稳步上升: the entropy falls); at
            # one position the list's order decides (flat first: 不上升 before 上升). A 0 that
            # starts a number (为0.5) is a value, not a zero.
            found = min(
                ((at, i, move_term, move)
                 for i, (move_term, move) in enumerate(_in_text(tail, rules.zh_moves, rules.zh_move_terms))
                 if (at := tail.find(move_term)) >= 0
                 and not (move == "zero" and _decimal_follows(tail, at + len(move_term)))),
                default=None,
            )  # fmt: skip
            if found is not None and not any(w in tail[max(0, found[0] - 3) : found[0]] for w in _ZH_ASKING):
                # (怎么提高吞吐 "how to raise the throughput": what the asker wants, not a move)
                at, _, move_term, move = found
                # 不上升 / 不再上升 / 没有上升: a negator just before the move
                if move in _NEGATABLE and any(ch in _ZH_NEGATORS for ch in tail[max(0, at - 3) : at]):
                    move = "not_" + move
                name = f"{_output_length(metric, move_term)}|{move}"
                if name not in seen:
                    seen.add(name)
                    ev.symptom(where, name, move)
                    ev.note(term + "…" + move_term)
            pos = low.find(term, pos + 1)
            tries += 1


def _chinese(text: str, where: str, rules: _Rules, ev: _Evidence) -> None:
    low = text.lower()[: nlp.MAX_CHARS]
    _zh_symptoms(low, where, rules, ev)
    window = 10_000 if where == "t" else rules.zh_window
    # Specific kinds first; their phrases are blanked so a generic kind cannot re-use the same
    # characters ("熵坍塌" must not also read as 训练…坍塌).
    for cat in sorted(rules.categories.values(), key=lambda c: _PRIORITY[c.key]):
        if cat.context and any(c in low for c in cat.context):
            ev.context.add("moe")
        found = False
        # Tested in `low` as it stands here: a phrase blanked out by an earlier one of this
        # loop is then not found by `find`, as before. Blanking adds only spaces, so only a
        # phrase holding a space could appear through it: those are always tried.
        present = map(or_, cat.zh_phrases_spaced, map(contains, repeat(low), cat.zh_phrases))
        for phrase in itertools.compress(cat.zh_phrases, present):
            pos = low.find(phrase)
            if pos >= 0:
                # 避免熵坍塌 "avoid entropy collapse": about a remedy, not a report
                remedy = _zh_after_remedy_word(low, pos)
                ev.add(cat.key, f"{where}{'zh_remedy' if remedy else 'zh_phrase'}", phrase)
                low = low.replace(phrase, " " * len(phrase))
                found = True
        if found:
            continue
        # subject then change within the window: first few occurrences of each only.
        for subj in _in_text(low, cat.zh_subjects, cat.zh_subjects):
            pos = low.find(subj)
            tries = 0
            while pos >= 0 and tries < 8 and not found:
                tail = low[pos + len(subj) : pos + len(subj) + window]
                for change in _in_text(tail, cat.zh_changes, cat.zh_changes):
                    if change.endswith("0") and _decimal_follows(tail, tail.find(change) + len(change)):
                        continue  # 一直为0.3: a value, not a zero
                    signed = cat.key == "other_failure" and _zh_signed_loss(low, pos, subj)
                    ev.add(cat.key, f"{where}{'zh_signed' if signed else 'zh_pair'}", subj + "…" + change)
                    found = True
                    break
                pos = low.find(subj, pos + 1)
                tries += 1
            if found:
                break


_LOG_VALUE = {
    # Bounded repetitions: no backtracking across more than a few dozen characters.
    "entropy": re.compile(r"entropy[\w/.\-]{0,30}['\"]?\s{0,3}[:=]\s{0,3}(-?\d{1,6}(?:\.\d{1,8})?(?:e-?\d{1,3})?)"),
    "kl": re.compile(r"(?<![a-z])kl[\w/.\-]{0,30}['\"]?\s{0,3}[:=]\s{0,3}(-?\d{1,6}(?:\.\d{1,8})?(?:e-?\d{1,3})?)"),
    "response_length": re.compile(r"response[ _]?length[\w/.\-]{0,30}['\"]?\s{0,3}[:=]\s{0,3}(\d{1,7}(?:\.\d{1,8})?)"),
    "grad_norm": re.compile(r"grad[ _]?norm[\w/.\-]{0,30}['\"]?\s{0,3}[:=]\s{0,3}(-?\d{1,9}(?:\.\d{1,8})?(?:e\+?-?\d{1,3})?)"),
}
# A string every match of each _LOG_VALUE pattern holds: a text without it is not scanned (the
# look-behind that leads the KL pattern leaves re no literal to skip ahead to, so it would try
# every position of every pasted log).
_LOG_KEYS = {"entropy": "entropy", "kl": "kl", "response_length": "length", "grad_norm": "norm"}
_NAN_LOSS = re.compile(r"(?:loss|grad[ _]?norm)[\w/.\-]{0,30}['\"]?\s{0,3}[:=]\s{0,3}['\"]?(?:nan|inf)\b")


def _logs(code: str, rules: _Rules, ev: _Evidence) -> None:
    if not code:
        return
    low = code.lower()[: nlp.MAX_CHARS]
    series: dict[str, list[float]] = {}
    for metric, rx in _LOG_VALUE.items():
        values = []
        for m in rx.finditer(low) if _LOG_KEYS[metric] in low else ():
            try:
                values.append(float(m.group(1)))
            except ValueError:
                continue
            if len(values) >= 2000:
                break
        series[metric] = values
        if len(values) >= rules.log_min_points:
            ev.counts[f"log:{metric}"] += 1.0  # a metric logged over steps: a run was shown
    for rule in rules.log_rules:
        values = series.get(rule["metric"], [])
        if len(values) < rules.log_min_points:
            continue
        first, last = abs(values[0]), abs(values[-1])
        factor = float(rule["factor"])
        moved = (
            first > 0 and last <= first * factor
            if rule["direction"] == "down"
            else last >= max(first, 1e-6) * factor
        )
        if moved:
            ev.add(rule["category"], "log", f"{rule['metric']} {first:g} -> {last:g} in log")
    if _NAN_LOSS.search(low):
        ev.add("collapse_or_divergence", "log", "nan loss in log")
    if "std" in low or "zero" in low:
        _zero_std_groups(low, ev)


# Groups whose samples all score alike, as TRL-style logs print them: a reward std of exactly
# 0, or the share of such groups (frac_reward_zero_std, zero_var_ratio, ...).
_REWARD_STD = re.compile(r"reward[ _]?std['\"]?\s{0,3}[:=]\s{0,3}['\"]?(\d{1,6}(?:\.\d{1,8})?(?:e-?\d{1,3})?)")
_ZERO_STD_SHARE = re.compile(r"zero[ _]?(?:std|var)\w{0,12}['\"]?\s{0,3}[:=]\s{0,3}['\"]?(\d(?:\.\d{1,8})?(?:e-?\d{1,3})?)")


def _zero_std_groups(low: str, ev: _Evidence) -> None:
    """Most logged steps show groups without signal (reward std 0, or at least half of the
    groups at zero std): the guidelines' groups_without_signal, told by the log itself."""
    stds = [float(m.group(1)) for m in itertools.islice(_REWARD_STD.finditer(low), 200)] if "std" in low else []
    shares = [float(m.group(1)) for m in itertools.islice(_ZERO_STD_SHARE.finditer(low), 200)] if "zero" in low else []
    if (stds and 2 * sum(s == 0 for s in stds) >= len(stds)) or (shares and sum(shares) >= 0.5 * len(shares)):
        ev.add("groups_without_signal", "log", "reward std 0 in log")


def _negatives(title: str, prose: str, code: str, rules: _Rules, feats: learned.Features) -> list[str]:
    """What else the post may be, as named features "neg:<class>|<where>"; returns cues."""
    t, p, c = title.lower(), prose.lower(), code.lower()
    # (`.terms`: an empty TermSet is skipped by a list's truth, read in C, not by a call of
    # TermSet.__bool__ per class and text.)
    cues: list[str] = []
    for neg in rules.negatives:
        hard = neg.hard_title.search(t) if neg.hard_title.terms else None
        if hard:
            feats.add(f"neg:{neg.key}|hard")
            cues.append(f"{neg.key}: {hard.strip()}")
        if neg.title_start and t.lstrip(" [(#*").startswith(neg.title_start):
            feats.add(f"neg:{neg.key}|title")
            cues.append(f"{neg.key}: title")
        elif neg.title.terms and (term := neg.title.search(t)):
            feats.add(f"neg:{neg.key}|title")
            cues.append(f"{neg.key}: {term.strip()}")
        if neg.prose.terms:
            n, term = neg.prose.count(p, 3)
            if n:
                feats.add(f"neg:{neg.key}|prose", n)
                cues.append(f"{neg.key}: {(term or '').strip()}")
        if neg.code.terms and c and neg.code.search(c):
            feats.add(f"neg:{neg.key}|code")
            cues.append(f"{neg.key}: in code")
    return cues


# Unfenced configs and command lines ("actor.entropy_coeff=0 \\", "--use_kl_loss",
# "kl_coef: 0.001", "export X=1") are not sentences about the run. Bounded, per line.
_CONFIG_LINE = re.compile(
    r"^\s{0,12}(?:"
    r"(?:export\s{1,4})?[+\w.\-\[\]'\"]{1,120}=\S{0,200}(?:\s{1,4}\\)?"  # key=value [\\]
    r"|--?[\w\-.]{1,80}(?:[ =]\S{0,200})?(?:\s{1,4}\\)?"  # --flag [value] [\\]
    r"|[\w.\-]{1,80}:\s{0,4}[^\s:]{0,120}"  # yaml key: value
    r"|[\w.\-]{1,80}\s{1,40}\d[\w.\-+]{0,40}"  # "torch   2.6.0" version tables
    r")\s{0,4}$"
)


def _drop_config_lines(text: str) -> tuple[str, str]:
    prose: list[str] = []
    config: list[str] = []
    for line in text.split("\n"):
        (config if len(line) <= 400 and _CONFIG_LINE.match(line) else prose).append(line)
    return "\n".join(prose), "\n".join(config)


# Each alternative with literals one of which any match of it contains (see CaselessPattern).
_STEPS = nlp.CaselessPattern(
    (
        r"\b(?:after|at|around|about|within|from|until|by|before|over|first|last)\s{1,3}(?:global\s)?"
        r"(?:step\s{0,2}\d{1,7}|\d{1,7}\s{0,2}(?:k\s)?(?:steps?|iterations?|iters?|epochs?|updates?))",
        ("step", "iter", "epoch", "update"),
    ),
    (r"\d{1,7}\s{0,2}(?:个)?(?:step|steps|步|轮|个epoch|epoch)", ("step", "步", "轮", "epoch")),
)
# Who speaks about whose run: a reporter describes their own training ("my run", "I trained",
# "we are training", 我的训练; "I tried to understand the code" is reading, not a run); a pitch
# or a paper describes a method ("we propose", "this PR adds", "our method", an arXiv link); a
# code analysis points at source lines without a run.
_OWN_RUN = nlp.CaselessPattern(
    (
        r"\b(?:my|our)\s{1,3}(?:own\s{1,3})?(?:run|runs|training|experiments?|job|model|policy|reward|loss|curves?)\b",
        ("my", "our"),
    ),
    (
        r"\b(?:i|we)(?:'m|'ve| am| are| have| had| was| were)?\s{1,3}(?:also\s{1,3})?"
        r"(?:train|trained|training|run|ran|running|fine-?tun(?:e|ed|ing)|launch(?:ed)?|use|used|using"
        r"|(?:tried|trying)(?!\s{1,3}to\s{1,3}(?:understand|figure|learn|read)\b))\b",
        ("train", "run", "ran", "fine", "launch", "tried", "trying", "use", "using"),
    ),
    (r"我的(?:训练|实验|模型|奖励|曲线)", ("我的",)),
    (r"我(?:们)?(?:在|正在|用|使用|尝试)?(?:训练|跑|微调|复现)", ("我",)),
)
_PITCH = nlp.CaselessPattern(
    (r"\b(?:we|i)\s{1,3}(?:propose|introduce|present)\b", ("propose", "introduce", "present")),
    (
        r"\bthis\s{1,3}(?:pr|pull request|paper|work)\s{1,3}(?:adds?|introduces?|implements?|proposes?|presents?)\b",
        ("add", "introduce", "implement", "propose", "present"),
    ),
    (r"\bour\s{1,3}(?:method|approach|paper|algorithm)\b", ("method", "approach", "paper", "algorithm")),
    (r"arxiv\.org/", ("arxiv.org/",)),
    (r"\barxiv\b", ("arxiv",)),
    (r"\bpaper\b", ("paper",)),
    (r"论文", ("论文",)),
    (r"我们提出", ("我们提出",)),
)
_CODE_ANALYSIS = nlp.CaselessPattern(
    (r"github\.com/[\w.\-]{1,80}/[\w.\-]{1,80}/blob/", ("github.com/",)),
    (r"#l\d{1,6}\b", ("#l",)),
    (r"\bline\s{1,3}\d{1,6}\b", ("line",)),
)
# Asking how or why a method is done, rather than telling what a run did: "how did you keep
# the KL that small", "why not just use a KL term", "the role of the critique", 如何确定 ...
# ("how to fix / solve / avoid this" asks for a fix of what happened: not this).
_ASKS_HOW = nlp.CaselessPattern(
    (
        r"\bhow\s{1,3}(?:did|do|does|would|could|can|should)\s{1,3}(?:you|they|we|the\s{1,3}authors?)\b"
        r"(?!\s{1,3}(?:usually\s{1,3}|typically\s{1,3}|normally\s{1,3}|best\s{1,3})?(?:fix|solve|resolve|avoid|prevent|deal|handle|debug|get\s{1,3}rid))",
        ("how",),
    ),
    (r"\bwhy\s{1,3}(?:do|did|does|would)\s{1,3}(?:you|they|the\s{1,3}authors?)\b|\bwhy\s{1,3}not\b", ("why",)),
    (r"\bthe\s{1,3}(?:role|purpose|intuition|motivation|rationale)\s{1,3}of\b", ("role", "purpose", "intuition", "motivation", "rationale")),
    (r"为什么要|为何要|如何确定|怎么确定", ("为什么要", "为何要", "如何确定", "怎么确定")),
)
# A preference-optimisation run (DPO and its kin): its "rewards" are implicit (rewards/chosen,
# rewards/rejected) and the labels read their odd moves as other failures, not as an RL reward
# collapsing; the kind model learns a prior from it (training/failure.py, KIND_PRIOR_FAMILIES).
_PREFERENCE = nlp.CaselessPattern(
    (r"\b(?:dpo|kto|orpo|simpo|ipo)\b", ("dpo", "kto", "orpo", "simpo", "ipo")),
    (r"preference\s{1,3}optimi[sz]ation", ("preference",)),
    (r"rewards/(?:chosen|rejected)", ("rewards/",)),
    (r"\bchosen\b.{0,20}\brejected\b", ("chosen",)),
)
_QUESTION_TITLE = re.compile(r"(?i)^\W{0,4}(?:\[[^\]]{0,30}\]\s{0,3})?(?:why|how|what|which|is|are|does|do|can|could|should|would|whether)\b|为什么|为何|是否|请问|吗")

# One character (not Markdown or table punctuation) eight times in a row.
_REPEATED_CHAR = re.compile(r"([^\s\-=_*#~`.|+/\\<>()\[\]{}:0-9a-zA-Z])\1{7}")


_POSITIVE_CUES = frozenset({"phrase", "pair", "zh_phrase", "zh_pair"})


def _summarise(ev: _Evidence, feats: learned.Features) -> None:
    """Per category, how many kinds of positive cue it got ("ev:<category>"; a title cue
    counts twice), and which category leads ("top:<category>", ties to the more specific
    kind): few labelled threads per kind, so the kind model needs a compact view."""
    strength: dict[str, float] = defaultdict(float)
    for name, n in ev.counts.items():
        cat, _, cue = name.partition("|")
        if cat not in _PRIORITY or n <= 0:
            continue
        if cue == "log":
            strength[cat] += 1.0
        elif cue[1:] in _POSITIVE_CUES:
            strength[cat] += 2.0 if cue[0] == "t" else 1.0
    for cat, value in strength.items():
        feats.add(f"ev:{cat}", value)
    if strength:
        top = min(strength, key=lambda c: (-strength[c], _PRIORITY[c]))
        feats.add(f"top:{top}")


def _speaker(
    title: str, head: str, opening: nlp.CaselessText, run: bool, failure_cue: bool, feats: learned.Features
) -> None:
    """Report or pitch/question/code analysis: whose run the post is about, and how it asks.
    The conjunctions matter: a linear model cannot form "own run AND symptom" itself.
    (`head`: the post's first MAX_SPEAKER_TEXT characters; `opening`: the title, a line
    break and `head`.)"""
    own = _OWN_RUN.count(opening, 3)
    pitch = _PITCH.count(opening, 3)
    if own:
        feats.add("speaker:own_run", own)
        if failure_cue:
            feats.add("speaker:own_run_and_cue")
        if run:
            feats.add("speaker:own_run_and_run")
    if pitch:
        feats.add("speaker:pitch", pitch)
        if not own:
            feats.add("speaker:pitch_only")
    if _CODE_ANALYSIS.count(head, 1) and not run:
        feats.add("speaker:code_without_run")
    question_title = "?" in title or "？" in title or bool(_QUESTION_TITLE.search(title))
    if question_title:
        feats.add("speaker:question_title")
        if not own:
            feats.add("speaker:question_not_own_run")
    marks = min(head.count("?") + head.count("？"), 3)
    if marks:
        feats.add("speaker:question_marks", marks)
    if (marks or question_title) and _ASKS_HOW.count(opening, 1):
        # Named with the guidelines' borderline calls (a question about what a method or an
        # option does is no report), so it is fitted at their scale (training/failure.py).
        feats.add("about:asks_how")


# What the post is about, sentence by sentence (GUIDELINES' borderline calls), as named
# features "about:<what>": each is a class of situation shared by many threads, and the
# conjunctions with a symptom are given because a linear model cannot form an AND.
# A sentence end: [.!?;](?=\s|$)|[。！？；\n] (not in 0.5, model_merger.sh), written as one
# character class first so that re skips ahead in C to those characters (an alternation of two
# classes is tried at every position); a look-behind tells which kind was taken. The same
# matches (tested).
_SENTENCE_END = re.compile(r"[.!?;。！？；\n](?:(?<=[.!?;])(?=\s|$)|(?<=[。！？；\n]))")
MAX_SENTENCES = 300
MAX_SENTENCE = 500
MAX_ANCHORS = 20  # sentences read again per anchor pattern
# Garbled or repeated output present from the start or without training is an inference bug.
_FROM_START = re.compile(
    r"(?i)\b(?:from|at|since)\s{1,3}(?:the\s{1,3})?(?:step\s{0,2}0|(?:very\s{1,3})?(?:beginning|start|first\s{1,3}step))\b"
    r"|\bstep\s{0,2}0\b|\bbefore\s{1,3}(?:any\s{1,3})?training\b|\bwithout\s{1,3}(?:any\s{1,3})?training\b|\buntrained\b"
    r"|\bbase\s{1,3}model\s{1,3}(?:also|already|itself|too)\b|\bfirst\s{1,3}(?:rollout|generation|inference)\b"
    r"|一开始|刚开始|从头|第0步|第一步|训练前|没有训练|未训练|第一次推理|第一次的推理"
)
_CONVERSION = re.compile(
    r"(?i)\bconver(?:t|ted|ting|sion)\b|\bmodel\s{0,3}merger\b|\bmerg(?:e|ed|ing)\s{1,3}(?:the\s{1,3})?(?:lora|weights?|checkpoints?|adapters?)\b"
    r"|\bafter\s{1,3}(?:saving|loading|merging|exporting)\b|\b(?:at|during|for|in)\s{1,3}inference\b"
    r"|\bwhen\s{1,3}(?:i\s{1,3})?(?:run|do|doing|running)\s{1,3}inference\b|\bdeploy(?:ed|ing|ment)?\b"
    r"|转换|合并权重|合并后|导出|推理时|部署"
)
# A hang is not a run behaving badly: "stuck in compute_log_prob", "hangs for an hour".
_LATER = re.compile(
    r"(?i)\b(?:after|until)\s{1,3}(?:a\s{1,3})?(?:\d{1,7}|a\s{1,3}few|some|several|certain(?:\s{1,3}number\s{1,3}of)?|many|more)\s{1,3}(?:\w{1,12}\s{1,3})?(?:steps?|iterations?|iters?|epochs?|updates?)\b"
    r"|\blater\s{1,3}(?:stages?|phases?|in\s{1,3}training)\b|\bas\s{1,3}(?:the\s{1,3})?training\s{1,3}(?:goes\s{1,3}on|proceeds|progresses|continues)\b"
    r"|\bgradually\b|\bsuddenly\b|\bover\s{1,3}time\b|\beventually\b"
    r"|后期|一段时间后|逐渐|慢慢|突然|越来越|之后"
)
_DEGENERATE = re.compile(
    r"(?i)\b(?:garbl\w{0,4}|gibberish|nonsense|meaningless|repeat\w{0,4}|repetit\w{0,5}|degenerat\w{0,5}|corrupt\w{0,4})\b"
    r"|乱码|重复|复读|胡言乱语|([!?！？。的])\1{5}"
)
_HANG = re.compile(
    r"(?i)\b(?:hang|hangs|hanging|hung|freezes?|freezing|froze|frozen|deadlocks?|no\s{1,3}progress)\b"
    r"|\bstuck\s{1,3}(?:in|on|when|while|during|for|forever|after\s{1,3}(?:loading|init)|at\s{1,3}(?:the\s{1,3})?(?:step|iter|first|beginning|start|init|\w{1,30}ing\b))"
    r"|卡住|卡在(?!\s{0,2}-?\d)|卡死|(?<![\d%])不动了|没有反应"
)
_DURATION = re.compile(r"(?i)\b(?:\d{1,4}\s{0,2}|half\s{1,3}an\s{1,3}|an\s{1,3}|several\s{1,3})(?:min|mins|minutes?|hours?|hrs?)\b|分钟|小时")
# A question about what a metric means, how it is computed, or whether a value is normal.
_MEANING = re.compile(
    r"(?i)\bwhat\s{1,3}(?:does|do|is|are)\b.{0,60}\bmean\b|\bmeaning\s{1,3}of\b|\bhow\s{1,3}(?:is|are|to|do\s{1,3}you|should\s{1,3}i)\s{1,3}.{0,40}"
    r"\b(?:computed|calculated|compute|calculate|interpret|interpreted|understand|defined)\b"
    r"|\bis\s{1,3}(?:this|it|that)\s{1,3}(?:normal|expected|reasonable|ok|okay|correct|right|a\s{1,3}good\s{1,3}sign(?:al)?)\b"
    r"|\b(?:normal|expected)\s{1,3}(?:behavior|behaviour|phenomenon)\b"
    r"|正常吗|是否正常|正常么|这正常|什么意思|含义|怎么计算|如何计算|怎么理解|如何理解"
)
_BEHAVIOUR_WORDS = ("behavior", "behaviour", "phenomenon")  # the match's last word: see _meaning_questions
# A run that went well at first: "normal at the beginning, but after 300 steps ...", "proceeded
# normally up to step 600, after which it suddenly collapsed", 前期正常，然后... Followed in the
# same sentence by "until / then / after which" (_THEN) or a later-in-training cue (_LATER), it
# tells a run going bad over time (features only: no label or weight is set here).
_FINE = re.compile(r"(?i)\b(?:normal|normally|healthy|as\s{1,3}expected)\b|\bfine\b(?![\s-]{0,2}tun)|正常")
_THEN = re.compile(r"(?i)\b(?:until|then|after\s{1,3}which|but\s{1,3}after)\b|然后|后来|直到|但是?(?:在|到)?.{0,6}步")
# A Python exception named in the title or prose ("ActorDiedError", "NCCLException"): a crash.
_EXCEPTION_NAME = re.compile(r"\b[A-Z][A-Za-z]{0,40}(?:Error|Exception)\b")
_TRAIN = re.compile(r"(?i)\btrain(?:ing)?\b|训练")
# What training is not: evaluation, or the output's quality as a reader judges it.
_EVAL = re.compile(r"(?i)\b(?:eval|evaluation|evaluate|test|testing|val|validation|benchmark|held[\s-]{0,2}out|quality)\b|评测|测试|验证|评估|质量")
_REWARD_WORD = re.compile(r"(?i)\b(?:rewards?|returns?)\b|奖励")
# Clauses of a sentence: "the training reward rises, but the evaluation score drops".
_CLAUSE = re.compile(r"(?i)[,，、:：]|\b(?:but|while|whereas|although|though|yet)\b|但|而|却")
_UP = re.compile(r"(?i)\b(?:increas\w{0,3}|ris(?:e|es|ing)|rose|grow\w{0,3}|improv\w{0,3}|go(?:es|ing)?\s{1,3}up|went\s{1,3}up|higher|better)\b|上升|提升|增加|提高|上涨|变好")
_DOWN = re.compile(r"(?i)\b(?:decreas\w{0,3}|drop\w{0,4}|declin\w{0,3}|fall\w{0,3}|fell|degrad\w{0,3}|worse|lower|go(?:es|ing)?\s{1,3}down|went\s{1,3}down)\b|下降|降低|变差|变低|下滑")
# A failure verb with no metric named ("it suddenly collapsed", "the run diverged", 训崩了).
_FAILURE_VERB = re.compile(
    r"(?i)\b(?:collaps\w{0,5}|diverg\w{0,5}|blow(?:s|ed|n|ing)?\s{1,3}up|blew\s{1,3}up|explod\w{0,3}|degenerat\w{0,5})\b"
    r"|崩溃|崩了|训崩|坍塌|发散"
)
_REMEDY_BEFORE = re.compile(r"(?i)\b(?:avoid|prevent|mitigat|alleviat|stabili[sz]|against|reduc|combat|tackl)|避免|防止|缓解|抑制|预防|解决")
# Every sample of a group scoring the same: no learning signal (groups_without_signal).
_GROUP = re.compile(r"(?i)\bgroups?\b|\ball\s{1,3}(?:the\s{1,3})?(?:samples|responses|completions|rollouts|generations|answers)\b|\bevery\s{1,3}(?:sample|response|completion|rollout)\b|组内|全对|全错|每组")
# A zero is "0", "0.0", "0.000", not the 0 of "0.25" or of "1.0" (a reward std of 0.25 is signal).
_SAME = re.compile(r"(?i)\b(?:same|identical|equal|zero|all\s{1,3}correct|all\s{1,3}wrong)\b|(?<![\d.])\b0(?:\.0{1,8})?\b(?!\.?\d)|相同|一样|为0(?!\.?\d)|全对|全错")
_SCORE = re.compile(r"(?i)\b(?:rewards?|scores?|advantages?|std|variance)\b|奖励|分数|优势|方差")


_GATES: dict[re.Pattern[str], tuple[str, ...]] = {
    _DEGENERATE: ("garbl", "gibberish", "nonsense", "meaningless", "repeat", "repetit", "degenerat", "corrupt",
                  "乱码", "重复", "复读", "胡言乱语", "!!!!!!", "??????", "！！！！！！", "？？？？？？", "。。。。。。",
                  "的的的的的的"),
    _FAILURE_VERB: ("collaps", "diverg", "blow", "blew", "explod", "degenerat", "崩", "坍塌", "发散"),
    _HANG: ("hang", "hung", "freez", "froze", "deadlock", "progress", "stuck", "卡", "不动", "没有反应"),
    _MEANING: ("mean", "normal", "expected", "interpret", "comput", "calculat", "understand", "defined",
               "reasonable", "ok", "correct", "right", "good sign", "正常", "意思", "含义", "计算", "理解"),
    _EVAL: ("eval", "test", "val", "benchmark", "held", "quality", "评测", "测试", "验证", "评估", "质量"),
    _GROUP: ("group", "all", "every", "组内", "全对", "全错", "每组"),
    _FINE: ("normal", "healthy", "expected", "fine", "正常"),
}  # fmt: skip
# Keyed by id: hashing a compiled pattern hashes its whole code (0.4-1.6 µs for these).
_GATE_KEYS: dict[int, tuple[str, ...]] = {id(pattern): keys for pattern, keys in _GATES.items()}

# The re.ASCII twin of each pattern above: the same matches at the same offsets on text that
# is nlp.ascii_alike, without the Unicode table look-ups a `\b` makes at every position tried
# (re tries every position of a pattern led by one); most posts and comments are ASCII.
# Looked up by id, as _GATE_KEYS.
_ASCII_TWINS_OF = (
    _SENTENCE_END, _FROM_START, _CONVERSION, _LATER, _DEGENERATE, _HANG, _DURATION, _MEANING, _FINE, _THEN,
    _EXCEPTION_NAME, _TRAIN, _EVAL, _REWARD_WORD, _CLAUSE, _UP, _DOWN, _FAILURE_VERB, _REMEDY_BEFORE, _GROUP,
    _SAME, _SCORE,
)  # fmt: skip
_ASCII_TWINS: dict[int, re.Pattern[str]] = {id(pattern): nlp.ascii_twin(pattern) for pattern in _ASCII_TWINS_OF}


def _twin(pattern: re.Pattern[str], ascii: bool) -> re.Pattern[str]:
    """`pattern`'s re.ASCII twin for text that is nlp.ascii_alike (`ascii`), else `pattern`."""
    return _ASCII_TWINS[id(pattern)] if ascii else pattern


class _Sentences:
    """Sentence boundaries of a text, to read a cue together with what else its sentence
    says. Cues are found with one pass of each pattern over the whole text (not a pass per
    sentence); only the sentences around the first few anchors are read again."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.low = text.lower()
        # The anchors' matches, at the same offsets, over the lower-cased text without
        # IGNORECASE when that finds the same (nlp.without_ignorecase): cheaper to scan.
        self.caseless = nlp.lowered_matches_alike(text)
        self.ascii = nlp.ascii_alike(text)

    def rx(self, pattern: re.Pattern[str]) -> re.Pattern[str]:
        """`pattern`, or its re.ASCII twin when that finds the same in this text and its
        sentences (see _twin)."""
        return _twin(pattern, self.ascii)

    def finditer(self, pattern: re.Pattern[str]) -> Iterator[re.Match[str]]:
        pattern = self.rx(pattern)
        if self.caseless and pattern.flags & re.IGNORECASE:
            return nlp.lowered_finditer(pattern, self.low)
        return pattern.finditer(self.text)

    @cached_property
    def starts(self) -> list[int]:
        # Found when an anchor is: most texts have none.
        return [0] + [m.end() for m in itertools.islice(self.rx(_SENTENCE_END).finditer(self.text), MAX_SENTENCES)]

    def may_hold(self, pattern: re.Pattern[str]) -> bool:
        # A substring every match contains: most posts skip most patterns at C speed.
        low = self.low
        for key in _GATE_KEYS[id(pattern)]:
            if key in low:
                return True
        return False

    def around(self, pos: int) -> str:
        """The sentence holding `pos`, at most MAX_SENTENCE characters around it."""
        i = bisect.bisect_right(self.starts, pos) - 1
        start = max(self.starts[i], pos - MAX_SENTENCE // 2)
        end = self.starts[i + 1] if i + 1 < len(self.starts) else len(self.text)
        return self.text[start : min(end, pos + MAX_SENTENCE // 2)]

    def with_anchor(self, anchor: re.Pattern[str], limit: int = MAX_ANCHORS) -> list[str]:
        if not self.may_hold(anchor):
            return []
        return [self.around(m.start()) for m in itertools.islice(self.finditer(anchor), limit)]

    def count(self, pattern: re.Pattern[str], cap: int = 3) -> int:
        if not self.may_hold(pattern):
            return 0
        return len(list(itertools.islice(self.finditer(pattern), cap)))


def _train_up_eval_down(sentence: str, ascii: bool) -> bool:
    """Training (or its reward) rising in one clause and evaluation (or the output's quality)
    falling in another: what training optimises is not what is wanted (reward hacking,
    overfitting). Per clause, so that "the grad norm rises, train and test reward drop" (a
    collapse) is not read as one. (`ascii`: the sentence is nlp.ascii_alike.)"""
    train, reward, up, down, evaluation = (_twin(p, ascii) for p in (_TRAIN, _REWARD_WORD, _UP, _DOWN, _EVAL))
    clauses = _twin(_CLAUSE, ascii).split(sentence)
    rising = any((train.search(c) or reward.search(c)) and up.search(c)
                 and not evaluation.search(c) and not down.search(c) for c in clauses)  # fmt: skip
    return rising and any(evaluation.search(c) and down.search(c) and not train.search(c) and not up.search(c) for c in clauses)


def _meaning_questions(sentences: _Sentences, cap: int = 3) -> int:
    """Questions about what a metric means or whether a value is normal. "Expected behavior"
    counts only in a sentence that asks: as a bug template's heading ("### Expected behavior")
    or a statement ("this matches the expected behavior") it is no question."""
    if not sentences.may_hold(_MEANING):
        return 0
    n = 0
    for m in itertools.islice(sentences.finditer(_MEANING), 2 * cap):
        if m.group().endswith(_BEHAVIOUR_WORDS) and not any(q in sentences.around(m.start()) for q in "?？"):
            continue
        n += 1
        if n >= cap:
            break
    return n


def _situation(title: str, prose: str, symptom: bool, feats: learned.Features) -> None:
    """Inference bug, hang, meaning question, train-vs-eval, groups of equal scores."""
    text = title + "\n" + prose[:MAX_SPEAKER_TEXT]  # the situation is told up front
    sentences = _Sentences(text)
    # Garbled or repeated output: at inference / from the start (an inference bug), or
    # appearing as training goes on (a report). Read per sentence: "normal at the
    # beginning, but after 200 steps it repeats" is the second.
    rx = sentences.rx
    for s in sentences.with_anchor(_DEGENERATE):
        if rx(_LATER).search(s):
            feats.add("about:degenerate_later_in_training")
        elif rx(_FROM_START).search(s) or rx(_CONVERSION).search(s):
            feats.add("about:degenerate_at_inference")
    for s in sentences.with_anchor(_FINE):
        fine = rx(_FINE).search(s)
        if fine and (rx(_THEN).search(s, fine.end()) or rx(_LATER).search(s, fine.end())):
            feats.add("about:normal_then_changed")
            break
    if "error" in sentences.low or "exception" in sentences.low:
        if rx(_EXCEPTION_NAME).search(title):
            feats.add("about:exception_in_title")
        elif rx(_EXCEPTION_NAME).search(text):
            feats.add("about:exception_in_prose")
    verbs = sentences.count(_FAILURE_VERB)
    if verbs and rx(_REMEDY_BEFORE).search(text):
        # "how to avoid the collapse", 避免熵坍塌: a failure verb about a remedy does not count
        verbs = sum(1 for m in itertools.islice(rx(_FAILURE_VERB).finditer(text), 3)
                    if not rx(_REMEDY_BEFORE).search(text, max(0, m.start() - 24), m.start()))  # fmt: skip
    if verbs:
        feats.add("about:failure_verb", verbs)
    hang = sentences.count(_HANG)
    if hang:
        feats.add("about:hang", hang)
        if rx(_DURATION).search(text):
            feats.add("about:hang_for_time")
        if not symptom:
            feats.add("about:hang_without_symptom")
    # "A question about a curve that shows a symptom is a report; one that shows healthy
    # curves is not": asking is evidence only together with what is shown.
    if "?" in text or "？" in text:
        feats.add("about:asks_with_symptom" if symptom else "about:asks_without_symptom")
    meaning = _meaning_questions(sentences)
    if meaning:
        feats.add("about:meaning_question", meaning)
        feats.add("about:meaning_question_and_symptom" if symptom else "about:meaning_question_no_symptom")
    if any(_train_up_eval_down(s, sentences.ascii) for s in sentences.with_anchor(_EVAL)):
        feats.add("about:train_vs_eval")
    if any(rx(_SAME).search(s) and rx(_SCORE).search(s) for s in sentences.with_anchor(_GROUP)):
        feats.add("about:group_same_score")


# Who speaks after the opening post: the reporter's own follow-ups (curves and logs posted
# later, "still the same after 500 steps") and other people's replies ("this is expected", a
# usage answer, a fix) as two feature families, "reporter:" and "others:", read with the same
# lexicon as the post. A thread with no replies yet (as when the app decides to comment) gets none of them
# and reads exactly as its opening post (grouped CV: "nobody replied" markers weighed against
# every newly opened issue and lowered the opening posts' F1).
MAX_FOLLOW_UP = 1_000  # characters read per family (grouped CV: 1,000 as good as 2,000-12,000; 500 lower)
_FOLLOW_UP_FAMILIES = ("sym:", "ev:", "about:", "no_failure_cue", "images", "log:", "neg:", "run_and", "observed", "steps")


def follow_up_features(author: str | None, comments: list[dict[str, Any]] | None) -> dict[str, float]:
    """Named features of the reporter's later comments ("reporter:") and of other people's
    ("others:"); bots are skipped. Bounded: at most MAX_FOLLOW_UP characters per family."""
    texts: dict[str, list[str]] = {"reporter": [], "others": []}
    sizes = {"reporter": 0, "others": 0}
    for c in comments or ():
        if by_bot(c):
            continue
        who = "reporter" if author is not None and c.get("author") == author else "others"
        if sizes[who] < MAX_FOLLOW_UP:
            text = str(c.get("body") or "")[: MAX_FOLLOW_UP - sizes[who]]
            texts[who].append(text)
            sizes[who] += len(text) + 2
        elif min(sizes.values()) >= MAX_FOLLOW_UP:
            break
    out: dict[str, float] = {}
    for who, parts in texts.items():
        text = "\n\n".join(parts)[:MAX_FOLLOW_UP]
        if not text.strip():
            continue
        for name, value in _post_features(None, text, grams=False).vector.items():
            if name.startswith(_FOLLOW_UP_FAMILIES) and not name.startswith("sym:any"):
                out[f"{who}:{name}"] = value
    return out


@dataclass
class FailureFeatures:
    """What the models read about one opening post, and the spans worth quoting."""

    vector: dict[str, float]
    evidence: list[str]
    counter_evidence: list[str]
    moe_context: bool


def failure_features(
    title: str | None, body: str | None, kind: str | None = None,
    author: str | None = None, comments: list[dict[str, Any]] | None = None,
) -> FailureFeatures:  # fmt: skip
    """Named lexicon features (per category and cue, negative classes, narrative cues, logs)
    plus hashed lemma 1-2-grams of title and prose and CJK character n-grams, and the
    follow-up families of the later comments (`follow_up_features`)."""
    post = _post_features(title, body, kind)
    post.vector.update(follow_up_features(author, comments))
    return post


def _post_features(title: str | None, body: str | None, kind: str | None = None, grams: bool = True) -> FailureFeatures:
    """The opening post's features (see failure_features); `grams`: with the hashed n-grams.
    Without them (a follow-up) only the families follow_up_features keeps are computed."""

    def wanted(family: str) -> bool:  # a kept family holds, or is held in, `family`
        return grams or family.startswith(_FOLLOW_UP_FAMILIES) or any(f.startswith(family) for f in _FOLLOW_UP_FAMILIES)

    rules = _rules()
    title = (title or "")[:MAX_TITLE]
    split = nlp.split_markdown(body)
    raw_prose = split.prose[:MAX_PROSE]
    prose, config_lines = _drop_config_lines(visible_text(raw_prose))
    feats = learned.Features()
    ev = _Evidence()
    if title:
        _english(_prepare(title), "t", rules, ev)
    if prose.strip():
        _english(_prepare(prose), "b", rules, ev)
    if nlp.has_cjk(title) or nlp.has_cjk(prose):
        _chinese(title, "t", rules, ev)
        _chinese(prose, "b", rules, ev)
    _logs(split.code + "\n" + config_lines, rules, ev)
    for name, n in ev.counts.items():
        feats.add(name, min(n, 3.0))
    _summarise(ev, feats)
    observed = ev.observed + sum(1 for z in rules.observation_zh if z in prose)
    feats.add("observed", min(observed, 3))
    # A run being described: "after 200 steps", "at step 50", "训练到300步". Together with a
    # symptom it is what a report is (a linear model cannot form the AND itself).
    steps = _STEPS.count(title + "\n" + prose, 3)
    feats.add("steps", steps)
    run = steps > 0 or observed > 0
    unhealthy = any(k.startswith("sym:") and not k.startswith(_NOT_SYMPTOM_KEYS) and k[4:] not in _HEALTHY for k in ev.counts)
    named = any(
        cat in _PRIORITY and (how == "log" or how[1:] in _POSITIVE_CUES)
        for cat, _, how in (k.partition("|") for k in ev.counts)
    )  # a category named, not negated nor about a remedy
    if (unhealthy or named) and _healthy_curve(ev, title + "\n" + prose):
        unhealthy = named = False  # healthy moves of a healthy curve: no symptom shown
    if not unhealthy and not named:
        # Nothing in the post names a metric misbehaving (at most a healthy move, "the KL
        # does not grow"): screenshots and "my run" alone are what crashes and questions have too.
        feats.add("no_failure_cue")
    # A run told together with a metric misbehaving or a failure named is what a report is; a
    # healthy move ("the reward rises") or a category cue that is negated or about a remedy is
    # no symptom here either (as for asking, below).
    if run and unhealthy:
        feats.add("run_and_symptom")
    if run and named:
        feats.add("run_and_category_cue")
    if "moe" in ev.context:
        feats.add("context:moe")
    head = raw_prose[:MAX_SPEAKER_TEXT]
    # Lower-cased once for the four caseless patterns that read it (_PREFERENCE, _speaker's;
    # a follow-up wants neither family).
    opening = nlp.CaselessText.of(title + "\n" + head) if wanted("context:") or wanted("speaker:") else None
    if opening is not None and wanted("context:") and _PREFERENCE.count(opening, 1):
        feats.add("context:preference")
    cues = _negatives(title, raw_prose, split.code, rules, feats)
    if kind in ("pull_request", "discussion"):
        feats.add(f"kind:{kind}")
    if split.code.strip():
        feats.add("has_code")
    if opening is not None and wanted("speaker:"):
        _speaker(title, head, opening, run, unhealthy or named, feats)
    # Screenshots of curves: "a curve showing the symptom is a report".
    images = raw_prose.count("<img") + raw_prose.count("![")
    if images:
        feats.add("images", min(images, 4))
    # Output degenerating into one repeated character ("!!!!!!!!", "的的的的的的的的").
    # Prose only: pasted logs repeat characters in progress bars.
    if wanted("repeated_char") and (_REPEATED_CHAR.search(title) or _REPEATED_CHAR.search(prose)):
        feats.add("repeated_char")
    # A question shows a symptom when a metric misbehaves or a category is named; a healthy
    # move alone ("the reward rises, is this normal?") is a healthy curve asked about.
    _situation(title, prose, unhealthy or named, feats)
    if grams:
        # The joiners _prepare turns into spaces are never part of a word token.
        feats.add_tokens("t", learned.word_tokens(title) if title else [])
        feats.add_tokens("w", learned.word_tokens(prose) if prose.strip() else [])
        feats.add_grams("tc", learned.cjk_grams(title))
        feats.add_grams("wc", learned.cjk_grams(prose))
    return FailureFeatures(feats.vector(), ev.phrases[:12], cues[:6], "moe" in ev.context)


@dataclass(frozen=True)
class FailureModels:
    report: learned.LinearModel  # binary: is this a failure report
    kind: learned.LinearModel  # multiclass over CATEGORIES: which kind, given it is one


def failure_models() -> FailureModels:
    """The shipped models (analyzers/models/failure*.json, written by `make train`)."""
    report, kind = learned.load_model("failure"), learned.load_model("failure_kind")
    if report is None or kind is None:
        raise FileNotFoundError("analyzers/models/failure*.json missing: run `make train`")
    return FailureModels(report, kind)


def rank_kinds(features: FailureFeatures, model: learned.LinearModel) -> list[tuple[str, float]]:
    """Categories by probability, highest first. In a mixture-of-experts run, rollout /
    training disagreement is read as MoE instability (routing is the usual cause there)."""
    probs = model.probabilities(features.vector)
    if features.moe_context and "rollout_training_mismatch" in probs:
        probs["moe_instability"] = max(probs.get("moe_instability", 0.0), probs["rollout_training_mismatch"] * 1.1)
    ranked = sorted(probs.items(), key=lambda kv: (-kv[1], _PRIORITY.get(kv[0], 99)))
    # When the model is unsure (no kind at KIND_MODEL_SURE), the lexicon's leading category
    # decides: kinds with a handful of labelled reports (entropy collapse, stale rollouts) are
    # named by their own words more reliably than by ~150 fitted reports (grouped CV, all
    # folds: 81 vs 78 of 115 detected reports right).
    lead = _lead(features.vector)
    if lead in probs and ranked[0][1] < KIND_MODEL_SURE:
        ranked = _first(lead, ranked)
    if ranked[0][0] == "collapse_or_divergence":
        ranked = _named_cause_first(features, probs, ranked)
    # What the guidelines call a group without signal ("groups with zero advantage"), whatever
    # metric the post names first: every sample of a group scoring alike ("rewards and loss are
    # 0"), or a loss or advantage of exactly zero as the title's symptom (a zero loss in passing
    # in the body, e.g. under another precision setting, is not the post's symptom).
    # Both rules read the body; the title states the main symptom (GUIDELINES: `category` is the
    # main symptom), so neither renames a specific kind the title alone names ("Entropy near
    # zero by step 80 ... so the advantages are all zero": entropy collapse, its groups a
    # consequence).
    titled = _title_kind(features.vector)
    no_signal = ("about:group_same_score", "tsym:loss|zero", "tsym:advantage|zero", "groups_without_signal|log")
    if "groups_without_signal" in probs and any(f in features.vector for f in no_signal) and titled in (None, "groups_without_signal"):
        ranked = _first("groups_without_signal", ranked)
    # Training (or its reward) rising while evaluation or the output's quality falls: the reward
    # neither collapses nor stalls, it rewards the wrong thing (reward hacking, overfitting),
    # which none of the named kinds is: other_failure.
    if "about:train_vs_eval" in features.vector and "other_failure" in probs and titled in (None, "other_failure"):
        ranked = _first("other_failure", ranked)
    # A context whose labelled reports mostly share one kind (learned by `make train`, stored
    # in the model file: a preference-optimisation run -> other_failure) names that kind.
    for family, prior in model.meta.get("kind_priors", {}).items():
        if family in features.vector and prior in probs:
            ranked = _first(prior, ranked)
            break
    return ranked


def _lead(vector: dict[str, float]) -> str | None:
    """The lexicon's leading kind (`top:`), with the symptom pairs that name a kind
    (`symptom_kinds` of failure_patterns.yaml: "entropy|down" -> entropy collapse) counted as
    a pair of that kind where its own subjects and changes formed none ("KL keeps climbing":
    no KL change word, but a KL that goes up). Read at run time only: the features the models
    were fitted on are unchanged."""
    top = next((k[4:] for k in vector if k.startswith("top:")), None)
    kinds = _rules().symptom_kinds
    named = {(kind, name[0]) for name in vector if name.startswith(("tsym:", "bsym:"))
             and (kind := kinds.get(name[5:]))
             and f"{kind}|{name[0]}pair" not in vector and f"{kind}|{name[0]}zh_pair" not in vector}  # fmt: skip
    if not named:
        return top
    strength = {k[3:]: v for k, v in vector.items() if k.startswith("ev:")}
    for kind, where in named:
        strength[kind] = strength.get(kind, 0.0) + (2.0 if where == "t" else 1.0)
    return min(strength, key=lambda c: (-strength[c], _PRIORITY.get(c, 99)))


# Kinds that say what went wrong only in general terms (a collapse whose cause is not named; other).
_GENERIC_KINDS = frozenset({"collapse_or_divergence", "other_failure"})


# Per specific kind, the names of its positive title cues ("entropy_collapse|tphrase", ...):
# a few dict look-ups instead of a pass over every feature of the post.
_TITLE_CUE_KEYS = tuple(
    (cat, tuple(f"{cat}|t{cue}" for cue in sorted(_POSITIVE_CUES))) for cat in _PRIORITY if cat not in _GENERIC_KINDS
)


def _title_kind(vector: dict[str, float]) -> str | None:
    """The one specific kind the title names by its own cues (a phrase or a pair, not negated
    nor about a remedy), if it names exactly one; None otherwise."""
    named = [cat for cat, keys in _TITLE_CUE_KEYS if any(k in vector for k in keys)]
    return named[0] if len(named) == 1 else None


# Kinds that name a cause of a collapse rather than what misbehaves.
_CAUSE_KINDS = ("stale_rollout_data", "moe_instability", "rollout_training_mismatch")


def _named_cause_first(
    features: FailureFeatures, probs: dict[str, float], ranked: list[tuple[str, float]]
) -> list[tuple[str, float]]:
    """collapse_or_divergence is a collapse whose cause is not named (GUIDELINES.md): when the
    lexicon names a cause kind (`ev:<kind>`: stale rollouts, MoE routing, rollout/training
    mismatch), that kind is first. Those kinds have 0-12 labelled reports, so the fitted model
    rarely outweighs the collapse words ("the reward collapses", "unstable") that come with
    them; the strongest named cause wins (then the more probable), read as MoE instability in
    a mixture-of-experts run like the model's own mismatch evidence."""
    named = [(features.vector.get(f"ev:{k}", 0.0), probs.get(k, 0.0), k) for k in _CAUSE_KINDS if k in probs]
    strength, _, kind = max(named, default=(0.0, 0.0, ""))
    if strength <= 0:
        return ranked
    if kind == "rollout_training_mismatch" and features.moe_context and "moe_instability" in probs:
        kind = "moe_instability"
    return _first(kind, ranked)


def _first(kind: str, ranked: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """`ranked` with `kind` named first, at the leading probability (unchanged if it leads)."""
    if ranked[0][0] == kind:
        return ranked
    return [(kind, ranked[0][1])] + [(c, p) for c, p in ranked if c != kind]


def classify_failure(
    title: str | None, body: str | None, kind: str | None = None, models: FailureModels | None = None,
    author: str | None = None, comments: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Contract `failure` shape plus "evidence" (short spans of the post that matched a
    failure cue) and "counter_evidence" (which non-report classes were seen and where). Both
    hold thread text: never put them into a comment or page unescaped.

    `kind` (issue / pull_request / discussion) is optional: pull requests are never reports,
    discussions are read as a feature. `author` and `comments` (the thread's author and its
    later comments, contract shape) feed the follow-up features; without them the thread reads
    as its opening post alone. `models` defaults to the shipped ones; cross-validation
    passes per-fold models."""
    models = models or failure_models()
    result: dict[str, Any] = {
        "is_failure_report": False,
        "category": None,
        "categories": [],
        "confidence": 0.0,
        "evidence": [],
        "counter_evidence": [],
    }
    if kind == "pull_request" or (not (title or "").strip() and not (body or "").strip()):
        # Pull requests change code: even the few whose post describes a bad run (6 of 41
        # labelled) are not what a failure comment answers, and words alone do not tell them
        # apart (grouped-CV AUC on pull requests 0.49).
        return result
    features = failure_features(title, body, kind, author, comments)
    confidence = models.report.probability(features.vector)
    result["confidence"] = round(confidence, 3)
    result["evidence"] = features.evidence
    result["counter_evidence"] = features.counter_evidence
    if confidence >= models.report.threshold:
        ranked = rank_kinds(features, models.kind)
        top = ranked[0][1]
        result["is_failure_report"] = True
        result["category"] = ranked[0][0]
        result["categories"] = [c for c, p in ranked if p >= 0.5 * top][:4]
    return result


def threshold() -> float:
    """The abstain threshold for failure COMMENTS on `confidence`: chosen by `make train`
    where grouped cross-validated precision stays >= 0.90. (`is_failure_report` uses the
    model's decision threshold, the grouped-CV F1 optimum, which is lower: pages and reports
    may count a report the app would not comment on.)"""
    report = failure_models().report
    return report.thresholds.get("comment", report.threshold)
