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

from bot.speaking.render import compose_failure_comment, setting_md, visible_lines
from tests.test_comment_combinations import CAT, FRAMEWORKS, GITHUB_BODY_LIMIT, KINDS, MD, PUBLIC

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


# Short failure reports written for this test, one per kind (the analyzer decides the kind it
# reads in each: the comment is checked for whatever it posts).
REPORTS = {
    "entropy_collapse": ("Entropy collapse during GRPO", "Policy entropy collapses to almost zero "
                         "after 150 steps and the reward plateaus. The model stops exploring."),
    "entropy_explosion": ("Entropy explodes and outputs become gibberish", "After 300 steps the "
                          "policy entropy keeps rising sharply, entropy explodes and the responses "
                          "turn into random gibberish tokens."),
    "collapse_or_divergence": ("Training diverges, loss becomes NaN", "Around step 400 the reward "
                               "suddenly drops to zero, grad norm spikes and the loss becomes NaN."),
    "rollout_training_mismatch": ("Large mismatch between rollout and training log probs", "The "
                                  "log-prob difference between vLLM rollout and FSDP training is "
                                  "large; training-inference mismatch grows and the reward drops."),
    "response_length_drift": ("Response length keeps growing until truncation", "Mean response "
                              "length grows from 500 to 8000 tokens and most responses get "
                              "truncated at max length."),
    "stale_rollout_data": ("Async training unstable with stale rollouts", "With asynchronous "
                           "rollout the samples are several policy versions stale (off-policy), "
                           "and training becomes unstable as the staleness grows."),
    "kl_growth": ("KL divergence keeps growing", "The KL divergence to the reference model keeps "
                  "increasing during training, from 0.01 to 5 after 500 steps."),
    "moe_instability": ("MoE training unstable", "Training Qwen3-30B-A3B MoE with GRPO is "
                        "unstable: expert routing differs between rollout and training and the "
                        "reward collapses."),
    "groups_without_signal": ("Most groups have identical rewards", "Most GRPO groups get the "
                              "same reward for all samples, so advantages are zero and there is "
                              "no learning signal."),
    "length_bias": ("Wrong answers get longer", "With the sequence-mean loss, long wrong responses "
                    "are penalised less and the model is biased toward longer responses."),
    "other_failure": ("Training does not improve", "The reward stays flat for 1000 steps and the "
                      "validation score does not improve at all."),
}


async def test_each_kind_reported_through_a_real_issues_opened_payload(app_ctx, fake_github) -> None:
    """GitHub's example `issues.opened` payload (../shared/fixtures/webhooks), carrying each
    report above on verl, through the Router to the fake GitHub: every failure comment it
    posts keeps the invariants (verl's own settings, tracker routes, no prose in code, the
    kinds' keys, the length bound)."""
    from datetime import UTC, datetime, timedelta

    from tests.test_actions_e2e import VERL, app_comments, install
    from tests.test_speaking_when import deliver, issue_payload

    await install(app_ctx, fake_github)
    fake_github.set_file(VERL, ".github/rltracker.yml", "daily_budget: 50\n")  # one per report
    own = _own_settings("verl")
    start = datetime.now(UTC) - timedelta(minutes=30)
    posted = 0
    for number, (title, body) in enumerate(REPORTS.values(), start=700):
        payload = issue_payload(fake_github, "opened", number, title, body, updated=start)
        await deliver(app_ctx, payload, "issues", f"guard-{number}")
        for comment in app_comments(fake_github, VERL, number):
            posted += 1
            text = comment["body"]
            assert len(text) < GITHUB_BODY_LIMIT and len(visible_lines(text)) <= 8, number
            tokens = _inline(text)
            for href in (t.attrGet("href") for t in tokens if t.type == "link_open"):
                path = href.split("://", 1)[-1].split("/", 1)[-1]
                kind, _, key = path.partition("/")
                assert (kind, key in {"methods": CAT.methods, "failures": CAT.failures}.get(kind, {})) \
                    in (("methods", True), ("failures", True)), (number, href)
            for code in (t.content for t in _inline(text.split("<details>")[0])
                         if t.type == "code_inline"):
                assert code.startswith("/rltracker ") or (code in own and _prose_in(code) is None), \
                    (number, code)
            assert all(f"`{key}`" in text for key in KINDS), number
    assert posted, "the analyzer recognised none of the reports"
    print(f"{posted} failure comments posted of {len(REPORTS)} reports")


def test_the_longest_possible_failure_comment_fits_in_a_github_comment() -> None:
    """An upper bound of any failure comment, from its bounded parts at their longest in the
    catalog (each setting, caution, method name, file, kind title and key), far under GitHub's
    65,536 characters (measured: at most 8,043, where the longest rendered is 3,271).
    test_every_failure_comment_keeps_its_invariants checks each rendered one against 65,536."""
    from bot.speaking.render import MAX_CAUTION, MAX_ELSEWHERE, MAX_METHODS, md_text

    options = [o for m in CAT.methods.values() for opts in m.options.values() for o in opts]
    name = max(len(md_text(m.name)) for m in CAT.methods.values()) + len(PUBLIC) + 64
    setting = max(len(setting_md(o.set_by)) for o in options)
    caution = 2 * MAX_CAUTION + 32  # a sentence cut at MAX_CAUTION, then escaped at worst
    framework_names = sum(len(f.name) + 2 for f in CAT.frameworks.values())
    title = max(len(md_text(k.title)) + len(k.title_zh) for k in CAT.failures.values()) + len(PUBLIC) + 64
    detail = name + max(len(o.name) + len(o.file) for o in options) + 80
    kinds = sum(len(k) + 4 for k in KINDS)
    bound = (2 * title + 300 + MAX_METHODS * (name + setting + caution + 16) + 3 * (name + 120)
             + MAX_ELSEWHERE * (name + framework_names) + 300 + 2 * title + 200
             + 8 * 24 + MAX_METHODS * detail + kinds + 600)
    print(f"longest possible failure comment: at most {bound} characters")
    assert bound < GITHUB_BODY_LIMIT // 4


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_every_methods_reply_names_its_own_settings_only(framework: str, lang: str) -> None:
    """`/rltracker methods <kind>` (what the failure comment sends a reader to for the methods
    it leaves out): every method of the kind is there, each setting this framework's own
    with no prose in its code, every link a tracker route."""
    from bot.speaking.render import methods_reply

    own = _own_settings(framework)
    for kind in KINDS:
        body = methods_reply(kind, framework, lang, PUBLIC)
        tokens = _inline(body)
        linked = {m.group(1) for t in tokens if t.type == "link_open"
                  if (m := ROUTES[0][0].fullmatch(t.attrGet("href") or ""))}
        assert linked == {m.id for m in CAT.methods_for_failure(kind) if m.options}, (framework, kind)
        for code in (t.content for t in tokens if t.type == "code_inline"):
            if code != "/rltracker methods":  # the footer names the command it answers
                assert code in own and _prose_in(code) is None, (framework, kind, code)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_help_reply_says_what_each_command_does(lang: str) -> None:
    """`/rltracker help` listed the command names only (`recheck`, `ignore`, `stop`, ...): a
    maintainer could not tell `ignore` from `stop` without the docs. Each is now a list item
    with what it does, and who may use `resume`."""
    from bot.speaking.render import COMMAND_FORMS, command_note

    body = command_note("help", lang)
    items = [line for line in body.splitlines() if line.startswith("- `")]
    assert [line.split("`")[1] for line in items] == list(COMMAND_FORMS)
    assert all(len(line.split("`", 2)[2].strip(" :：")) >= 8 for line in items), items
    assert len(body) < 2000
