"""Contribution files cut into matchable segments: sentences, list items, table rows, code lines.

Used by analyzers/rules.py. Pure: text in, segments out. Every step is line-based with bounded
regexes, so a 64 KiB file costs linear time.

A segment keeps the plain text (Markdown markup removed, code spans kept as their content so
phrases like `paper_index.md` still match), the code spans on their own (statements quote them),
the nearest heading (rules can require a section) and a *head* (the bold lead of a list item or
the first cell of a table row). A line ending in ":" followed by a list, and a list item with
nested items, also yield one *combined* segment (lead plus items), because rules are often
written as "PR descriptions must include:" followed by the items.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import PurePosixPath
from typing import Any

import yaml

MAX_CHARS = 65_536
MAX_CODE_SPAN = 80  # longer code spans are not quoted (they would be pasted text, not a name)
MAX_COMBINED_ITEMS = 10
MAX_LABEL_WORDS = 4
MAX_LEAD_ITEM = 300  # longer items are read on their own, not joined to the lead  # a bold paragraph lead this short is a label, not a bold sentence

_LINK = re.compile(r"!?\[([^\]\n]{0,300})\]\([^)\s]{0,600}\)")
_TAG = re.compile(r"</?[A-Za-z][^<>\n]{0,200}>")
_HTML_COMMENT_MARK = re.compile(r"<!--|-->")
_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*)$")
_ITEM = re.compile(r"^(\s*)(?:[-*+]|\d{1,3}[.)]|#[.)])\s+(\[[ xX]\]\s+)?(.*)$")  # "#." : rST auto-numbering
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
# A checklist written with ballot boxes ("☐ Make sure existing tests pass.<br>"): a task item.
_BALLOT = re.compile(r"^(\s*)[☐☑☒□✅✔]\ufe0f?\s*(?=\S)")
_BOLD_LEAD = re.compile(r"^\*\*([^*\n]{1,120})\*\*:?\s*")
# A lead that introduces a counter-example ("An example of a description to avoid:", "Don't
# write commit messages like this:", "Bad example:"): the quote or code block under it is
# what not to write, and its words state no rule (rules82).
_COUNTER_EXAMPLE = re.compile(
    r"\b(?:bad|wrong|poor)\s(?:examples?|descriptions?|messages?|titles?|commits?|prs?)\b"
    r"|\bexamples?\b[^:]{0,60}\b(?:avoid|not\sto|don[’']?t|do\snot)\b"
    r"|\b(?:avoid|don[’']?t|do\snot|never)\b[^:]{0,60}\blike\s(?:this|that|the\sfollowing)\b"
    r"|\bnot\slike\s(?:this|that)\b|^(?:bad|wrong|❌)\W{0,3}:$", re.I)
_TABLE_SEP = re.compile(r"^[\s|:\-]+$")
_ADMONITION = re.compile(r"^\[!\w+\]\s*")
_UNDERLINE = re.compile(r"^ {0,3}(?:={3,}|-{3,}|~{3,}|\^{3,}|\*{3,}|\+{3,})\s*$")
# reStructuredText admonitions (".. note::") and MkDocs ones ("!!! warning"): the indented
# block under them is prose (often the rule itself), not a code block.
_PROSE_BLOCK = re.compile(
    r"^\s{0,3}(?:\.\.\s{1,3}(?:note|important|warning|tip|hint|attention|caution|danger|error"
    r"|admonition|seealso)::|(?:!!!|\?\?\?\+?)\s{1,3}[\w-]{1,30})(.{0,300})$", re.I)
# MyST (Sphinx Markdown) admonitions: ```{note} ... ``` or :::{warning} ... ::: fence prose, not
# code; the closing fence ends them.
_MYST_PROSE = re.compile(
    r"^\s{0,3}(`{3,}|:{3,})\{(?:note|important|warning|tip|hint|attention|caution|danger|error"
    r"|admonition|seealso)\}", re.I)
_MYST_OPTION = re.compile(r"^:[\w-]{1,30}:")
# Any other reStructuredText directive (".. code-block:: bash", ".. toctree::"): its indented
# body is code or options.
_RST_DIRECTIVE = re.compile(r"^\s{0,3}\.\.\s{1,3}[\w:-]{1,40}::")
# A border of a reStructuredText simple table: runs of "=" separated by spaces.
_RST_TABLE_BORDER = re.compile(r"^ {0,3}={2,}(?: +={2,})+\s*$")


@dataclass
class Segment:
    text: str  # plain text used for matching
    file: str
    kind: str  # sentence | item | row | heading | code | combined | lead_item | field
    section: str = ""  # nearest heading, lower case
    codes: list[str] = field(default_factory=list)
    head: str = ""
    indent: int = 0
    children: list[Segment] = field(default_factory=list)
    checkbox: bool = False  # a "- [ ] ..." task-list item (a checklist entry of a template)
    intro: str = ""  # a list item: the sentence just before its list ("Ways you can help:");
    # a table row: its table's header row ("If you change ... — you also need to ...")
    gloss: str = ""  # Chinese text read in English (analyzers.rules.gloss_zh): what is matched
    scoped: bool = False  # under a heading addressed to some contributors only (rules69)
    # in a file looked at for French / Spanish / other languages (analyzers.rules
    # .files_read_word_by_word): computed once per summary
    word_by_word: bool = False
    # the gloss restates an English text ("Touched `x/`? Numbers in the PR." as "If you touched
    # `x/`, numbers in the PR."): its condition is read from the gloss (rules78)
    restated: bool = False

    @property
    def matched(self) -> str:
        """The text the rules are matched on: the English gloss of a Chinese segment."""
        return self.gloss or self.text

    @property
    def lower(self) -> str:
        return self.text.lower()


# A contribution guide by its path: CONTRIBUTING.md, docs/contribution_guide.md,
# docs/contribute/..., a contributor guide; not a CONTRIBUTORS list of people.
_CONTRIBUTION_GUIDE = re.compile(r"contribut(?!ors?\b)")
_REVISION = re.compile(r"\s+@\s*[0-9a-f]{7,40}\s*$")


def repository_path(path: str) -> str:
    """A snapshot's path without the " @ <commit>" a SOURCE.txt line may append to it."""
    return _REVISION.sub("", path) if "@" in path else path


