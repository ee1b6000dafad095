"""Which of the catalog methods a proposal links it PROPOSES (for the study's "proposals for
methods no framework carries"), as against those it names as context.

A thread's analysis links every catalog method it names (contract `papers`): "like GRPO, but
..." links GRPO. A proposal requests or adds a method (eval/GUIDELINES.md); what it brings
is said first by its title, then by the papers its opening post cites. So, of the linked
methods, the proposed ones are:

1. when the title names a method (a catalog name, arXiv id or paper title, or a name shaped
   like one: the proposal classifier's count of method names in a title), the title decides:
   the catalog methods it names outside a context (none: it names a method the catalog
   lacks, or only where the new one goes: "Add X to GRPO");
2. when the title names none: those the opening post cites by arXiv id or paper title,
   outside a context;
3. when it cites none: those the opening post names, outside a context.

Methods named only in comments are never proposed by the thread. A mention is "in a
context" when a cue of CONTEXT_BEFORE stands before it in the same clause (a comparison,
"like GRPO", "compared with PPO"; a base, "based on"; or the place the proposal goes, "to
GRPO", "in GRPOTrainer"), or one of CONTEXT_AFTER right after it ("GRPO-like", "与 GRPO
相比"). An empty result means the proposal brings no catalog method (what it proposes is not
in the catalog).

Pure and linear: one pass of the paper index's matchers over the title and the opening post,
and a bounded look around each mention (at most CUE_WINDOW characters).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable
from typing import Any

from analyzers.arxiv import find_arxiv_mentions
from analyzers.papers import _TITLE_TAGS_RE, PaperIndex, _tokens, catalog_index
from analyzers.proposals import method_names_in_title
from analyzers.text import strip_html_comments, strip_inline_code, visible_text

# Words that put a method named after them in a comparison, as the base of the proposed one
# or as the place it goes, not as what is proposed (English, then Chinese). Lower case;
# English ones matched on word edges.
CONTEXT_BEFORE: tuple[str, ...] = (
    "to", "into", "in", "inside", "within",
    "like", "unlike", "similar to", "same as", "as in", "akin to", "analogous to",
    "instead of", "rather than", "in place of", "alternative to", "replace", "replaces",
    "replacing", "compared to", "compared with", "comparison with", "comparing with",
    "relative to", "than", "vs", "versus", "outperform", "outperforms", "outperforming",
    "improves on", "improves upon", "improvement over", "improvement on", "based on",
    "built on", "on top of", "extends", "extending", "extension of", "variant of",
    "generalizes", "generalization of", "inspired by", "derived from", "beyond",
    "类似", "类似于", "像", "相比", "比", "比起", "不同于", "区别于", "而不是", "而非",
    "代替", "替代", "取代", "基于", "优于", "对比", "改进", "扩展",
)
# Words that may stand between such a cue and the method ("similar to the original GRPO").
CONTEXT_FILLERS: tuple[str, ...] = (
    "the", "a", "an", "standard", "vanilla", "original", "existing", "current", "default",
    "plain", "classic", "traditional", "regular", "naive", "usual", "conventional",
    "标准", "原始", "原版", "传统", "现有", "默认",
)
# Words right after a method name that make it context ("GRPO-like", "与 GRPO 相比",
# "在 GRPO 中").
CONTEXT_AFTER: tuple[str, ...] = (
    "-like", "-style", "-based", " variant",
    "相比", "类似", "一样", "的变体", "的基础上", "之上", "中", "里",
)
CUE_WINDOW = 48  # characters looked at before a mention (cut at the clause's start)

_CLAUSE_END = re.compile(r"[.;:!?,()\[\]\n。；：！？，、（）]")
_CJK = re.compile(r"[\u3400-\u9fff]")


def _alternation(words: Iterable[str]) -> str:
    """One alternation of the words; ASCII words must stand on word edges (Chinese has none)."""
    parts = []
    for word in sorted(words, key=len, reverse=True):
        body = re.escape(word)
        if not _CJK.search(word):
            body = (r"(?<![a-z0-9])" if word[0].isalnum() else "") + body
            body += r"(?![a-z0-9])" if word[-1].isalnum() else ""
        parts.append(body)
    return "|".join(parts)


# a cue, then only fillers and punctuation up to the mention: "like GRPO", "to the GRPO"
_BEFORE = re.compile(f"(?:{_alternation(CONTEXT_BEFORE)})"
                     f"(?:[\\W_]*(?:{_alternation(CONTEXT_FILLERS)}))*[\\W_]*$")
_AFTER = re.compile(f"\\s*(?:{_alternation(CONTEXT_AFTER)})")


def in_context(text: str, start: int, end: int) -> bool:
    """Whether the mention text[start:end] is context (a comparison, a base, a place): a cue
    before it in its clause (within CUE_WINDOW characters), or right after it."""
    before = _CLAUSE_END.split(text[max(0, start - CUE_WINDOW):start].lower())[-1]
    if _BEFORE.search(before):
        return True
    return bool(_AFTER.match(text[end:end + 12].lower()))


_Mention = tuple[str | None, bool, bool]  # (method, in a context?, a citation?)


def _mentions(text: str, index: PaperIndex) -> list[_Mention]:
    """Each paper or method `text` names: arXiv ids and written-out titles (citations), and
    method names."""
    out: list[_Mention] = []
    for m in find_arxiv_mentions(text, unique=True):
        paper = index.paper_for_arxiv(m.arxiv_id)
        if paper is not None:
            out.append((paper.method, in_context(text, m.start, m.end), True))
    prose = strip_inline_code(text)
    toks = _tokens(prose)
    # a written-out title is a citation: the matcher gives no place, and a title is
    # long enough that it is not written as the context of "like ..."
    out.extend((index.papers[pi].method, False, True) for pi, _ in index.match_titles(toks))
    starts = None
    for alias, start in index.match_aliases(prose, toks):
        if starts is None:
            starts = toks.offsets()[0]
        first = bisect.bisect_left(starts, start)
        last = min(first + alias.ntokens - 1, len(toks) - 1)
        comparing = in_context(prose, start, toks.end(last))
        # a paper's own name (DAPO) names no one method of it: its first, as link_papers does
        out.extend((method or index.papers[pi].method, comparing, False)
                   for pi, method in alias.papers)
    return out


def _chosen(mentions: Iterable[_Mention], linked: set[str]) -> list[str]:
    """The linked methods mentioned outside a context (a method named both ways is)."""
    return sorted({m for m, comparing, _ in mentions if m in linked and not comparing})


def proposed_methods(thread: dict[str, Any], linked_methods: Iterable[str],
                     index: PaperIndex | None = None) -> list[str]:
    """The catalog method ids, among `linked_methods` (those the thread's analysis links),
    that the thread (its title and opening post) proposes, by the rules in the module text;
    [] when it proposes none of them."""
    linked = set(linked_methods)
    if not linked:
        return []
    index = index if index is not None else catalog_index()
    title = _TITLE_TAGS_RE.sub("", str(thread.get("title") or ""))
    named = _mentions(title, index)
    if named or method_names_in_title(title):
        return _chosen(named, linked)
    raw = strip_html_comments(str(thread.get("body") or "").replace("\r\n", "\n"))
    body = _mentions(visible_text(raw, keep_task_items=True), index)
    return _chosen((m for m in body if m[2]), linked) or _chosen(body, linked)


__all__ = ["CONTEXT_AFTER", "CONTEXT_BEFORE", "CUE_WINDOW", "in_context",
           "proposed_methods"]
