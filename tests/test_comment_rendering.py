"""Every comment variant renders as Markdown that keeps its code spans and links, shows at most
eight lines outside <details>, and carries no text from the issue."""

from __future__ import annotations

import re

import pytest
from markdown_it import MarkdownIt

from analyzers.catalog import load_catalog
from bot.speaking.render import (
    FAILURE_MARKER,
    code_span,
    compose_failure_comment,
    md_text,
    methods_reply,
    rule_summary_reply,
    rules_reply,
    setting_md,
    visible_lines,
    withdrawn_comment,
)

PUBLIC = "https://tracker.example"
MD = MarkdownIt("commonmark")
CAT = load_catalog()
FRAMEWORKS = sorted(CAT.frameworks)
KINDS = [k for k in CAT.failures if CAT.methods_for_failure(k)]


def inline_tokens(text: str) -> list:
    out = []
    for tok in MD.parse(text):
        if tok.children:
            out.extend(tok.children)
    return out


def check_markdown(body: str) -> None:
    tokens = inline_tokens(body)
    codes = [t.content for t in tokens if t.type == "code_inline"]
    links = [t.attrGet("href") for t in tokens if t.type == "link_open"]
    # Every code span in the source survives as a code span; every link target is ours.
    assert len(codes) == len(re.findall(r"(?<!`)`[^`\n]+`(?!`)", body)) or codes
    for href in links:
        assert href.startswith(PUBLIC), href
    assert len(visible_lines(body)) <= 8, visible_lines(body)
    # nothing that pings people or cross-references other repositories outside code spans
    plain = " ".join(t.content for t in tokens if t.type == "text")
    assert not re.search(r"(^|\s)@[A-Za-z0-9]", plain)
    assert not re.search(r"\w/\w[\w.-]*#\d", plain)


def failure_analysis(kind: str) -> dict:
    return {"failure": {"is_failure_report": True, "category": kind, "categories": [kind],
                        "confidence": 0.88, "evidence": ["entropy keeps falling", "<script>", "x" * 80]}}


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("kind", KINDS)
def test_failure_comment_variants(kind: str, framework: str, lang: str) -> None:
    c = compose_failure_comment(failure_analysis(kind), framework, setup=None, lang=lang, public_url=PUBLIC)
    if c is None:
        return  # nothing this framework has: no comment (the action records why)
    body = c.body
    assert body.startswith(FAILURE_MARKER)
    check_markdown(body)
    codes = [t.content for t in inline_tokens(body) if t.type == "code_inline"]
    # each suggested method's exact setting is a code span, taken from the catalog
    for mid in c.suggested:
        options = [o for o in CAT.methods[mid].options[framework] if not o.is_builtin]
        assert any(code and code in " ".join(o.set_by.split()) for o in options for code in codes)
        assert f"{PUBLIC}/methods/{mid}" in body
    # evidence spans (the reporter's words) are never shown, only fixed cue terms
    assert "<script>" not in body and "x" * 80 not in body and "falling" not in body
    assert "`entropy`" in body
    if lang == "zh":
        assert "置信度" in body and CAT.failures[kind].title_zh in body
    else:
        assert "confidence 0.88" in body


def test_no_issue_text_in_the_comment() -> None:
    secret = "please-do-not-echo-4471"
    analysis = failure_analysis("entropy_collapse")
    analysis["failure"]["evidence"] = [f"{secret} and more words in a long sentence from the body " * 2]
    c = compose_failure_comment(analysis, "verl", setup={"options": {"entropy-bonus": {
        "option": "entropy_coeff", "key": "actor_rollout_ref.actor.entropy_coeff",
        "value": f"$({secret})", "enabled": True, "source": "hydra"}}}, lang="en", public_url=PUBLIC)
    assert c is not None and secret not in c.body
    assert "Entropy bonus" in c.body.split("Already set")[1]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_reply_variants(lang: str) -> None:
    for kind in list(CAT.failures) + ["nonsense"]:
        check_markdown(methods_reply(kind, "verl", lang, PUBLIC))
    body = rule_summary_reply(
        rules_markdown="- Tests are required for new features.\n- Sign off commits (DCO).",
        framework_id="verl",
        earlier=[{"repo": "huggingface/trl", "number": 12, "framework": "trl", "state": "merged", "method": "gspo"},
                 {"repo": "alibaba/ROLL", "number": 3, "framework": "roll", "state": "declined", "method": None}],
        lang=lang, public_url=PUBLIC,
    )
    tokens = inline_tokens(body)
    assert "huggingface/trl#12" in [t.content for t in tokens if t.type == "code_inline"]
    check_markdown(body)
    check_markdown(rules_reply(None, "trl", lang, PUBLIC))
    check_markdown(withdrawn_comment(lang, PUBLIC))


def test_markdown_helpers() -> None:
    assert code_span("a`b") == "``a`b``"
    assert code_span("`x`") == "`` `x` ``"
    assert md_text("see @someone and owner/repo#12 and #5 <b>") == (
        "see `@someone` and `owner/repo#12` and `#5` \\<b\\>"
    )
    assert setting_md("a.b=1 (with c=2)") == "`a.b=1` (with c=2)"
    assert setting_md("x_y=<cap>") == "`x_y=<cap>`"


def test_rule_summary_with_each_frameworks_real_rules(shared_dir) -> None:
    from analyzers.rules import format_rules_markdown, summarize_rules
    from bot.speaking.rule_summary import PROPOSAL_TOPICS

    for fid in FRAMEWORKS:
        folder = shared_dir / "data" / "frameworks" / fid
        files = {p.name.replace("__", "/"): p.read_text() for p in folder.iterdir()
                 if p.is_file() and p.name != "SOURCE.txt"}
        summary = summarize_rules(files, framework=fid)
        for lang in ("en", "zh"):
            rules = format_rules_markdown(summary, lang=lang, topics=list(PROPOSAL_TOPICS),
                                          max_per_topic=2, heading=False)
            earlier = [{"repo": "huggingface/trl", "number": n, "framework": "trl", "state": "lapsed",
                        "method": "gspo"} for n in range(7)]
            body = rule_summary_reply(rules_markdown=rules, framework_id=fid, earlier=earlier,
                                      lang=lang, public_url=PUBLIC)
            check_markdown(body)
            assert "<details>" in body and rules.strip().splitlines()[0] in body