def file_kind(path: str) -> str:
    """What a contribution file is, from its repository path."""
    p = path.lower()
    name = PurePosixPath(p).name
    if name in {"agents.md", "claude.md", "gemini.md", "copilot-instructions.md", ".cursorrules"}:
        return "agents"
    if "pull_request_template" in p:
        return "pr_template"
    if "issue_template/config.y" in p:
        return "issue_config"
    if "issue_template" in p:
        return "issue_template"
    if "discussion_template" in p:
        return "discussion_template"
    if "/workflows/" in f"/{p}" and name.endswith((".yml", ".yaml")):
        return "workflow"
    if name == "codeowners":
        return "codeowners"
    if name.endswith(".json") and ("ruleset" in name or "branch" in name):
        return "ruleset"
    if _CONTRIBUTION_GUIDE.search(p):
        return "contributing"
    if "governance" in p:
        return "governance"
    if name.endswith((".yml", ".yaml")):
        return "yaml"
    return "doc"


def inline(text: str) -> tuple[str, list[str]]:
    """Markdown inline markup removed; returns (plain text, code spans).

    Code spans are cut out first so that `<id>` or `[x](y)` inside them stay as written."""
    codes: list[str] = []
    if "``" in text:  # reStructuredText literals (``pytest``) are code spans too
        text = text.replace("``", "`")
    parts = text.split("`") if "`" in text else [text]
    out: list[str] = []
    for i, part in enumerate(parts):
        if i % 2 == 1 and i < len(parts) - 1:  # inside a code span
            span = part.strip()
            if span and len(span) <= MAX_CODE_SPAN:
                codes.append(span)
            out.append(part)
            continue
        if "<!--" in part or "-->" in part:
            part = _HTML_COMMENT_MARK.sub(" ", part)
        if "[" in part:
            part = _LINK.sub(r"\1", part)
        if "<" in part:
            part = _TAG.sub(" ", part)
        out.append(part.replace("**", "").replace("__", " ").replace("\\", ""))
    return " ".join("".join(out).split()), codes


_JOINER = re.compile(r"(?<=\w)[./](?=\w)|(?<!\S)/(?=\w)|(?<=\w)/(?=[\s,.;:)]|$)")


def match_form(text: str) -> str:
    """Text as the matchers see it: dotted and slashed names split ("trl.experimental" ->
    "trl . experimental", "docs/" -> "docs /"), so a phrase matches a part of a module path or
    file name, and "add a page to docs/" names the docs. Patterns go through the same
    function."""
    return _JOINER.sub(lambda m: f" {m.group(0)} ", text)


# spaCy's tokenizer peels affixes off a whitespace-free chunk one at a time: quadratic on a
# hostile chunk (64 KiB of "[(" took 721 s in the rule extractor). No rule phrase is an
# 80-character word: long runs get a space every 80 characters, as in analyzers.nlp.
_LONG_RUN = re.compile(r"\S{80}")


def bounded_runs(text: str) -> str:
    if len(text) < 80 or max(map(len, text.split()), default=0) < 80:
        return text
    return _LONG_RUN.sub(r"\g<0> ", text)


