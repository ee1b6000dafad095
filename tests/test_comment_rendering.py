"""Every comment variant renders as Markdown that keeps its code spans and links, shows at most
eight lines outside <details>, and carries no text from the issue."""

from __future__ import annotations

import dataclasses
import re

import pytest
from markdown_it import MarkdownIt

from analyzers.catalog import load_catalog
from bot.speaking.render import (
    FAILURE_MARKER,
    code_span,
    compose_failure_comment,
    confidence_words,
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
        assert "失败报告的置信度 0.88" in body and CAT.failures[kind].title_zh in body
    else:
        assert "confidence 0.88 that this reports a failing run" in body
    # one kind listed: the word follows the confidence, and no other kind is named
    assert c.details["runner_up"] is None
    assert body.count(f"{PUBLIC}/failures/") == 1
    assert headline(body).startswith("**可能是[" if lang == "zh" else "**Likely [")


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


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("framework", [*FRAMEWORKS, None])
def test_the_methods_reply_names_every_method_for_the_kind(framework: str | None, lang: str) -> None:
    """`/rltracker methods <kind>` is the list the failure comment sends readers to "to list
    them all": every catalog method for the kind that some framework has is named, here or
    elsewhere, in a repository of the seven or not (review comment80: without a framework the
    reply cut the list at six, dropping VESPO for rollout_training_mismatch without a word)."""
    for kind in CAT.failures:
        body = methods_reply(kind, framework, lang, PUBLIC)
        named = set(re.findall(re.escape(PUBLIC) + r"/methods/([\w-]+)\)", body))
        want = {m.id for m in CAT.methods_for_failure(kind) if m.options}
        assert named == want, (framework, kind, sorted(want - named))


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


# ---------------------------------------------------------------- more than one kind listed
def two_kind_analysis(categories: list, confidence: float = 0.95) -> dict:
    return {"failure": {"is_failure_report": True, "category": categories[0], "categories": categories,
                        "confidence": confidence, "evidence": ["entropy keeps falling"]}}


def headline(body: str) -> str:
    return visible_lines(body)[0]


def why(body: str) -> str:
    return body.split("<details>")[1].split("</details>")[0]


def method_links(body: str) -> set[str]:
    return set(re.findall(re.escape(PUBLIC) + r"/methods/([\w-]+)", body))


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_runner_up_kind_named_without_its_methods(lang: str) -> None:
    """entropy_collapse then kl_growth: both kinds linked in the headline; the methods are the
    leading kind's (the same set as with one kind listed), and none is only the second's."""
    both = compose_failure_comment(two_kind_analysis(["entropy_collapse", "kl_growth"]), "verl",
                                   setup=None, lang=lang, public_url=PUBLIC)
    alone = compose_failure_comment(two_kind_analysis(["entropy_collapse"]), "verl",
                                    setup=None, lang=lang, public_url=PUBLIC)
    assert both is not None and alone is not None
    check_markdown(both.body)
    head = headline(both.body)
    links = [t.attrGet("href") for t in inline_tokens(head) if t.type == "link_open"]
    assert links == [f"{PUBLIC}/failures/entropy_collapse", f"{PUBLIC}/failures/kl_growth"]
    kl = CAT.failures["kl_growth"]
    assert (kl.title_zh if lang == "zh" else kl.title) in head
    # methods: exactly those of the single-kind comment, none that only addresses KL growth
    assert both.suggested == alone.suggested and method_links(both.body) == method_links(alone.body)
    only_kl = {m.id for m in CAT.methods_for_failure("kl_growth")} - {
        m.id for m in CAT.methods_for_failure("entropy_collapse")}
    assert only_kl and not only_kl & method_links(both.body)
    # stored details: the leading kind stays the category
    assert both.category == "entropy_collapse" and both.details["runner_up"] == "kl_growth"
    # the certainty word is the lowest even at 0.95 (the single-kind comment says "very likely")
    if lang == "zh":
        assert head.startswith("**或许是[") and "很可能" not in head and "，也可能是[" in head
        assert "针对前者的方法" in head
        assert alone.body.count("**很可能是[") == 1
    else:
        assert head.startswith("**Possibly [") and "likely" not in head.lower()
        assert "Methods that address the first in verl:" in head
        assert "**Very likely [" in alone.body
    assert "confidence 0.95" in head or "置信度 0.95" in head
    # the details say in one line that the second kind was seen too; the single-kind ones do not
    title = kl.title_zh if lang == "zh" else kl.title
    assert sum(title in line for line in why(both.body).splitlines()) == 1
    assert title not in alone.body
    assert len(visible_lines(both.body)) == len(visible_lines(alone.body))


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_every_kind_pair_renders(framework: str, lang: str) -> None:
    for first in KINDS:
        for second in CAT.failures:
            if second == first:
                continue
            c = compose_failure_comment(two_kind_analysis([first, second], 0.5), framework,
                                        setup=None, lang=lang, public_url=PUBLIC)
            if c is None:
                continue
            check_markdown(c.body)
            assert f"{PUBLIC}/failures/{second}" in headline(c.body)
            assert set(c.suggested) <= {m.id for m in CAT.methods_for_failure(first)}


def test_unknown_keys_in_categories_are_ignored() -> None:
    one = compose_failure_comment(two_kind_analysis(["entropy_collapse"], 0.95), "verl",
                                  setup=None, lang="en", public_url=PUBLIC)
    for categories in (["entropy_collapse", "no_such_kind"], ["entropy_collapse", None, 3, "entropy_collapse"]):
        c = compose_failure_comment(two_kind_analysis(categories, 0.95), "verl", setup=None,
                                    lang="en", public_url=PUBLIC)
        assert c is not None and c.body == one.body and c.details["runner_up"] is None
        assert "no_such_kind" not in c.body and headline(c.body).startswith("**Very likely [")
    # an unknown key before a known one: the known one is the runner-up
    c = compose_failure_comment(two_kind_analysis(["entropy_collapse", "no_such_kind", "kl_growth"]),
                                "verl", setup=None, lang="en", public_url=PUBLIC)
    assert c is not None and c.details["runner_up"] == "kl_growth"
    assert f"{PUBLIC}/failures/kl_growth" in headline(c.body) and "no_such_kind" not in c.body
    # categories missing or not a list: the leading kind alone
    for bad in (None, "kl_growth", {"kl_growth": 1}):
        analysis = two_kind_analysis(["entropy_collapse"], 0.95)
        analysis["failure"]["categories"] = bad
        c = compose_failure_comment(analysis, "verl", setup=None, lang="en", public_url=PUBLIC)
        assert c is not None and c.body == one.body


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_runner_up_title_is_escaped(lang: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # A real title with a character md_text keeps ("/"): shown as the catalog writes it.
    c = compose_failure_comment(two_kind_analysis(["entropy_collapse", "rollout_training_mismatch"]),
                                "verl", setup=None, lang=lang, public_url=PUBLIC)
    title = CAT.failures["rollout_training_mismatch"]
    title = title.title_zh if lang == "zh" else title.title
    assert c is not None and f"[{md_text(title)}]({PUBLIC}/failures/rollout_training_mismatch)" in c.body
    # The catalog refuses markup in titles; a title that carried some would still be inert.
    hostile = "KL *keeps* growing <b>x</b> [y](https://evil.example) @someone owner/repo#12"
    kind = dataclasses.replace(CAT.failures["kl_growth"], title=hostile, title_zh=hostile)
    monkeypatch.setitem(CAT.failures, "kl_growth", kind)
    c = compose_failure_comment(two_kind_analysis(["entropy_collapse", "kl_growth"]), "verl",
                                setup=None, lang=lang, public_url=PUBLIC)
    assert c is not None
    check_markdown(c.body)  # every link ours, no mention or cross-reference outside code
    assert "<b>" not in c.body and "https://evil.example" not in [
        t.attrGet("href") for t in inline_tokens(c.body) if t.type == "link_open"]
    assert c.body.count(md_text(hostile)) == 2  # the headline link and the details line
    codes = [t.content for t in inline_tokens(c.body) if t.type == "code_inline"]
    assert "@someone" in codes and "owner/repo#12" in codes


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_split_kind_offers_the_command_that_makes_the_runner_up_the_kind(lang: str) -> None:
    c = compose_failure_comment(two_kind_analysis(["entropy_collapse", "kl_growth"]), "verl",
                                setup=None, lang=lang, public_url=PUBLIC)
    assert c is not None
    codes = [t.content for t in inline_tokens(c.body) if t.type == "code_inline"]
    assert "/rltracker kind kl_growth" in codes
    one = compose_failure_comment(two_kind_analysis(["entropy_collapse"]), "verl",
                                  setup=None, lang=lang, public_url=PUBLIC)
    assert one is not None and "/rltracker kind kl_growth" not in one.body
    assert "`/rltracker kind <" in one.body  # the footer's general form only


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_runner_up_command_is_offered_only_where_its_kind_would_list_methods(lang: str) -> None:
    """The details promise that `/rltracker kind <runner-up>` makes the comment list its
    methods: where that kind has none to suggest here (other_failure has none anywhere; or
    every one is declined in this repository), the verdict withdraws the comment instead, so
    the specific command is not offered (the footer's general form stays)."""
    c = compose_failure_comment(two_kind_analysis(["entropy_collapse", "other_failure"]), "verl",
                                setup=None, lang=lang, public_url=PUBLIC)
    assert c is not None and c.details["runner_up"] == "other_failure"
    assert compose_failure_comment(
        {"failure": {"is_failure_report": True, "category": "other_failure", "set_by": "author"}},
        "verl", setup=None, lang=lang, public_url=PUBLIC) is None
    assert "/rltracker kind other_failure" not in c.body
    assert "`/rltracker kind <" in c.body
    declined = {m.id for m in CAT.methods_for_failure("kl_growth")} - {
        m.id for m in CAT.methods_for_failure("entropy_collapse")}
    c = compose_failure_comment(two_kind_analysis(["entropy_collapse", "kl_growth"]), "verl",
                                setup=None, lang=lang, public_url=PUBLIC, declined=declined)
    assert c is not None and c.details["runner_up"] == "kl_growth"
    assert compose_failure_comment(
        {"failure": {"is_failure_report": True, "category": "kl_growth", "set_by": "author"}},
        "verl", setup=None, lang=lang, public_url=PUBLIC, declined=declined) is None
    assert "/rltracker kind kl_growth" not in c.body


def test_confidence_words() -> None:
    assert [confidence_words(x, "en") for x in (0.95, 0.8, 0.5)] == ["very likely", "likely", "possibly"]
    assert [confidence_words(x, "zh") for x in (0.95, 0.8, 0.5)] == ["很可能", "可能", "或许"]
    for kinds in (2, 3, 4):
        assert confidence_words(0.99, "en", kinds=kinds) == "possibly"
        assert confidence_words(0.99, "zh", kinds=kinds) == "或许"
    assert confidence_words(0.99, "en", kinds=1) == "very likely"


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("role", ["author", "maintainer"])
def test_kind_set_by_a_person(lang: str, role: str) -> None:
    """`/rltracker kind`: the comment names the person's kind as theirs (their role, never
    their login), with no runner-up, no confidence and no cue terms of the analyzer's finding,
    in every framework that has methods for it; the withdrawal says why too."""
    for framework in FRAMEWORKS:
        failure = {"is_failure_report": True, "category": "kl_growth",
                   "categories": ["kl_growth", "entropy_collapse"], "confidence": 1.0,
                   "evidence": ["entropy keeps falling"], "set_by": role}
        composed = compose_failure_comment({"failure": failure}, framework, setup=None, lang=lang,
                                           public_url=PUBLIC)
        if composed is None:
            continue
        check_markdown(composed.body)
        assert "/rltracker kind" in composed.body.splitlines()[1]
        assert ("a maintainer" if lang == "en" else "维护者") in composed.body or role == "author"
        assert "/failures/entropy_collapse" not in composed.body
        assert "confidence" not in composed.body and "置信度" not in composed.body
        details = composed.body.split("<details>")[1]
        # no cue term; the line listing the keys `/rltracker kind` takes names every kind
        kinds_line = next(x for x in details.splitlines() if x.startswith("- `/rltracker kind`"))
        assert "entropy" not in details.replace(kinds_line, "")
        assert composed.details == {"confidence": None, "runner_up": None, "set_by": role}
    withdrawn = withdrawn_comment(lang, PUBLIC, set_by=True)
    check_markdown(withdrawn)
    assert "/rltracker kind" in withdrawn
