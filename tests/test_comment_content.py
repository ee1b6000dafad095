"""What the failure comment says about a reporter's pasted setup, read as a maintainer of each
framework would read it (review speech64): "Already set in your config" only when the pasted
config really turns the method on, and a method the reporter already has on is not suggested
again. Short configurations written for these tests; the catalog is the project's."""

from __future__ import annotations

import pytest

from analyzers.setup_config import parse_setup
from bot.speaking.failure_comment import compose_for

PUBLIC = "https://tracker.example"


def _comment(framework: str, kind: str, body: str):
    record = {"title": "training fails", "body": body}
    analysis = {"failure": {"is_failure_report": True, "category": kind, "categories": [kind],
                            "confidence": 0.95}}
    return compose_for(record, analysis, framework, public_url=PUBLIC, declined=set())


def _on(framework: str, text: str) -> set[str]:
    return {m for m, v in parse_setup(text, framework)["options"].items() if v["enabled"]}


def test_roll_pg_clip_high_alone_is_not_clip_higher() -> None:
    """ROLL applies pg_clip_high only with use_pg_clip_range: true (the catalog's own caution):
    a config setting pg_clip_high: 0.28 alone runs symmetric clipping, and the comment said
    "Already set in your config: Clip-higher" and did not suggest it."""
    alone = "```yaml\npg_clip_high: 0.28\n```"
    assert "clip-higher" not in _on("roll", alone)
    c = _comment("roll", "entropy_collapse", alone)
    assert c is not None and "clip-higher" in c.suggested and "clip-higher" not in c.already_set
    both = "```yaml\nuse_pg_clip_range: true\npg_clip_high: 0.28\n```"
    assert "clip-higher" in _on("roll", both)
    off = "```yaml\nuse_pg_clip_range: false\npg_clip_high: 0.28\n```"
    assert "clip-higher" not in _on("roll", off)


def test_roll_pg_variant_needs_the_pg_worker() -> None:
    """The pg_variant route needs actor_train.worker_cls ActorPGWorker (the catalog's caution on
    TOPR; CISPO and TIS take the same route): pg_variant alone is not the method on."""
    assert "topr" not in _on("roll", "```yaml\npg_variant: topr\n```")
    assert "cispo" not in _on("roll", "```yaml\npg_variant: cispo\n```")
    worker = ("```yaml\npg_variant: cispo\nactor_train:\n"
              "  worker_cls: roll.pipeline.rlvr.actor_pg_worker.ActorPGWorker\n```")
    assert "cispo" in _on("roll", worker)


def test_nemo_rl_trajectory_age_without_async_is_not_a_staleness_bound() -> None:
    """max_trajectory_age_steps is read only with grpo.async_grpo.enabled=true."""
    assert "staleness-bound" not in _on(
        "nemo-rl", "grpo.async_grpo.enabled=false grpo.async_grpo.max_trajectory_age_steps=2")
    assert "staleness-bound" in _on(
        "nemo-rl", "grpo.async_grpo.enabled=true grpo.async_grpo.max_trajectory_age_steps=2")


@pytest.mark.parametrize(("framework", "text", "method"), [
    # verl: `rollout_is=token (or sequence)`
    ("verl", "algorithm.rollout_correction.rollout_is=sequence", "tis"),
    ("verl", "algorithm.rollout_correction.rollout_is=token", "tis"),
    # verl: Seq-MIS `rollout_rs=seq_sum_k1` or Geo-RS `rollout_rs=seq_mean_k1`
    ("verl", "algorithm.rollout_correction.rollout_rs=seq_mean_k1", "masked-importance-sampling"),
    # TRL: `vllm_importance_sampling_mode='token_truncate' (or 'sequence_truncate')`
    ("trl", "GRPOConfig(vllm_importance_sampling_mode='sequence_truncate')", "tis"),
])
def test_every_value_the_catalog_names_as_turning_it_on_counts(framework: str, text: str,
                                                               method: str) -> None:
    """The catalog's setting names more than one value that turns the method on; only the
    first was read as on, and the comment suggested TIS to a verl reporter whose pasted
    config had rollout_is=sequence."""
    assert method in _on(framework, text)
    kind = "rollout_training_mismatch"
    c = _comment(framework, kind, f"```\n{text}\n```")
    assert c is None or (method in c.already_set and method not in c.suggested)