# A sentence that ends with a folder ("... one of the configs in recipes/. Put the link ..."):
# the tokenizer keeps "recipes/." as one token, so the sentencizer does not cut there.
_PATH_END = re.compile(r"(?<=\w/\.)\s+(?=[A-Z])")


# Chinese and Japanese sentences end with a full-width mark and no space: spaCy's English
# sentencizer does not cut there, so a request and the permission after it were one segment.
_CJK_END = re.compile(r"(?<=[。！？])(?=\S)")
_WORDY = re.compile(r"[^\W_]")


def _split_sentences(text: str) -> list[str]:
    if not text.isascii() and ("。" in text or "！" in text or "？" in text):
        # a run of marks alone is no sentence (64 KiB of "。" made 64K segments)
        return [piece for part in _CJK_END.split(text) if _WORDY.search(part)
                for piece in _split_latin(part.strip()) if piece]
    return _split_latin(text)


def _split_latin(text: str) -> list[str]:
    if len(text) < 80 or ". " not in text:
        return [text]
    try:
        from analyzers.nlp import nlp  # the failure helper's shared pipeline
    except ImportError:  # pragma: no cover - fallback while nlp.py is absent
        nlp = _fallback_nlp
    pipe = nlp()
    # Only the sentencizer: the shared pipeline's other components are not needed here.
    bounded = bounded_runs(text)
    doc = pipe.get_pipe("sentencizer")(pipe.make_doc(bounded))
    if bounded is text:
        return _rejoin_parentheses([piece for s in doc.sents for piece in _PATH_END.split(s.text.strip()) if piece])
    # The sentences cut from the text as written (the spaces put into long runs left out).
    added = [m.end() + k for k, m in enumerate(_LONG_RUN.finditer(text))]  # in `bounded`
    spans = [(s.start_char, s.end_char) for s in doc.sents]
    out = []
    for start, end in spans:
        a = start - bisect.bisect_left(added, start)
        b = end - bisect.bisect_left(added, end)
        piece = text[a:b].strip()
        if piece:
            out.append(piece)
    return _rejoin_parentheses(out)


MAX_REJOINED = 600


def _rejoin_parentheses(pieces: list[str]) -> list[str]:
    """Sentences cut at a question inside a parenthesis joined again: "a technical review (does
    the code run and is it correct?) by a maintainer" is one sentence (rules83), as is one cut
    inside a parenthesis still open; a joined sentence stays short (an unclosed "(" does not
    make a file one sentence)."""
    out: list[str] = []
    for piece in pieces:
        if out and len(out[-1]) + len(piece) < MAX_REJOINED and (
                out[-1].count("(") > out[-1].count(")")
                or (piece[:1].islower() and out[-1].endswith(("?)", "!)")))):
            out[-1] = f"{out[-1]} {piece}"
        else:
            out.append(piece)
    return out


_FALLBACK: list[Any] = []


def _fallback_nlp() -> Any:  # pragma: no cover
    if not _FALLBACK:
        import spacy

        pipe = spacy.blank("en")
        pipe.add_pipe("sentencizer")
        _FALLBACK.append(pipe)
    return _FALLBACK[0]


MAX_QUESTION_WORDS = 12  # a question read with its answer (longer ones carry their own topic)


MAX_QUESTION_CHARS = 120  # the same for Chinese and Japanese, written without spaces


def _is_short_question(text: str) -> bool:
    return (text.endswith(("?", "？")) and len(text.split()) <= MAX_QUESTION_WORDS
            and len(text) <= MAX_QUESTION_CHARS)


# An answer that says no ("No.", "No, ...", "Not required.", "不需要。", "いいえ", "아니요"): the
# question it answers ("Do I need to sign a CLA?") states nothing of what it asks about.
# An answer that waives is one too ("You don't need to.", "It's optional."), and so is a "no" in
# the languages the extractor glosses ("Nein.", "Não.", "Non.", "Không.") (rules76).
_NO_ANSWER = re.compile(
    r"^(?:(?:no(?:pe)?|nein|não|nao|non|không)\s{0,3}(?:[.,!;:\u2014\u2013-]|$)|no need\b"
    r"|not (?:required|needed|necessary|mandatory|at all|really|anymore|any more)\b"
    r"|you (?:do not|don[’']?t|dont) (?:need|have) to\b|there(?:[’']s| is) no need\b"
    r"|(?:it|that)(?:[’']s| is) (?:optional|not (?:required|needed|necessary))\b|optional\b"
    r"|(?:不需要|不用|不必|无需|無需|不要求|いいえ|不要です|必要(?:は)?ありません|아니요|아니오|필요(?:하지)? ?않))",
    re.I)
