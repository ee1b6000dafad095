"""Does a thread propose or request adding a training method to the framework?

A proposal is an issue asking for a paper's method, or a pull request implementing one. A
question, bug report or docs change that only mentions a method is not. Two things must be
present (vocabulary in proposal_patterns.yaml):

- a request or an addition: request words in the title ("support", "add", "implement",
  "feat:"), request sentences in the opening post ("this PR adds", "do you have any plans"),
  or, for a pull request, simply adding code that is not a fix/docs/chore;
- a method: a paper linked by arXiv id or title, a catalog method name, a method-like name in
  the title (an acronym ending in PO, REINFORCE++, ...) or method vocabulary ("loss",
  "algorithm", "advantage estimator").

Questions, bug titles and infrastructure requests (hardware, engines, modalities) count
against it. Only the title and opening post are read: a proposal is what the opener asked.

The cues and their hand-set sum (`proposal_score`) are features of a fitted logistic
regression (analyzers/models/proposal.json, `make train`, training/proposal.py) that also
reads the title's and the opening post's n-grams; its threshold comes from grouped
cross-validation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from analyzers import learned, nlp

PATTERNS_FILE = Path(__file__).with_name("proposal_patterns.yaml")
MAX_TEXT = 12_000

# Acronym method names: GRPO, CISPO, DAPO, GSPO, DPOP, VAPO; not "PO" alone.
_PO_ACRONYM = re.compile(r"(?<![A-Za-z0-9])[A-Z][A-Za-z0-9-]{0,10}PO[A-Z]?(?![A-Za-z0-9])")
# A CamelCase or all-caps name inside the title next to a request word ("Implement Re-max").
_NAMEISH = re.compile(r"(?<![A-Za-z0-9])[A-Z][A-Za-z]{0,3}[A-Z][A-Za-z0-9+-]{0,12}(?![A-Za-z0-9])")
_COMMON_CAPS = frozenset(
    """GPU GPUS CUDA NCCL TPU NPU AWS API LLM LLMS VLM FSDP OOM PR PRS CI CPU RAM HF TRL VLLM
    SGLANG ROLL NEMO RL RLHF NVIDIA README YAML JSON PPO SFT LORA QLORA MOE AMD ROCM DDP ZERO
    FP8 FP16 BF16 URL UI WIP RFC FAQ TODO""".split()
)


@dataclass(frozen=True)
class _Rules:
    request_title: nlp.TermSet
    pr_maintenance_title: nlp.TermSet
    request_body: nlp.TermSet
    method_words: nlp.TermSet
    infrastructure: nlp.TermSet
    question_title: tuple[str, ...]
    bug_title: nlp.TermSet
    method_name_words: nlp.TermSet


@lru_cache(maxsize=1)
def _rules() -> _Rules:
    data = nlp.load_patterns(PATTERNS_FILE)

    def rx(key: str) -> nlp.TermSet:
        terms = nlp.TermSet(str(t) for t in data[key])
        if not terms:
            raise ValueError(f"proposal_patterns.yaml: {key} is empty")
        return terms

    return _Rules(
        request_title=rx("request_title"),
        pr_maintenance_title=rx("pr_maintenance_title"),
        request_body=rx("request_body"),
        method_words=rx("method_words"),
        infrastructure=rx("infrastructure"),
        question_title=tuple(str(t).lower() for t in data["question_title"]),
        bug_title=rx("bug_title"),
        method_name_words=rx("method_name_words"),
    )


# Conventional-commit and bracket prefixes that say what kind of change a title is.
_CONVENTIONAL = re.compile(
    r"^\s{0,3}(?:\[[^\]\n]{1,30}\]\s{0,3}){0,3}"
    r"(feat|feature|algo|recipe|fix|bugfix|hotfix|docs?|chore|test|tests|ci|refactor|style|"
    r"build|perf|revert|misc)(?:\([^)\n]{0,40}\))?!?\s{0,3}:"
)


def method_names_in_title(title: str) -> int:
    """How many names shaped like a method's the title holds (GRPO, CISPO, Re-max)."""
    n = len(_PO_ACRONYM.findall(title))
    for m in _NAMEISH.finditer(title):
        word = m.group(0)
        up = word.upper()
        plural_of = up[:-1] if up.endswith("S") else up  # GPUs -> GPU
        if up not in _COMMON_CAPS and plural_of not in _COMMON_CAPS and not _PO_ACRONYM.fullmatch(word):
            n += 1
    return n


def _title_and_prose(thread: dict[str, Any]) -> tuple[str, str]:
    """The title (first 400 characters) and the opening post's prose (first MAX_TEXT)."""
    title = str(thread.get("title") or "")[:400]
    return title, nlp.split_markdown(str(thread.get("body") or "")[: nlp.MAX_CHARS]).prose[:MAX_TEXT]


