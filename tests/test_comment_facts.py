"""The facts the failure comment and the `/rltracker methods` reply state, for each of the
seven frameworks and each failure kind: the caution shown is about this framework (or about
none), the frameworks named as having a method are all of them and only others, and every
tracker link the comment makes answers on the site."""

from __future__ import annotations

import re

import pytest
from markdown_it import MarkdownIt

from analyzers.catalog import load_catalog
from bot.speaking.render import compose_failure_comment, methods_reply, short_name

PUBLIC = "https://tracker.example"
CAT = load_catalog()
FRAMEWORKS = list(CAT.frameworks)
KINDS = [k for k in CAT.failures if CAT.methods_for_failure(k)]
MD = MarkdownIt("commonmark")


def _names_pattern(fid: str) -> re.Pattern[str]:
    fw = CAT.frameworks[fid]
    names = sorted({fw.id, fw.name}, key=len, reverse=True)
    # a framework named as a word: "ROLL's", "verl-project", not "rollout" nor "overlong"
    return re.compile(r"(?<![\w-])(?:" + "|".join(map(re.escape, names)) + r")(?!\w)", re.I)


NAMED = {fid: _names_pattern(fid) for fid in FRAMEWORKS}


def frameworks_named(text: str) -> set[str]:
    return {fid for fid, pattern in NAMED.items() if pattern.search(text)}


def plain(markdown: str) -> str:
    """The text a reader sees (escapes gone, code spans as their text)."""
    out = []
    for tok in MD.parse(markdown):
        for child in tok.children or []:
            if child.type in ("text", "code_inline"):
                out.append(child.content)
    return "".join(out)


def comment(kind: str, framework: str, lang: str = "en"):
    return compose_failure_comment(
        {"failure": {"is_failure_report": True, "category": kind, "categories": [kind],
                     "confidence": 0.9}},
        framework, setup=None, lang=lang, public_url=PUBLIC)


def _method_lines(body: str) -> dict[str, str]:
    """method id -> its bullet line, for the suggested methods."""
    out = {}
    for line in body.splitlines():
        m = re.match(rf"- \[[^\]]*\]\({re.escape(PUBLIC)}/methods/([\w-]+)\)[:：]", line)
        if m:
            out[m.group(1)] = line
    return out


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_caution_shown_is_about_this_framework_or_about_none(framework: str) -> None:
    """A caution naming only other frameworks is that framework's quirk: not shown here.
    ("rollout" is not ROLL, "overlong" is not verl, "controller" is not ROLL.)"""
    wrong = []
    for kind in KINDS:
        c = comment(kind, framework)
        if c is None:
            continue
        for mid, line in _method_lines(c.body).items():
            if " — caution: " not in line:
                continue
            caution = plain(line.split(" — caution: ", 1)[1])
            named = frameworks_named(caution)
            if named and framework not in named:
                wrong.append((kind, mid, sorted(named), caution))
    assert not wrong, wrong


def test_the_word_rules_of_the_test_itself() -> None:
    assert frameworks_named("one report per rollout, the controller, overlong shaping") == set()
    assert frameworks_named("ROLL's code; verl-project/verl-recipe; NeMo-RL's guide") == {
        "roll", "verl", "nemo-rl"}


def _elsewhere(body: str) -> dict[str, set[str]]:
    """method id -> the framework names given after it in the "only in other frameworks" line."""
    out: dict[str, set[str]] = {}
    for line in body.splitlines():
        if "Only in other frameworks:" not in line and "仅其他框架提供：" not in line:
            continue
        for m in re.finditer(rf"\]\({re.escape(PUBLIC)}/methods/([\w-]+)\)\s*[(（]([^)）]*)[)）]", line):
            out[m.group(1)] = {plain(n).strip() for n in re.split(r", |、", m.group(2))}  # zh: 、
    return out


def _has(method_id: str) -> set[str]:
    return {CAT.frameworks[f].name for f in CAT.methods[method_id].options}


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_only_in_other_frameworks_names_every_framework_that_has_it(framework: str,
                                                                    lang: str) -> None:
    """"CISPO (verl, TRL, NeMo-RL, ROLL)" when slime and AReaL have it too reads as if they
    did not: every framework with an option is named."""
    checked = 0
    for kind in KINDS:
        c = comment(kind, framework, lang)
        bodies = [c.body] if c else []
        bodies.append(methods_reply(kind, framework, lang, PUBLIC))
        for body in bodies:
            for mid, names in _elsewhere(body).items():
                assert names == _has(mid), (kind, framework, mid, names)
                checked += 1
    assert checked


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_only_in_other_frameworks_never_lists_a_method_this_framework_has(framework: str,
                                                                           lang: str) -> None:
    """A method built into this framework (always on, nothing to turn on) is not "only in
    other frameworks" (the methods reply said so of token-level loss in OpenRLHF, naming
    OpenRLHF among the others)."""
    name = CAT.frameworks[framework].name
    for kind in KINDS:
        body = methods_reply(kind, framework, lang, PUBLIC)
        for mid, names in _elsewhere(body).items():
            assert name not in names and not CAT.methods[mid].has(framework), (kind, mid)


