"""The failure comment for every framework x failure kind the catalog covers, read as GitHub
renders it (review speak72): with one kind and with each possible runner-up kind, in English
and Chinese. Invariants:

- every code span is a setting of this framework's own catalog options (`set_by`), never
  another framework's, and holds no prose: no parenthesised remark, no leading or trailing
  sentence words (a reader copies a code span as it is);
- every link is a route the tracker serves (method, failure kind), for an id the catalog has;
- at most three methods of each list are shown: when there are more, the comment says so
  and names `/rltracker methods <kind>`, which lists them all;
- the headline says how unsure it is, and with a runner-up the details say how to make the
  runner-up the kind; the footer says how to correct the kind, and the details list
  every kind's key that `/rltracker kind <failure>` takes (the site shows titles only);
- Markdown: one <details> opened and closed, no table rows of unequal width;
- the body is under GitHub's 65,536-character comment limit, with the longest case measured.

No database: the comment is built from the catalog and the analysis only."""

from __future__ import annotations

import re

import pytest
from markdown_it import MarkdownIt

from analyzers.catalog import load_catalog
from bot.speaking.render import compose_failure_comment, setting_md, visible_lines

PUBLIC = "https://tracker.example"
CAT = load_catalog()
FRAMEWORKS = list(CAT.frameworks)
KINDS = list(CAT.failures)
MD = MarkdownIt("commonmark")
GITHUB_BODY_LIMIT = 65_536
# Routes of bot/site/pages.py the comment may link, with the ids the catalog has.
ROUTES = (
    (re.compile(re.escape(PUBLIC) + r"/methods/([\w-]+)"), set(CAT.methods)),
    (re.compile(re.escape(PUBLIC) + r"/failures/(\w+)"), set(CAT.failures)),
)
# A plain word of a sentence (no setting holds it alone): letters, a hyphen, a closing comma.
PLAIN_WORD = re.compile(r"[A-Za-z][A-Za-z-]*[,:]?")
LAUNCHERS = {"python", "python3", "torchrun", "accelerate", "deepspeed"}  # start a command line


def _inline(body: str) -> list:
    return [t for tok in MD.parse(body) for t in tok.children or []]


def _prose_in(code: str) -> str | None:
    """What in a code span is prose rather than a setting, or None."""
    if re.search(r"\s\([^`]*\)$", code):
        return "a parenthesised remark"
    words = code.split(" ")
    if (len(words) > 1 and PLAIN_WORD.fullmatch(words[0]) and not words[0].endswith(":")
            and words[0] not in LAUNCHERS):
        return "a leading sentence word"
    tail = 0
    for word in reversed(words[1:]):
        if not PLAIN_WORD.fullmatch(word):
            break
        tail += 1
    if tail >= 2:
        return "trailing sentence words"
    return None


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_setting_in_code_is_a_setting_only(framework: str) -> None:
    """Each option's `set_by` rendered: the code spans are settings, the prose around them text
    (verl's Clip-Cov showed `loss_mode=clip_cov (clip_cov_ratio 0.0002, ...)` as one span,
    AReaL's Dr. GRPO `example config sets actor.reward_norm.mean_level: group, ...`, TRL's
    staleness bound `AsyncGRPOConfig(max_staleness=4): samples lagging ... are dropped`), and
    no character of the catalog's setting is lost or added."""
    bad = []
    for method in CAT.methods.values():
        for option in method.options.get(framework, []):
            if option.is_builtin:
                continue
            tokens = _inline(setting_md(option.set_by))
            for code in (t.content for t in tokens if t.type == "code_inline"):
                why = _prose_in(code)
                if why:
                    bad.append((method.id, why, code))
            text = "".join(t.content for t in tokens if t.type in ("text", "code_inline"))
            assert (" ".join(text.split()).replace("YAML ", "")
                    == " ".join(option.set_by.split()).replace("YAML ", "")), (method.id, text)
    assert not bad, "\n".join(map(str, bad))


def _analyses(kind: str) -> list[dict]:
    """The kind alone, confident; and with each other kind as the runner-up."""
    out = [{"failure": {"is_failure_report": True, "category": kind, "categories": [kind],
                        "confidence": 0.95}}]
    out += [{"failure": {"is_failure_report": True, "category": kind, "categories": [kind, other],
                         "confidence": 0.6}} for other in KINDS if other != kind]
    return out


def _catalog_lists(framework: str, kind: str) -> tuple[list[str], list[str]]:
    """Methods for `kind` this framework switches on (not by default), and those only other
    frameworks have: what a comment with no config pasted could list."""
    here = [m.id for m in CAT.methods_for_failure(kind)
            if any(not o.is_builtin for o in m.options.get(framework, []))
            and not all(o.on_by_default for o in m.options[framework] if not o.is_builtin)]
    elsewhere = [m.id for m in CAT.methods_for_failure(kind)
                 if m.options and not m.options.get(framework)]
    return here, elsewhere


def _own_settings(framework: str) -> str:
    return " ".join(" ".join(o.set_by.split()) for m in CAT.methods.values()
                    for o in m.options.get(framework, []))


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_every_failure_comment_keeps_its_invariants(framework: str, lang: str) -> None:
    own = _own_settings(framework)
    longest = rendered = 0
    for kind in KINDS:
        for analysis in _analyses(kind):
            c = compose_failure_comment(analysis, framework, setup=None, lang=lang, public_url=PUBLIC)
            if c is None:
                continue
            rendered += 1
            body = c.body
            where = (framework, kind, analysis["failure"]["categories"], lang)
            longest = max(longest, len(body))
            assert len(body) < GITHUB_BODY_LIMIT and len(visible_lines(body)) <= 8, where
            tokens = _inline(body)
            # links: tracker routes for ids the catalog has
            for href in (t.attrGet("href") for t in tokens if t.type == "link_open"):
                assert any((m := r.fullmatch(href)) and m.group(1) in ids for r, ids in ROUTES), \
                    (where, href)
            # code spans in the visible bullets: this framework's own settings, no prose
            visible = body.split("<details>")[0]
            for code in (t.content for t in _inline(visible) if t.type == "code_inline"):
                if code == f"/rltracker methods {kind}":
                    continue  # the command that lists the methods a cut list leaves out
                assert code in own, (where, code)
                assert _prose_in(code) is None, (where, code)
            # uncertainty said, and how to correct it
            assert "/rltracker kind" in body and "/rltracker not-a-failure" in body, where
            # the footer's `<failure>`: every key the command takes is in the details, as code
            details = body.split("<details>", 1)[1].split("</details>", 1)[0]
            assert all(f"`{key}`" in details for key in KINDS), (where, "the kinds' keys")
            # a list cut short says so, and how to see the rest (it read as the whole list)
            here, elsewhere = _catalog_lists(framework, kind)
            if len(here) > len(c.suggested) or len(elsewhere) > len(c.elsewhere):
                assert f"`/rltracker methods {kind}`" in body.split("<details>")[0], where
            else:
                assert "/rltracker methods" not in body, where
            if c.details["runner_up"]:
                assert c.details["runner_up"] in body, where
            # Markdown: the details block closes, tables (none expected) are well formed
            assert body.count("<details>") == body.count("</details>") == 1, where
            rows = [line for line in body.splitlines() if line.startswith("|")]
            assert len({line.count("|") for line in rows}) <= 1, where
    assert rendered
    print(f"{framework} {lang}: {rendered} comments, longest {longest} characters")