def test_verl_bypass_mode_false_alone_is_not_decoupled_ppo() -> None:
    """bypass_mode=false is verl's default and, with rollout_is null (also the default), no
    correction weight is applied (the catalog's default says so): alone it was read as
    decoupled PPO already set."""
    assert "decoupled-ppo" not in _on("verl", "algorithm.rollout_correction.bypass_mode=false")
    assert "decoupled-ppo" in _on("verl", "algorithm.rollout_correction.bypass_mode=false "
                                          "algorithm.rollout_correction.rollout_is=sequence")


@pytest.mark.parametrize(("framework", "kind", "method", "off"), [
    # verl: clip_ratio_c 3.0, "applied in loss_mode vanilla (on by default)"
    ("verl", "collapse_or_divergence", "dual-clip-ppo", "actor_rollout_ref.actor.clip_ratio_c=0"),
    # OpenRLHF: --algo.kl.init_coef 0.01 "(on by default)"
    ("openrlhf", "kl_growth", "kl-penalty", "--algo.kl.init_coef 0"),
    # TRL: "'sequence_mask' is the default mode, so masking is on whenever vLLM is used"
    ("trl", "rollout_training_mismatch", "masked-importance-sampling",
     "GRPOConfig(vllm_importance_sampling_mode='token_truncate')"),
    # verl: loss_agg_mode token-mean "(default)"
    ("verl", "response_length_drift", "token-level-loss",
     "actor_rollout_ref.actor.loss_agg_mode=seq-mean-token-mean"),
])
def test_a_method_on_by_default_is_suggested_only_to_a_config_that_turns_it_off(
        framework: str, kind: str, method: str, off: str) -> None:
    """The comment told a verl reporter of a collapse to set clip_ratio_c=3.0 and an OpenRLHF
    reporter of growing KL to set --algo.kl.init_coef 0.01: the framework's defaults, which
    their run already had. Such a method is named only when the pasted config turns it off."""
    silent = _comment(framework, kind, "the run collapsed")
    assert silent is None or method not in silent.suggested
    turned_off = _comment(framework, kind, f"```\n{off}\n```")
    assert turned_off is not None and method in turned_off.suggested


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_methods_reply_says_which_settings_are_the_default(lang: str) -> None:
    """`/rltracker methods` lists every method with its setting; verl's dual-clip setting is
    the default, and the reply gave it as a thing to set."""
    from bot.speaking.render import methods_reply

    body = methods_reply("collapse_or_divergence", "verl", lang, PUBLIC)
    line = next(x for x in body.splitlines() if "/methods/dual-clip-ppo)" in x)
    assert ("on by default" if lang == "en" else "默认已开启") in line
    other = next(x for x in body.splitlines() if "/methods/gspo)" in x)
    assert "on by default" not in other and "默认已开启" not in other


@pytest.mark.parametrize("line", [
    "actor_rollout_ref.actor.clip_ratio_high=${CLIP_HIGH}",
    "actor_rollout_ref.actor.clip_ratio_high=$CLIP_HIGH",
    "actor_rollout_ref.actor.clip_ratio_high=${oc.env:CLIP_HIGH}",
])
def test_a_value_the_paste_does_not_give_is_not_already_set(line: str) -> None:
    """A variable the pasted script never assigns leaves the value unknown (it may be the
    symmetric 0.2): the comment said "Already set in your config: Clip-higher"."""
    c = _comment("verl", "entropy_collapse", f"```bash\npython3 -m verl.trainer.main_ppo \\\n    {line}\n```")
    assert c is not None and "clip-higher" not in c.already_set and "clip-higher" in c.suggested
    assigned = _comment("verl", "entropy_collapse",
                        f"```bash\nCLIP_HIGH=0.28\npython3 -m verl.trainer.main_ppo \\\n    {line}\n```")
    if "oc.env" not in line:
        assert assigned is None or "clip-higher" in assigned.already_set