# "..., feel free to open an issue, but it's not required": a last clause that says of all the
# sentence before it, through "it" / "that", that it is not asked; an FAQ answer ending so
# ("For a new plugin it's wise to open an issue first, but it's not a requirement") answers
# its question no (rules85)
IT_IS_NOT_ASKED = re.compile(
    r"(?:but|though|although)\s{1,3}(?:it|that|this|doing\s{1,3}so)(?:[’']s|\s{1,3}is|\s{1,3}isn[’']t)?"
    r"\s{1,3}(?:not\s{1,3}(?:required|a\s{1,3}requirement|necessary|mandatory|needed)"
    r"|(?:entirely\s{1,3}|completely\s{1,3})?optional)", re.I)
_ENDS_NOT_ASKED = re.compile(r"[,;]\s{0,3}(?:" + IT_IS_NOT_ASKED.pattern + r")[\W_]{0,5}$", re.I)
# The label of an FAQ's answer ("A: No.", "Answer: ...", "R: Não.", "答：不需要"): read after it.
_ANSWER_LABELS = r"(?:a|ans|answer|r|resp|resposta|respuesta|réponse|antwort|trả lời|đáp|答|回答|答え)\s{0,2}[:：]"
_ANSWER_LABEL = re.compile(r"^" + _ANSWER_LABELS + r"\s*", re.I)
# A question and its labelled answer on one line ("Q: Do I need a CLA? A: No."): two sentences.
_QA_SPLIT = re.compile(r"(?<=[?？])\s{1,3}(?=" + _ANSWER_LABELS + ")", re.I)
# A "no" answer that goes on with an exception ("No, but open an issue for a new trainer") keeps
# its sentence: the exception is a rule.
_ANSWER_EXCEPTION = re.compile(r"\b(?:but|unless|except|however|only|though|although)\b", re.I)


def _answers_no(answer: str) -> bool:
    return bool(_NO_ANSWER.match(_ANSWER_LABEL.sub("", answer.lstrip("*_ "), count=1).lstrip("*_ "))
                or _ENDS_NOT_ASKED.search(answer))


# An answer that limits what the question asks about to some cases ("Only if you contribute for
# your employer.", "Only for changes to `csrc/`"): the question alone overstates it; read with
# its answer, the condition is said (rules84).
_ONLY_IF_ANSWER = re.compile(r"^only\s(?:if|when|whenever|for|in\s(?:the\s)?cases?)\b", re.I)
# A paragraph that is only a labelled question ("**Q: Do I need to sign the CLA?**"): an FAQ's
# question, answered by the next paragraph as a question heading is (rules84).
_QUESTION_LABEL = re.compile(r"^(?:q|question|frage|pregunta|pergunta)\s{0,2}[:：]", re.I)


def _answers_only_if(answer: str) -> bool:
    return bool(_ONLY_IF_ANSWER.match(_ANSWER_LABEL.sub("", answer.lstrip("*_ "), count=1).lstrip("*_ ")))


def _asked_with_answer(question: str, answer: str) -> str:
    """A question and its answer read as one sentence; an "Only if ..." answer becomes the
    question's condition ("Do I need to sign the CLA if you contribute for your employer."), so
    the rule is said with it."""
    if not _answers_only_if(answer):
        return f"{question} {answer}"
    cases = _ANSWER_LABEL.sub("", answer.lstrip("*_ "), count=1).lstrip("*_ ")[len("only"):].strip()
    return f"{question.rstrip('?？ ')} {cases}"


def _denies_only(answer: str) -> bool:
    """True when a "no" answer's sentence holds no exception: it and the question state nothing
    (its reason, "No, the changelog is generated at release", asks nothing either) (rules76)."""
    return _answers_no(answer) and not _ANSWER_EXCEPTION.search(answer[:2000])


MAX_LABEL_ITEM_WORDS = 5


def _is_label(item: Segment) -> bool:
    """An item that only names what the items under it are about ("Where things go", "Review:"):
    a few words, no code, no sentence."""
    text = item.text
    return (0 < len(text) <= 60 and len(text.split()) <= MAX_LABEL_ITEM_WORDS and not item.codes
            and not item.checkbox and not text.endswith((".", "!", "?", ";", ",")))


_CONTINUED = re.compile(r"[a-z]")  # a line that goes on with the sentence before it
_ENDS_SENTENCE = re.compile(r"[.:!?;)>|*]$")


def _next_filled(lines: list[str], start: int, most: int = 2) -> int:
    """The index of the first non-blank line from `start`, skipping at most `most` blanks."""
    while start < len(lines) and not lines[start].strip() and most > 0:
        start += 1
        most -= 1
    return start