def test_a_built_in_method_is_said_to_be_built_in_in_the_methods_reply() -> None:
    body = methods_reply("length_bias", "openrlhf", "en", PUBLIC)
    line = next(x for x in body.splitlines() if "/methods/token-level-loss" in x)
    assert "In OpenRLHF without a switch of its own" in line and "Only in other frameworks" not in line
    zh = methods_reply("length_bias", "openrlhf", "zh", PUBLIC)
    line = next(x for x in zh.splitlines() if "/methods/token-level-loss" in x)
    assert "已内置" in line and "仅其他框架提供" not in line


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_every_option_shown_is_this_frameworks(framework: str) -> None:
    """The settings and the option names in the details come from this framework's options."""
    for kind in KINDS:
        c = comment(kind, framework)
        if c is None:
            continue
        for mid in c.suggested:
            mine = [o for o in CAT.methods[mid].options.get(framework, []) if not o.is_builtin]
            assert mine, (kind, mid)
            line = _method_lines(c.body)[mid]
            assert any(" ".join(o.set_by.split()).split(" (")[0] in plain(line) for o in mine)
            details = [x for x in c.body.splitlines() if x.startswith("- ") and ": option `" in x]
            assert any(f"`{o.name}`" in d and o.commit[:10] in d for o in mine for d in details)


def test_a_setting_already_on_is_named_by_the_catalogs_key_not_the_reporters_path() -> None:
    """Only the catalog's spelling of an option the reporter already has is shown, never the
    path around it the reporter wrote (their words, any length), and the value only when it
    passes the strict check."""
    from bot.speaking.failure_comment import compose_for

    words = "please_ban_user_x_and_visit_evil_example"
    record = {"title": "entropy collapse", "body": (
        f"{words}.actor_rollout_ref.actor.clip_ratio_high=0.28\n"
        f"{'y' * 300}.actor_rollout_ref.actor.entropy_coeff=0.01\n")}
    c = compose_for(record, {"failure": {"is_failure_report": True, "category": "entropy_collapse",
                                         "confidence": 0.9}},
                    "verl", public_url=PUBLIC, declined=set())
    assert c is not None and "clip-higher" in c.already_set
    assert words not in c.body and "y" * 40 not in c.body
    already = next(x for x in c.body.splitlines() if "Already set" in x)
    assert "`actor_rollout_ref.actor.clip_ratio_high` = `0.28`" in already



def experimental_mark(framework: str, lang: str) -> str:
    name = CAT.frameworks[framework].name
    return f"（{name} 中为实验性功能）" if lang == "zh" else f" (experimental in {name})"


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_an_experimental_option_is_said_to_be_experimental(framework: str, lang: str) -> None:
    """A setting whose option the catalog (the shared status "found (experimental ...)") marks
    experimental says so, in the failure comment and the methods reply; no other setting does
    (review comment80: TRL's k3 and truncation penalty exist only in trl.experimental's PPO,
    and read as GRPO options without the word)."""
    mark = experimental_mark(framework, lang)
    marked = 0
    for kind in KINDS:
        c = comment(kind, framework, lang)
        reply = _method_lines(methods_reply(kind, framework, lang, PUBLIC))
        for mid, line in [*(_method_lines(c.body).items() if c else []), *reply.items()]:
            mine = [o for o in CAT.methods[mid].options.get(framework, []) if not o.is_builtin]
            if not mine:
                continue
            experimental = all(o.experimental for o in mine)
            assert (mark in line) == experimental, (kind, mid, lang, line)
            marked += experimental
    if framework == "trl":
        assert marked, "TRL has experimental options the comments show"


CAUTION_MARK = {"en": " — caution: ", "zh": " — 注意："}


def _option_words(options: list) -> set[str]:
    """The names and keys an option is spelled by in catalog text."""
    return {w for o in options for w in (o.name, *o.keys) if w}


def _names_a_word(text: str, words: set[str]) -> bool:
    return any(re.search(rf"(?<![\w-]){re.escape(w)}(?!\w)", text) for w in words)


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_caution_about_one_option_is_not_shown_as_advice_on_another(framework: str,
                                                                      lang: str) -> None:
    """A caution next to a setting concerns that setting: one that names another of this
    framework's options for the method (and not the one shown) reads as advice against the
    value shown (review comment80: verl's `max_off_policy_threshold=8` came with "Verl advises
    staleness_threshold under 1", the fully async trainer's option)."""
    wrong = []
    for kind in KINDS:
        c = comment(kind, framework, lang)
        for mid, line in (_method_lines(c.body).items() if c else []):
            if CAUTION_MARK[lang] not in line:
                continue
            caution = plain(line.split(CAUTION_MARK[lang], 1)[1])
            options = CAT.methods[mid].options.get(framework, [])
            # the option "Why this suggestion" names for this method
            why = [w for w in c.body.splitlines() if w.startswith(f"- {short_name(CAT.methods[mid].name)}")]
            shown = [o for o in options if any(f"`{o.name}`" in w for w in why)]
            assert len(shown) == 1, (kind, mid, why)
            shown_words = _option_words(shown)
            others = _option_words([o for o in options if o not in shown]) - shown_words
            if _names_a_word(caution, others) and not _names_a_word(caution, shown_words):
                wrong.append((kind, mid, caution))
    assert not wrong, wrong
    if framework == "verl":
        c = comment("stale_rollout_data", "verl", lang)
        assert c is not None
        assert "max_off_policy_threshold=8" in plain(_method_lines(c.body)["staleness-bound"])