# ------------------------------------------------------------------ the rule summary's words
def _summary() -> dict:
    """A project-written summary: tests has advice only (a hint), sign-off and CI nothing."""
    fact = {"topic": "tests", "rule": "x", "statement": "Test changes often.", "statement_zh": None,
            "strength": "hint", "source": "CLAUDE.md", "sources": ["CLAUDE.md"], "evidence": "",
            "observed": False}
    return {"framework": "roll", "files": ["CLAUDE.md"], "facts": [fact],
            "not_stated": ["tests", "sign-off", "ci"]}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_not_stated_never_names_a_topic_the_summary_just_gave(lang: str) -> None:
    """ROLL's summary read "**Tests** - Test changes often, with realistic inputs. (`CLAUDE.md`)"
    then "Not stated in the files read: tests, docs, ...": a topic with advice but no rule was
    listed as not stated right under its advice (verl's and slime's "discuss first" too)."""
    from analyzers.rules import format_rules_markdown

    md = format_rules_markdown(_summary(), lang=lang, heading=False)
    not_stated = next(x for x in md.splitlines() if x.startswith(("Not stated", "所读文件中未说明")))
    assert ("tests" not in not_stated) if lang == "en" else ("测试" not in not_stated)
    advice = [x for x in md.splitlines() if ("tests" in x if lang == "en" else "测试" in x)
              and not x.startswith("-")]
    assert advice, md  # said as advice without a rule


def test_not_stated_keeps_acronyms() -> None:
    """"sign-off / cla", "ci": the topic names lowercased whole."""
    from analyzers.rules import format_rules_markdown

    md = format_rules_markdown(_summary(), lang="en", heading=False)
    assert "sign-off / CLA" in md and ", CI" in md and " cla" not in md and " ci." not in md


@pytest.mark.parametrize(("framework", "text"), [
    # slime: --eps-clip-high "None (falls back to --eps-clip 0.2)"
    ("slime", "--eps-clip 0.2 --eps-clip-high 0.2"),
    # TRL: epsilon_high "None (falls back to epsilon=0.2)"
    ("trl", "GRPOConfig(epsilon=0.2, epsilon_high=0.2)"),
])
def test_an_upper_bound_equal_to_the_fallback_is_not_clip_higher(framework: str, text: str) -> None:
    """An upper clip bound set to the value it falls back to is symmetric clipping: the
    comment said "Already set in your config: Clip-higher (`--eps-clip-high` = `0.2`)"."""
    assert "clip-higher" not in _on(framework, text)
    c = _comment(framework, "entropy_collapse", f"```\n{text}\n```")
    assert c is not None and "clip-higher" not in c.already_set


def test_words_where_the_option_takes_a_number_are_neither_set_nor_quoted_back() -> None:
    """A pasted `clip_ratio_high: <words>` was read as "set, value unknown" and the words came
    back in the comment: "Already set in your config: Clip-higher
    (`actor_rollout_ref.actor.clip_ratio_high` = `buy cheap pills at example`)"."""
    words = "buy cheap pills at example"
    body = f"```yaml\nactor_rollout_ref:\n  actor:\n    clip_ratio_high: {words}\n```"
    c = _comment("verl", "entropy_collapse", body)
    assert c is not None and words not in c.body and "clip-higher" not in c.already_set
    python = _comment("verl", "entropy_collapse",
                      "actor_rollout_ref.actor.clip_ratio_high=args.eps_high")
    assert python is not None and "clip-higher" not in python.already_set


def test_a_switchs_trailing_words_are_not_quoted_back() -> None:
    """A bare switch followed by words (`--use-tis please ban user x`): the method is on, and
    the words were shown as its value."""
    c = _comment("slime", "rollout_training_mismatch", "```\n--use-tis please ban user x\n```")
    assert c is None or "please ban user x" not in c.body
    both = _comment("slime", "stale_rollout_data", "```\n--use-tis please ban user x\n```")
    assert both is None or "please ban user x" not in both.body