def join_interrupted_sentences(text: str) -> str:
    """"..., run" / a fenced command of one line / "on a GPU and paste its output ...": one
    sentence with a code block in its middle, read as one sentence with the command as a code
    span (the block is kept after it, so commands are still read as code) (rules75). One
    pass over the lines."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        # prose that stops mid-sentence, then ``` / one line / ```, then a lower-case line
        if line.strip() and not _ENDS_SENTENCE.search(line.rstrip()) and not _FENCE.match(line) \
                and not line.lstrip().startswith(("#", "-", "*", "|", ">")):
            opened = _next_filled(lines, i + 1)
            m = _FENCE.match(lines[opened]) if opened < len(lines) else None
            closing = opened + 2
            if m and closing < len(lines) and lines[opened + 1].strip() \
                    and lines[closing].strip().startswith(m.group(1)[:3]):
                after = _next_filled(lines, closing + 1)
                if after < len(lines) and _CONTINUED.match(lines[after].lstrip()):
                    command = lines[opened + 1].strip().replace("`", "")
                    out.append(f"{line.rstrip()} `{command}` {lines[after].strip()}")
                    rest = after + 1  # the paragraph goes on; the block follows it, as code
                    while rest < len(lines) and lines[rest].strip():
                        out.append(lines[rest])
                        rest += 1
                    out += ["", *lines[opened:closing + 1]]
                    i = rest
                    continue
        out.append(line)
        i += 1
    return "\n".join(out)


def markdown_segments(text: str, file: str, section: str = "") -> list[Segment]:
    """Segments of a Markdown text (or of a plain text: it is Markdown without markup)."""
    text = join_interrupted_sentences((text or "")[:MAX_CHARS])
    segments: list[Segment] = []
    para: list[str] = []
    fence: str | None = None
    prose_fence: str | None = None  # the fence of an open MyST admonition
    items: list[Segment] = []  # open list items, by indent (for nesting)
    lead: Segment | None = None  # a paragraph ending in ":" that the next list belongs to

    intro = ""  # the last sentence before the current list (its items' `intro`)

    asked = ""  # a short question heading not yet answered (read with its first sentence)
    asked_heading: Segment | None = None  # its segment
    answered_no: set[int] = set()  # ids of question segments whose answer is "No."
    counter = False  # the last paragraph introduced a counter-example: its quote / code is skipped
    counter_fence = False  # inside a fenced block that is such an example

    def flush() -> None:
        nonlocal lead, block, intro, asked, asked_heading, counter
        if not para:
            return
        if para[-1].endswith("::") and not block:
            block = "code"  # reStructuredText: "... as follows::" introduces a literal block
        joined = " ".join(para)
        plain, codes = inline(joined)
        para.clear()
        if not plain:
            return
        # A paragraph led by a short bold label ("**Tests.** Anything that ...") is a small
        # section of its own: the label counts as a heading word for its sentences.
        where = section
        bm = _BOLD_LEAD.match(joined)
        if bm and len(bm.group(1).split()) <= MAX_LABEL_WORDS:
            where = f"{section} / {inline(bm.group(1))[0].lower().rstrip(':.')}".strip(" /")
        sentences = [piece for sentence in _split_sentences(plain) for piece in _QA_SPLIT.split(sentence)]
        last: Segment | None = None
        for sentence in sentences:
            last = Segment(sentence, file, "sentence", where, _codes_in(sentence, codes))
            segments.append(last)
        # A short question answered by the next sentence ("Generated by an AI tool? Say so in
        # the PR body.") is also read as one: the answer's request is about the question's topic.
        # An answer that says no ("Do I need a CLA? No.") negates the question: neither the
        # question nor the pair states a rule.
        asking = segments[len(segments) - len(sentences):]
        for k, (question, answer) in enumerate(zip(sentences, sentences[1:], strict=False)):
            if not _is_short_question(question):
                continue
            if _answers_no(answer):
                answered_no.add(id(asking[k]))
                if _denies_only(answer):
                    answered_no.add(id(asking[k + 1]))
                continue
            if _answers_only_if(answer):
                answered_no.add(id(asking[k]))  # said with the answer's condition, below
            both = _asked_with_answer(question, answer)
            segments.append(Segment(both, file, "sentence", where, _codes_in(both, codes)))
        # Likewise a question heading and the first sentence under it (an FAQ: "### Where does
        # a new wrapper go?" / "Into kea/wrappers/, one module per wrapper.").
        if asked and sentences:
            if _answers_no(sentences[0]):
                if asked_heading is not None:
                    answered_no.add(id(asked_heading))
                if _denies_only(sentences[0]):
                    answered_no.add(id(asking[0]))
            else:
                if _answers_only_if(sentences[0]) and asked_heading is not None:
                    answered_no.add(id(asked_heading))  # said with the answer's condition
                both = _asked_with_answer(asked, sentences[0])
                segments.append(Segment(both, file, "sentence", where, _codes_in(both, codes)))
        asked = ""
        asked_heading = None
        if len(sentences) == 1 and last is not None and _is_short_question(sentences[0]) \
                and _QUESTION_LABEL.match(sentences[0].lstrip("*_ ")):
            asked, asked_heading = sentences[0], last
        lead = last if last is not None and last.text.endswith(":") else None
        counter = lead is not None and _COUNTER_EXAMPLE.search(lead.text[-300:]) is not None
        intro = last.text if last is not None else ""

    def heading(text: str) -> None:
        """A heading, ATX or setext: the section it opens, with no list, lead or question open."""
        nonlocal section, lead, intro, asked, asked_heading
        plain, codes = inline(text.strip("# "))
        section = plain.lower()
        segments.append(Segment(plain, file, "heading", section, codes))
        items.clear()
        lead = None
        intro = ""
        asked = plain if _is_short_question(plain) else ""
        asked_heading = segments[-1] if asked else None

    block = ""  # "prose" / "code": inside the indented body of an admonition / directive
    table_columns: list[int] | None = None  # column starts inside an rST simple table
    in_table = False  # the line before was a Markdown table row
    table_header = ""  # the header row of the Markdown table being read
    header_cells: list[tuple[str, list[str]]] = []  # its cells
    dont_columns: set[int] = set()  # its "❌ Don't" columns: what is not to be done
    for raw in text.split("\n"):
        line = raw.rstrip()
        if fence is None and _RST_TABLE_BORDER.match(line):
            # A border opens (or continues) the table; the blank line after it ends the table.
            flush()
            table_columns = [m.start() for m in re.finditer(r"=+", line)]
            continue
        if table_columns is not None:
            if not line.strip():
                table_columns = None
                continue
            bounds = table_columns[1:] + [len(line)]
            cells = [line[start:end].strip() for start, end in zip(table_columns, bounds, strict=True)]
            plains = [inline(c) for c in cells if c]
            row_text = " — ".join(p for p, _ in plains if p)
            head = plains[0][0] if plains else ""
            segments.append(Segment(row_text, file, "row", section,
                                    [c for _, cs in plains for c in cs], head=head))
            continue
        if fence is not None:
            if line.strip().startswith(fence):
                fence, counter_fence = None, False
            elif line.strip() and not counter_fence:
                code = line.strip()
                segments.append(Segment(code, file, "code", section, [code[:MAX_CODE_SPAN]]))
            continue
        if len(para) == 1 and _UNDERLINE.match(line):
            # A setext (Markdown) or reStructuredText heading: the one line above, underlined.
            heading(para.pop())
            continue
        if prose_fence is not None and line.strip() == prose_fence:
            flush()
            prose_fence = None
            continue
        mp = _MYST_PROSE.match(line) if prose_fence is None else None
        if mp:
            flush()
            items.clear()
            prose_fence = mp.group(1)
            continue
        if prose_fence is not None and _MYST_OPTION.match(line.strip()):
            continue  # ":class: tip" and the like: options of the admonition
        m = _FENCE.match(line)
        if m:
            flush()
            fence = m.group(1)[:3]
            counter_fence, counter = counter, False
            continue
        stripped = line.strip()
        if not stripped:
            flush()
            in_table = False
            continue
        if counter and stripped.startswith(">"):
            continue  # a quoted counter-example
        counter = False
        if block and raw[:1] not in (" ", "\t"):
            block = ""  # the directive's indented body has ended
        pm = _PROSE_BLOCK.match(line)
        if pm or _RST_DIRECTIVE.match(line):
            flush()
            items.clear()
            block = "prose" if pm else "code"
            rest = pm.group(1).strip() if pm else ""
            if rest and not rest.startswith('"'):  # ".. note:: text" (a quoted one is a title)
                para.append(rest)
            continue
        if block == "code":
            segments.append(Segment(stripped, file, "code", section, [stripped[:MAX_CODE_SPAN]]))
            continue
        if not para and not items and not block and raw.startswith(("    ", "\t")):
            # An indented block outside a list and after a blank line: code (Markdown, and the
            # literal blocks of reStructuredText).
            segments.append(Segment(stripped, file, "code", section, [stripped[:MAX_CODE_SPAN]]))
            continue
        h = _HEADING.match(line)
        if h:
            flush()
            heading(h.group(2))
            continue
        while stripped.startswith(">"):
            stripped = stripped[1:].strip()
        stripped = _ADMONITION.sub("", stripped)
        if not stripped:
            continue
        if stripped.startswith("|"):
            flush()
            if _TABLE_SEP.match(stripped):
                continue
            cells = [c.strip() for c in stripped.strip("|").split("|")]
            if not in_table:
                dont_columns = {k for k, c in enumerate(cells[:MAX_YES_CELLS + 1])
                                if _DONT_HEADER.match(c)}
            if dont_columns:
                # a cell that forbids a thing "without" a step asks that step before it ("Add a
                # dependency without asking in an issue first"): read as the sentence it means,
                # "Don't ..."; the column's other cells stay unread (rules82)
                for k in dont_columns:
                    if in_table and k < len(cells) and _FORBIDDEN_WITHOUT.search(cells[k]):
                        forbidden, forbidden_codes = inline(cells[k])
                        segments.append(Segment(f"Don't {forbidden[:1].lower()}{forbidden[1:]}", file,
                                                "sentence", section, forbidden_codes))
                cells = [c for k, c in enumerate(cells) if k not in dont_columns]
            plains = [inline(c) for c in cells]
            row_text = " — ".join(p for p, _ in plains if p)
            row_codes = [c for _, cs in plains for c in cs]
            head = plains[0][0] if plains else ""
            if not in_table:
                table_header = row_text  # the first row heads the table
                header_cells = plains
            segments.append(Segment(row_text, file, "row", section, row_codes, head=head,
                                    intro="" if row_text == table_header else table_header))
            if row_text != table_header:
                segments += _yes_cells(plains, header_cells, file, section)
            in_table = True
            continue
        in_table = False
        if stripped[:1] in "☐☑☒□✅✔":
            line = _BALLOT.sub(r"\1- [ ] ", line, count=1)
        im = _ITEM.match(line)
        if im and not stripped.startswith("**") and not _TABLE_SEP.match(stripped):
            flush()
            indent = len(im.group(1).expandtabs(4))
            body = im.group(3)
            bm = _BOLD_LEAD.match(body)
            head = inline(bm.group(1))[0].rstrip(":") if bm else ""
            plain, codes = inline(body)
            seg = Segment(plain, file, "item", section, codes, head=head, indent=indent,
                          checkbox=bool(im.group(2)), intro=intro)
            while items and items[-1].indent >= indent:
                items.pop()
            if items and _is_label(items[-1]):
                # a nested list under a short label item ("3. Where things go" / "1. New
                # algorithms: `pkg/algos/`"): the label is a heading word of its items (rules76)
                seg.section = f"{items[-1].section} / {items[-1].text.lower().rstrip(':')}".strip(" /")
            if items:
                items[-1].children.append(seg)
            elif lead is not None:
                lead.children.append(seg)
            items.append(seg)
            segments.append(seg)
            continue
        if items and raw[:1] in (" ", "\t") and not para:
            # continuation line of the last list item
            plain, codes = inline(stripped)
            items[-1].text = f"{items[-1].text} {plain}".strip()
            items[-1].codes.extend(codes)
            continue
        if items and not para:
            items.clear()
            lead = None
        para.append(stripped)
    flush()
    if answered_no:
        segments = [seg for seg in segments if id(seg) not in answered_no]
    combined = _combined(segments)
    return [part for seg in segments for part in _split_long(seg)] + combined


# The header of a column of things not to do ("❌ Don't", "Avoid", "Never"): the extractor has
# no prohibition form, so its cells are not read (their words would state the opposite
# rule: "Force-push after review has started" is no review rule) (rules73).
_DONT_HEADER = re.compile(r"^[^\w]{0,8}(?:don[’']?t|do not|avoid|never|not ok|bad|wrong)\b[^\w]{0,8}$", re.I)


# A forbidden thing's missing step ("... without asking in an issue first").
_FORBIDDEN_WITHOUT = re.compile(r"\swithout\s(?:first\s)?(?:asking|discussing|opening|an?\s)", re.I)


# A cell that answers its column with yes ("| Bug fix | ... | yes, under Fixed |").
_YES_CELL = re.compile(r"^(?:yes|required|always|✅|✔|☑)\b[\s,.:;—-]*", re.I)
MAX_YES_CELLS = 8


def _yes_cells(cells: list[tuple[str, list[str]]], header: list[tuple[str, list[str]]],
               file: str, section: str) -> list[Segment]:
    """A table of what each kind of change needs ("Kind of change | Tests | Changelog entry")
    answers each column in its cells: a cell that says yes asks for its column's thing, for the
    row's kind of change ("If the change is new model, Changelog entry is required (under Added)")."""
    out = []
    for k, (cell, codes) in enumerate(cells[1:MAX_YES_CELLS + 1], start=1):
        m = _YES_CELL.match(cell)
        if not m or k >= len(header) or not header[k][0] or not cells[0][0]:
            continue
        rest = cell[m.end():].strip()
        # said as a condition, so the rule keeps it ("if the change is a new model")
        text = f"If the change is {cells[0][0].lower()}, {header[k][0]} is required" + (
            f" ({rest})" if rest else "")
        out.append(Segment(text, file, "sentence", section, header[k][1] + codes, head=cells[0][0]))
    return out


