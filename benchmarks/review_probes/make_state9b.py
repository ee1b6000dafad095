"""Write benchmarks/review_probes/state9b.jsonl: a second batch of closing-note probes.

Written by the state9 pass AFTER its first pattern change (state9.jsonl was read then), in other
shapes: the reason or pointer stated in an earlier comment and the thread closed without a word,
longer notes, questions back from the proposer, user comments in between. Development probes,
no held-out result.

    python benchmarks/review_probes/make_state9b.py
"""

from __future__ import annotations

from pathlib import Path

from make_state9 import probe_rows, write

OUT = Path(__file__).with_name("state9b.jsonl")

PROBES: list[tuple[str, str, str, list[tuple[str, str]]]] = [
    # redirected, pointer not beside a closing word
    ("redirected", "pull_request", "a math verifier", [
        ("m", "Thanks! I think this would be better suited to the examples directory, the core package only ships generic rewards."),
        ("a", "ok, will do"),
    ]),
    ("redirected", "issue", "FP8 rollouts", [
        ("m", "This is tracked in the vLLM project, it has to land there first. Nothing to do on our side."),
    ]),
    ("redirected", "pull_request", "a PPO variant with two critics", [
        ("m", "Hi, we're no longer adding new trainers to the main package. The right home for this is the community recipes repository, would you be up for moving it?"),
        ("a", "Sure, thanks."),
    ]),
    ("redirected", "issue", "gradient checkpointing for the critic", [
        ("m", "You should be able to get this by setting `critic.model.enable_gradient_checkpointing=True`; it is there already."),
        ("a", "Oh I missed that, thanks"),
    ]),
    ("redirected", "pull_request", "a Slurm launcher", [
        ("m", "Launchers are out of the tree now, see the separate launcher repo. Let's continue there."),
    ]),
    ("redirected", "issue", "reward shaping hooks", [
        ("m", "The callback system gives you exactly this: write a callback with on_reward and register it. No change needed in the trainer."),
    ]),
    ("redirected", "pull_request", "a new dataset format", [
        ("m", "Thanks for the PR. Dataset conversion scripts are better kept on the Hub as a dataset repo with its own script than in this library."),
    ]),
    ("redirected", "issue", "新增一个 GRPO 变体", [
        ("m", "这个可以通过现有的 loss_agg_mode 参数实现，不需要新增 trainer。"),
    ]),
    ("redirected", "pull_request", "support for a custom judge", [
        ("m", "This overlaps with the existing judges module; please extend BaseJudge there instead of adding a new code path."),
        ("m", "Closing in favour of extending the judges."),
    ]),
    ("redirected", "issue", "a web UI for runs", [
        ("m", "That sounds like a great standalone tool! I'd suggest building it as its own project on top of our logging API rather than inside this repo."),
    ]),
    # declined, reason not beside a closing word
    ("declined", "pull_request", "a second KL estimator", [
        ("m", "I'm not sure this is worth the extra complexity; k3 already works well in every run we have."),
        ("a", "Fair enough."),
    ]),
    ("declined", "issue", "Python 3.8 support", [
        ("m", "We require 3.10 for the type syntax and have no intention of going back, sorry."),
    ]),
    ("declined", "pull_request", "a caching layer for rewards", [
        ("m", "Thanks for the effort. This makes the reward path stateful, which breaks the assumption that rewards are pure functions; we'd rather not go that way."),
    ]),
    ("declined", "pull_request", "async weight sync", [
        ("m", "We tried something very similar internally and it didn't give a measurable speedup at our scale, so we'll leave it out."),
    ]),
    ("declined", "issue", "a plugin system for losses", [
        ("m", "Honestly I don't see us doing this. The loss functions are a few lines each and an abstraction would make them harder to read."),
    ]),
    ("declined", "pull_request", "an alternative tokenizer wrapper", [
        ("m", "Sorry, this isn't going to be merged: the wrapper duplicates what transformers gives us and would need constant updates."),
    ]),
    ("declined", "issue", "多机 CPU 训练", [
        ("m", "CPU 训练我们这边没有计划支持，主要面向 GPU 集群。"),
    ]),
    ("declined", "pull_request", "新的采样策略", [
        ("m", "这个改动收益不明显，我们测下来和原来的差不多，暂时不考虑合并。"),
    ]),
    ("declined", "pull_request", "renaming the config keys", [
        ("m", "Renaming these would break every existing config out there for a cosmetic gain. Not something we can do, closing."),
    ]),
    ("declined", "issue", "reward model distillation", [
        ("m", "Nice idea but it doesn't really fit what this library is for; we focus on the RL loop itself."),
    ]),
    # look-alikes
    ("closed_other", "pull_request", "a typo fix in the docs", [
        ("m", "Thanks! This was already fixed on main in #1403, closing."),
    ]),
    ("closed_other", "issue", "add Qwen2.5-VL support", [
        ("m", "Qwen2.5-VL support landed in #2210 and is in the latest release. Closing!"),
    ]),
    ("closed_other", "issue", "LoRA for the reward model", [
        ("m", "Duplicate of #330."),
    ]),
    ("closed_by_author", "pull_request", "a new metric", [
        ("m", "Could you add a test?"),
        ("a", "I'll close this and open a cleaner version later, sorry for the noise."),
    ]),
    ("closed_by_author", "issue", "a config question", [
        ("a", "Never mind, I found the option in the docs. Closing."),
    ]),
    ("lapsed", "pull_request", "a gradient accumulation fix", [
        ("m", "Thanks! Could you rebase, there are conflicts now?"),
        ("m", "Gentle ping @prop-user"),
        ("m", "Closing as there was no response; happy to review again if you reopen."),
    ]),
    ("lapsed", "issue", "a seed option", [
        ("m", "Are you still planning to work on this?"),
    ]),
    ("lapsed", "pull_request", "a vLLM sleep mode toggle", [
        ("m", "Closing this since it's been a while and the code has moved on a lot. Feel free to reopen against the current main."),
    ]),
]


def main() -> None:
    write(probe_rows(PROBES, "probe-state9b", 9100), OUT)


if __name__ == "__main__":
    main()