@pytest.mark.parametrize(("set_by", "spans"), [
    ("YAML pg_clip_high: 0.28 together with use_pg_clip_range: true (without it pg_clip is used)",
     ["pg_clip_high: 0.28", "use_pg_clip_range: true"]),
    ("GRPOConfig(epsilon_high=0.28) or --epsilon_high 0.28; also in trl/trainer/rloo_config.py",
     ["GRPOConfig(epsilon_high=0.28)", "--epsilon_high 0.28"]),
    ("loss_fn.reference_policy_kl_penalty=0.01 with loss_fn.reference_policy_kl_type=k3",
     ["loss_fn.reference_policy_kl_penalty=0.01", "loss_fn.reference_policy_kl_type=k3"]),
    ("YAML train_infer_correction: {filters: [{enabled: true, agg_type: token}]} with "
     "enable_old_logprobs_recompute: true",
     ["train_infer_correction: {filters: [{enabled: true, agg_type: token}]}",
      "enable_old_logprobs_recompute: true"]),
    ("actor_rollout_ref.actor.clip_ratio_high=0.28 (with actor_rollout_ref.actor.clip_ratio_low=0.2)",
     ["actor_rollout_ref.actor.clip_ratio_high=0.28"]),
])
def test_a_setting_is_code_and_the_words_joining_settings_are_text(set_by: str, spans: list) -> None:
    """ROLL's clip-higher came as one code span `YAML pg_clip_high: 0.28 together with
    use_pg_clip_range: true` (TRL's as `GRPOConfig(epsilon_high=0.28) or --epsilon_high 0.28;
    also in trl/trainer/rloo_config.py`): pasted as written it is no YAML and no command. Each
    setting is its own code span, the words between them text."""
    from markdown_it import MarkdownIt

    from bot.speaking.render import setting_md

    tokens = [t for tok in MarkdownIt("commonmark").parse(setting_md(set_by)) for t in tok.children or []]
    assert [t.content for t in tokens if t.type == "code_inline"] == spans
    text = "".join(t.content for t in tokens if t.type in ("text", "code_inline"))
    assert " ".join(text.split()).replace("YAML ", "") == " ".join(set_by.split()).replace("YAML ", "")


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("second", ["kl_growth", "other_failure"])
@pytest.mark.parametrize("evidence", [[], ["entropy keeps falling"]])
def test_the_runner_up_line_is_a_list_item_of_its_own(lang: str, second: str, evidence: list) -> None:
    """With a second kind named, its line in the details ran into the next bullet ("...the kind
    it ranks first.- GMPO: option ..."): one list item where there were two."""
    from markdown_it import MarkdownIt

    from bot.speaking.render import compose_failure_comment

    analysis = {"failure": {"is_failure_report": True, "category": "entropy_collapse",
                            "categories": ["entropy_collapse", second], "confidence": 0.9,
                            "evidence": evidence}}
    c = compose_failure_comment(analysis, "verl", setup=None, lang=lang, public_url=PUBLIC)
    assert c is not None
    details = c.body.split("</summary>", 1)[1].split("</details>", 1)[0]
    items = [t for t in MarkdownIt("commonmark").parse(details) if t.type == "list_item_open"]
    expected = 1 + (1 if evidence else 0) + len(c.suggested) + 1 + 1  # + the kinds' keys
    assert len(items) == expected, details
    assert all(line.count("- ") <= 1 or not line.startswith("- ") or "。- " not in line
               for line in details.splitlines())