def _split_long(seg: Segment) -> list[Segment]:
    """A list item holding several sentences is matched sentence by sentence (a rule needs
    its phrases close together); the first sentence keeps the item's head."""
    if seg.kind != "item" or len(seg.text) < 160:
        return [seg]
    sentences = _split_sentences(seg.text)
    if len(sentences) < 2:
        return [seg]
    out = []
    for i, sentence in enumerate(sentences):
        out.append(Segment(sentence, seg.file, "item" if i == 0 else "sentence", seg.section,
                           _codes_in(sentence, seg.codes), head=seg.head if i == 0 else ""))
    return out


MAX_CODES_SCANNED = 256  # a paragraph's code spans looked for in each of its sentences


def _codes_in(sentence: str, codes: list[str]) -> list[str]:
    """The paragraph's code spans found in `sentence`, each once: a hostile paragraph of
    thousands of sentences, each with the same span, gave every sentence all of them
    (quadratic work in the rule filling)."""
    return [c for c in dict.fromkeys(codes[:MAX_CODES_SCANNED]) if c in sentence]


def _combined(segments: list[Segment]) -> list[Segment]:
    out: list[Segment] = []
    for seg in segments:
        if not seg.children:
            continue
        kids = seg.children[:MAX_COMBINED_ITEMS]
        # The lead is the sentence that introduces the list (the last one of a long item).
        lead = _split_sentences(seg.text)[-1] if len(seg.text) >= 160 else seg.text
        text = lead.rstrip(":.") + ": " + "; ".join(k.text.rstrip(".;") for k in kids)
        codes = _codes_in(lead, seg.codes) + [c for k in kids for c in k.codes]
        # a checklist entry with its sub-boxes ("- [ ] **Results** (if ...)" / "  - [ ] curves
        # attached") is a checklist entry too
        out.append(Segment(text, seg.file, "combined", seg.section, codes, head=seg.head,
                           intro=lead, checkbox=seg.checkbox and all(k.checkbox for k in kids)))
        if not lead.endswith(":"):
            continue
        # Each item also read as the lead's sentence ("The PR needs to include: ...; a
        # tutorial page" -> "The PR needs to include a tutorial page"): the lead's verb
        # then sits next to the item's noun, as in a sentence.
        stem = lead.rstrip(":").rstrip()
        for kid in kids:
            if len(kid.text) <= MAX_LEAD_ITEM:
                out.append(Segment(f"{stem} {kid.text}", seg.file, "lead_item", seg.section,
                                   _codes_in(lead, seg.codes) + kid.codes, head=kid.head,
                                   intro=lead))
    return out