def proposal_score(thread: dict[str, Any], papers: list[dict[str, Any]]) -> tuple[float, list[str]]:
    """Raw score (log-odds) and the cues behind it."""
    return _score(thread, papers, *_title_and_prose(thread))


def _score(thread: dict[str, Any], papers: list[dict[str, Any]], title: str, body: str) -> tuple[float, list[str]]:
    rules = _rules()
    tl = title.lower()
    bl = body.lower()
    is_pr = thread.get("kind") == "pull_request"
    cues: list[str] = []
    score = -2.0

    # --- the method side ---------------------------------------------------------------
    method = 0.0
    strong_papers = [p for p in papers if p.get("how") in ("arxiv_id", "title")]
    named = [p for p in papers if p.get("how") == "method_name"]
    if strong_papers:
        method += 1.6
        cues.append("paper linked")
    if named:
        method += 1.0
        cues.append("method named")
    title_names = method_names_in_title(title)
    if rules.method_name_words.search(tl) or title_names:
        method += 1.0
        cues.append("method-like name in title")
    if rules.method_words.search(tl):
        method += 0.6
        cues.append("method word in title")
    elif rules.method_words.search(bl[:3000]):
        method += 0.3
    method = min(method, 2.6)
    score += method

    # --- the request side --------------------------------------------------------------
    request = 0.0
    title_request = rules.request_title.search(tl)  # read three times below
    if title_request:
        request += 1.3
        cues.append("request in title")
    if rules.request_body.search(bl):
        request += 0.9
        cues.append("request in body")
    prefix = _CONVENTIONAL.match(tl)
    if prefix and prefix.group(1) not in ("feat", "feature", "algo", "recipe"):
        # "docs: add GSPO to the list", "fix(grpo): ...": the author says what kind of change
        request = -1.5
        cues.append(f"{prefix.group(1)} change")
    elif is_pr:
        maintenance = rules.pr_maintenance_title.search(tl)
        if maintenance and not title_request:
            request -= 1.0
            cues.append("maintenance PR")
        else:
            request += 0.8  # a PR adds code: an addition unless it says it repairs
    elif request <= 0 and not strong_papers:
        # An issue that asks for nothing is a report or a question; one that names a method
        # and links its paper ("Reinforce++" + the arXiv link) is a request by itself.
        request = -1.0
        cues.append("no request")
    score += min(request, 2.4)

    # --- what it is instead -------------------------------------------------------------
    stripped = tl.lstrip(" [(#*")
    if stripped.startswith(rules.question_title) or any(
        q in tl for q in rules.question_title if q.startswith("[") or q.endswith(":")
    ):
        score -= 1.4
        cues.append("question")
    # The flags first: a search their answer makes useless is not made.
    if not title_request and rules.bug_title.search(tl):
        score -= 1.6
        cues.append("bug")
    if not strong_papers and rules.infrastructure.search(tl):
        score -= 1.6
        cues.append("infrastructure")
    if method == 0.0:
        score -= 1.5
    return score, cues


@dataclass(frozen=True)
class ProposalFeatures:
    vector: dict[str, float]
    rule_score: float  # the hand-set log-odds above: a baseline and one feature among others


def proposal_features(thread: dict[str, Any], papers: list[dict[str, Any]]) -> ProposalFeatures:
    """The cues above as named features (their hand-set sum too), and the title's and opening
    post's words: the fitted model (training/proposal.py) decides what each is worth."""
    # The title and the prose made once for the rules and the n-grams.
    title, prose = _title_and_prose(thread)
    score, cues = _score(thread, papers, title, prose)
    feats = learned.Features()
    for cue in cues:
        feats.add("cue:" + cue)
    feats.add("rule_score", score / 4.0)
    feats.add("pull_request", float(thread.get("kind") == "pull_request"))
    feats.add_text("t", title)
    feats.add_text("b", prose[:_BODY_WORDS_CHARS])
    return ProposalFeatures(feats.vector(), score)


# Opening-post prose read for n-grams: the request is stated near the top.
_BODY_WORDS_CHARS = 800


def proposal_model() -> learned.LinearModel:
    """The shipped model (analyzers/models/proposal.json, written by `make train`)."""
    model = learned.load_model("proposal")
    if model is None:
        raise FileNotFoundError("analyzers/models/proposal.json missing: run `make train`")
    return model


def classify_proposal(
    thread: dict[str, Any],
    papers: list[dict[str, Any]] | None = None,
    model: learned.LinearModel | None = None,
) -> dict[str, Any]:
    """Contract `proposal`: {"is_proposal", "confidence"}. `model` defaults to the shipped
    one; cross-validation passes per-fold models."""
    model = model or proposal_model()
    confidence = model.probability(proposal_features(thread, list(papers or [])).vector)
    return {"is_proposal": confidence >= model.threshold, "confidence": round(confidence, 3)}