def test_a_second_setting_after_a_remark_is_not_taken_into_the_remark() -> None:
    """verl's Clip-Cov / KL-Cov setting is "loss_mode=clip_cov (clip_cov_ratio ...) or
    loss_mode=kl_cov (kl_cov_ratio ...)": everything after the first " (" was taken as one
    trailing remark, so `loss_mode=kl_cov` came out as escaped prose, not as a setting."""
    from markdown_it import MarkdownIt

    from bot.speaking.render import setting_md

    md = setting_md("actor_rollout_ref.actor.policy_loss.loss_mode=clip_cov (clip_cov_ratio 0.0002, "
                    "clip_cov_ub 5.0) or loss_mode=kl_cov (kl_cov_ratio 0.0002, ppo_kl_coef 0.1)")
    codes = [t.content for tok in MarkdownIt("commonmark").parse(md) for t in tok.children or []
             if t.type == "code_inline"]
    assert "loss_mode=kl_cov" in codes, md
    assert setting_md("a.b=1 (with c=2)") == "`a.b=1` (with c=2)"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_methods_reply_outside_the_seven_frameworks(lang: str) -> None:
    """In a repository that is none of the seven (an organisation-wide installation, a project
    built on verl), `/rltracker methods entropy_collapse` answered "None in the catalog." and
    "Only in other frameworks: Clip-higher (verl, TRL, ...)": the catalog has five methods for
    it, and there is no "this" framework for the others to be other than."""
    from bot.speaking.render import methods_reply

    body = methods_reply("entropy_collapse", None, lang, PUBLIC)
    assert "None in the catalog" not in body and "目录中没有对应选项" not in body
    assert "Only in other frameworks" not in body and "仅其他框架提供" not in body
    assert "/methods/clip-higher)" in body
    here = methods_reply("entropy_collapse", "verl", lang, PUBLIC)
    assert "/methods/clip-higher)" in here


def test_one_setting_pasted_on_and_off_is_not_already_set() -> None:
    """The YAML the reporter pasted sets clip_ratio_high 0.28 and their launch line overrides it
    with 0.2 (a Hydra override wins over the file): the enabling value was taken, and the
    comment said "Already set in your config: Clip-higher". With both there, the paste does
    not say which one ran."""
    body = ("```yaml\nactor_rollout_ref:\n  actor:\n    clip_ratio_high: 0.28\n```\n"
            "```bash\npython3 -m verl.trainer.main_ppo actor_rollout_ref.actor.clip_ratio_high=0.2\n```")
    assert "clip-higher" not in _on("verl", body)
    c = _comment("verl", "entropy_collapse", body)
    assert c is not None and "clip-higher" not in c.already_set and "clip-higher" in c.suggested
    # two keys of one option, one on and one at its default: still on (NeMo-RL async GRPO)
    assert "staleness-bound" in _on(
        "nemo-rl", "grpo.async_grpo.enabled=true grpo.async_grpo.max_trajectory_age_steps=1")


def test_a_switch_key_of_an_option_with_a_number_hint_is_on() -> None:
    """An option whose keys are a switch and a number (NeMo-RL async GRPO, OpenRLHF's async
    queue): the switch set true is the method on."""
    assert "staleness-bound" in _on("nemo-rl", "grpo.async_grpo.enabled=true")
    assert "staleness-bound" in _on("openrlhf", "--train.async_enable --train.async_queue_size 2")
    assert "staleness-bound" not in _on("nemo-rl", "grpo.async_grpo.enabled=false")


def test_verl_v1_async_trainer_mode_is_the_staleness_bound() -> None:
    """verl's v1 async trainer bounds staleness (max_off_policy_threshold, default 8) once
    trainer_mode is separate_async or colocate_async: the mode is the switch."""
    for mode in ("separate_async", "colocate_async"):
        assert "staleness-bound" in _on("verl", f"trainer.v1.trainer_mode={mode}")
    assert "staleness-bound" not in _on("verl", "trainer.v1.trainer_mode=colocate_sync")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_rule_summary_tells_its_reader_how_to_hide_it(lang: str) -> None:
    """The rule summary's footer named only `rule_summaries: false` in the repository's config,
    which the proposer it answers cannot set; `/rltracker stop` from them hides it (and mutes
    the thread)."""
    from bot.speaking.render import rule_summary_reply

    body = rule_summary_reply(rules_markdown=None, framework_id="verl", earlier=[], lang=lang,
                              public_url=PUBLIC)
    footer = body.strip().splitlines()[-1]
    assert "`/rltracker stop`" in footer and "`rule_summaries: false`" in footer