# --- YAML forms and configs ------------------------------------------------------------------


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when present: ~10x faster


@lru_cache(maxsize=64)  # a form is read for its sentences and for its structure: parse once
def load_yaml(text: str) -> Any:
    """Safe YAML (no tags, no objects); None when it does not parse. Callers must not
    mutate the result (it is cached)."""
    try:
        return yaml.load(text[:MAX_CHARS], Loader=_LOADER)  # noqa: S506 - a safe loader
    except (yaml.YAMLError, RecursionError):  # deeply nested flow collections overflow PyYAML
        return None


def form_segments(data: Any, file: str) -> list[Segment]:
    """Segments of an issue / discussion form: descriptions, values and option labels."""
    segments: list[Segment] = []
    if not isinstance(data, dict):
        return segments
    for key in ("name", "description", "title"):
        if isinstance(data.get(key), str):
            segments += markdown_segments(data[key], file)
    for element in data.get("body") or []:
        if not isinstance(element, dict):
            continue
        attrs = element.get("attributes") or {}
        if not isinstance(attrs, dict):
            continue
        label = str(attrs.get("label") or "")
        section = inline(label)[0].lower()
        for key in ("description", "value"):
            if isinstance(attrs.get(key), str):
                segments += markdown_segments(attrs[key], file, section)
        for option in attrs.get("options") or []:
            text = option.get("label") if isinstance(option, dict) else option
            if isinstance(text, str):
                plain, codes = inline(text)
                # a box the form will not submit unchecked (`required: true`) is a checklist
                # entry the author commits to, as a PR template's box is
                required = isinstance(option, dict) and option.get("required") is True
                segments.append(Segment(plain, file, "item", section, codes, checkbox=required))
    return segments


def front_matter(text: str) -> tuple[dict[str, Any], str]:
    """YAML front matter of a Markdown issue template, and the rest of the text."""
    if not text.startswith("---"):
        return {}, text
    end = text.find("\n---", 3)
    if end < 0:
        return {}, text
    data = load_yaml(text[3:end])
    rest = text[end + 4 :]
    return (data if isinstance(data, dict) else {}), rest
