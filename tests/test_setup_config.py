"""parse_setup: configs pasted in every style, mapped to the catalog's options per framework."""

from __future__ import annotations

import time

import pytest

from analyzers.setup_config import extract_pairs, option_enabled, parse_setup


def enabled(result: dict, method: str) -> bool:
    return bool(result["options"].get(method, {}).get("enabled"))


def test_hydra_overrides_verl() -> None:
    text = "python3 -m verl.trainer.main_ppo actor_rollout_ref.actor.clip_ratio_high=0.28 +trainer.x=1"
    r = parse_setup(text, "verl")
    assert enabled(r, "clip-higher")
    assert r["options"]["clip-higher"]["value"] == "0.28"
    assert r["options"]["clip-higher"]["source"] == "hydra"


def test_verl_shell_script_with_variables_and_continuations() -> None:
    text = """```bash
clip_ratio_high=0.28
loss_mode=cispo
ARGS=(
    actor_rollout_ref.actor.clip_ratio_high=${clip_ratio_high}
    actor_rollout_ref.actor.policy_loss.loss_mode=$loss_mode
)
python3 -m verl.trainer.main_ppo "${ARGS[@]}" \\
    algorithm.filter_groups.enable=True \\
    actor_rollout_ref.actor.entropy_coeff=0
```"""
    r = parse_setup(text, "verl")
    assert enabled(r, "clip-higher") and r["options"]["clip-higher"]["value"] == "0.28"
    assert enabled(r, "cispo")
    assert enabled(r, "dynamic-sampling")
    # A zero coefficient is set but off: the entropy bonus is not "already on".
    assert not enabled(r, "entropy-bonus")
    assert not enabled(r, "gspo")  # loss_mode=cispo is another choice of the same key


def test_yaml_block_nested_paths() -> None:
    text = """```yaml
actor_rollout_ref:
  actor:
    clip_ratio_high: 0.28   # decoupled
    use_kl_loss: true
algorithm:
  norm_adv_by_std_in_grpo: False
```"""
    r = parse_setup(text, "verl")
    assert r["options"]["clip-higher"]["key"] == "actor_rollout_ref.actor.clip_ratio_high"
    assert r["options"]["clip-higher"]["source"] == "yaml"
    assert enabled(r, "kl-penalty")
    assert enabled(r, "dr-grpo")  # norm_adv_by_std_in_grpo=False is the Dr. GRPO switch


def test_yaml_value_equal_to_default_is_not_on() -> None:
    r = parse_setup("loss_fn:\n  ratio_clip_max: 0.2\n", "nemo-rl")
    assert "clip-higher" in r["options"] and not enabled(r, "clip-higher")
    r = parse_setup("loss_fn:\n  ratio_clip_max: 0.28\n", "nemo-rl")
    assert enabled(r, "clip-higher")


def test_json_block() -> None:
    text = '```json\n{"actor": {"eps_clip_higher": 0.28, "kl_estimator": "k3"}}\n```'
    r = parse_setup(text, "areal")
    assert enabled(r, "clip-higher") and r["options"]["clip-higher"]["source"] == "json"
    assert enabled(r, "k3-kl")


def test_cli_flags_old_and_new_spellings() -> None:
    old = parse_setup("--eps_clip_low_high 0.2 0.28 --advantage_estimator dr_grpo", "openrlhf")
    assert enabled(old, "clip-higher") and old["options"]["clip-higher"]["value"] == "0.2 0.28"
    assert enabled(old, "dr-grpo")
    new = parse_setup("ray job submit -- python -m openrlhf.cli.train_ppo_ray --actor.eps_clip_low_high 0.2 0.28", "openrlhf")
    assert enabled(new, "clip-higher") and new["options"]["clip-higher"]["key"] == "actor.eps_clip_low_high"
    symmetric = parse_setup("--actor.eps_clip_low_high 0.2 0.2", "openrlhf")
    assert not enabled(symmetric, "clip-higher")
    eq = parse_setup("--actor.eps_clip_low_high=0.2", "openrlhf")
    assert "clip-higher" in eq["options"]


def test_cli_dash_flags_and_switches_slime() -> None:
    r = parse_setup("python train.py --eps-clip-high 0.28 --use-tis --tis-clip 2.0", "slime")
    assert enabled(r, "clip-higher") and r["options"]["clip-higher"]["value"] == "0.28"
    assert enabled(r, "tis") and r["options"]["tis"]["value"] == "true"


def test_python_keyword_arguments_trl() -> None:
    text = "args = GRPOConfig(\n    epsilon_high=0.28,\n    loss_type=\"dr_grpo\",\n    beta=0.0,\n)"
    r = parse_setup(text, "trl")
    assert enabled(r, "clip-higher") and r["options"]["clip-higher"]["source"] == "python"
    assert enabled(r, "dr-grpo") and r["options"]["dr-grpo"]["value"] == "dr_grpo"
    assert not enabled(r, "kl-penalty")  # beta=0 turns the KL term off
    assert not enabled(r, "cispo")


def test_framework_scoping() -> None:
    # TRL's option name means nothing in verl.
    assert "clip-higher" not in parse_setup("GRPOConfig(epsilon_high=0.28)", "verl")["options"]


def test_version_lines() -> None:
    text = """verl==0.5.0
vllm==0.8.5.post1
- TRL version: 0.19.0
- Transformers version: 4.52.4
- Python version: 3.11.9
torch: 2.6.0+cu124
"""
    v = parse_setup(text, "verl")["versions"]
    assert v["verl"] == "0.5.0"
    assert v["vllm"].startswith("0.8.5")
    assert v["trl"] == "0.19.0"
    assert v["transformers"] == "4.52.4"
    assert v["python"] == "3.11.9"
    assert v["torch"].startswith("2.6.0")


def test_nothing_found_in_prose() -> None:
    r = parse_setup("Entropy collapses after 200 steps; what should I try?", "verl")
    assert r == {"options": {}, "versions": {}}


@pytest.mark.parametrize(
    ("value", "hint", "default", "expected"),
    [
        ("0.28", "0.28", "0.2 (symmetric)", True),
        ("0.2", "0.28", "0.2 (symmetric)", False),
        ("None", "0.28", None, False),
        ("True", "true", None, True),
        ("false", "true", None, False),
        ("False", "False", None, True),
        ("gspo", "gspo", None, True),
        ("vanilla", "gspo", None, False),
        ("seq-mean-token-sum-norm", "seq-mean-token-sum-norm", None, True),
        ("true", None, None, True),
        ("0.0", "0.0", "1.0", True),
    ],
)
def test_option_enabled(value: str, hint: str | None, default: str | None, expected: bool) -> None:
    assert option_enabled(value, hint, default) is expected


def test_pathological_input_stays_linear() -> None:
    # 64 KiB bodies of repetitive, half-matching input: must stay fast (figure printed, not asserted).
    bodies = [
        "a=" * 32768,
        "--x " * 16384,
        ("  " * 30 + "k:\n") * 900,
        "${" * 32768,
        "`" * 65536,
        "(" * 65536,
    ]
    start = time.perf_counter()
    for body in bodies:
        extract_pairs(body)
        parse_setup(body, "verl")
    print(f"\nparse_setup on 6 x 64 KiB pathological bodies: {time.perf_counter() - start:.3f}s")


def test_recipe_keys_alone_do_not_mean_the_method_is_on() -> None:
    # verl's DAPO recipe sets clip_ratio_low=0.2, the symmetric default: clip-higher is not on.
    r = parse_setup("actor_rollout_ref.actor.clip_ratio_low=0.2", "verl")
    assert not enabled(r, "clip-higher")
