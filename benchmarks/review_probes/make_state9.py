"""Write benchmarks/review_probes/state9.jsonl: short closing-note probes for the review state.

Written for rltracker by the state9 pass before any rule was changed (development probes: the
rules were tuned on them, so they are no held-out result). Each thread is a proposal closed with
no `closed_by`, as in the labelled data; the last word decides its state.

    python benchmarks/review_probes/make_state9.py
"""

from __future__ import annotations

import json
from pathlib import Path

OUT = Path(__file__).with_name("state9.jsonl")

PR_BODY = "This PR adds {x} to the trainer, with a config switch and a short example."
ISSUE_BODY = "Feature request: it would be great to support {x}. Happy to help with a PR."

# (state, kind, topic, [(who, text), ...]); who: "a" = proposer, "m" = maintainer, "u" = another
# user, "b" = a bot.
PROBES: list[tuple[str, str, str, list[tuple[str, str]]]] = [
    # --- redirected: a pointer elsewhere ------------------------------------------------------
    ("redirected", "pull_request", "a curriculum sampler", [
        ("m", "Thanks a lot! This fits better as a recipe under examples/ than in the core trainer, so I'll close it here. Feel free to open it again against the examples folder."),
    ]),
    ("redirected", "pull_request", "a reward server for code tasks", [
        ("m", "Nice work, but please send it to the verl-recipe repo instead; we keep the main repository small. Closing."),
    ]),
    ("redirected", "issue", "a KL warmup schedule", [
        ("m", "We already have this via the `kl_ctrl.type=adaptive` option, see the docs. Closing."),
    ]),
    ("redirected", "pull_request", "a custom logger backend", [
        ("m", "This could live as a plugin outside the main package. Closing for now."),
    ]),
    ("redirected", "issue", "online DPO with a judge", [
        ("m", "See the new OnlineDPOTrainer, which covers this use case. Closing."),
    ]),
    ("redirected", "pull_request", "a Megatron checkpoint converter", [
        ("m", "I think this belongs in the Megatron-Bridge project rather than here. Could you open it there? Closing this one."),
    ]),
    ("redirected", "issue", "multi-turn tool calling", [
        ("u", "+1, would love this"),
        ("m", "This is supported now through the agent loop; please take a look at the multi-turn section of the docs. Closing."),
    ]),
    ("redirected", "pull_request", "a new environment wrapper", [
        ("m", "Environments are maintained in a separate repository now (prime-environments). Please move this there. Closing."),
    ]),
    ("redirected", "issue", "a GSPO loss", [
        ("m", "You can already do this by setting loss_type='gspo' in the config. Closing as it is covered."),
    ]),
    ("redirected", "pull_request", "a reward model ensemble", [
        ("m", "We'd prefer this to go into the community examples rather than the library. Closing, but happy to help you port it there."),
    ]),
    ("redirected", "pull_request", "a data mixing utility", [
        ("m", "Closing: this is handled by the existing `datasets.interleave_datasets`, no need for a new helper."),
    ]),
    ("redirected", "issue", "SGLang rollout for ppo", [
        ("m", "The new async trainer supports SGLang out of the box, please use that one. Closing this."),
    ]),
    ("redirected", "pull_request", "a notebook tutorial", [
        ("m", "Notebooks go to the cookbook repo (huggingface/cookbook), not here. Closing, please reopen it over there."),
    ]),
    ("redirected", "pull_request", "a vision-language reward", [
        ("m", "This is a duplicate of what the existing `VLMRewardModel` class does; please use it instead. Closing."),
    ]),
    ("redirected", "issue", "a new sampler", [
        ("m", "Please implement this in your own fork or as an extension using the registry API; we won't add it to core. Closing."),
    ]),
    ("redirected", "pull_request", "a LoRA merge script", [
        ("m", "Would you mind moving this under scripts/contrib instead? We don't want it in the package itself. Closing this version."),
    ]),
    ("redirected", "issue", "支持 DAPO 的动态采样", [
        ("m", "这个功能已经在 recipe/dapo 里面实现了，可以直接参考那边的脚本。先关闭了。"),
    ]),
    ("redirected", "pull_request", "一个新的奖励函数", [
        ("m", "感谢贡献！这类奖励函数建议放到 examples 目录下，或者单独做成一个插件，主仓库暂时不收。先关闭。"),
    ]),
    ("redirected", "issue", "sequence packing for SFT", [
        ("m", "Packing is available already: pass `packing=True` to SFTConfig. Closing as resolved by the existing option."),
    ]),
    ("redirected", "pull_request", "a trainer for ORPO variants", [
        ("m", "Thanks! New trainers now start in trl.experimental; could you resubmit it there? Closing this one."),
    ]),
    # --- declined: a stated reason against ------------------------------------------------------
    ("declined", "issue", "TPU support", [
        ("m", "Thanks for the suggestion, but this is out of scope for the project. Closing."),
    ]),
    ("declined", "issue", "a Windows build", [
        ("m", "We don't plan to support Windows, sorry. Closing."),
    ]),
    ("declined", "pull_request", "a second rollout backend abstraction", [
        ("m", "I appreciate the effort, but this adds too much complexity for little gain. Closing."),
    ]),
    ("declined", "pull_request", "entropy bonus scheduling", [
        ("m", "We ran it on our math and code benchmarks and the results don't justify adding it. Closing, thanks for trying."),
    ]),
    ("declined", "pull_request", "an extra config flag for clipping", [
        ("m", "Thank you for the PR. After discussing it with the team we've decided against adding another flag here. Closing."),
    ]),
    ("declined", "issue", "a GUI dashboard", [
        ("m", "This isn't something we want to maintain in this repository. Closing."),
    ]),
    ("declined", "pull_request", "a custom attention kernel", [
        ("m", "Sorry, we can't take this: it ties us to one GPU generation and we have no way to test it in CI. Closing."),
    ]),
    ("declined", "issue", "reward hacking detectors", [
        ("m", "I don't think this belongs in a training library. Closing the issue."),
    ]),
    ("declined", "pull_request", "a new advantage estimator", [
        ("m", "We'll pass on this one: the gains in the table are within noise and it's another code path to keep working. Closing."),
    ]),
    ("declined", "pull_request", "support for an old torch version", [
        ("m", "We're dropping support for torch<2.4 anyway, so we won't be merging this. Thanks though!"),
    ]),
    ("declined", "issue", "a REINFORCE++ baseline variant", [
        ("m", "Unfortunately this is not a direction we want to take the library in. Closing."),
    ]),
    ("declined", "pull_request", "a refactor of the worker groups", [
        ("m", "Closing this: such a large refactor is too risky right now and the benefit is unclear."),
    ]),
    ("declined", "issue", "支持 TPU 训练", [
        ("m", "感谢建议，不过 TPU 目前不在我们的支持范围内，短期内也不会做。先关闭了。"),
    ]),
    ("declined", "pull_request", "一个新的优化器", [
        ("m", "谢谢！我们讨论后觉得收益不大，而且会增加维护成本，这个 PR 就不合入了。"),
    ]),
    ("declined", "issue", "a YAML-free config system", [
        ("m", "Respectfully, we think the current config system is the right trade-off and we'd like to keep it. Going to close this."),
    ]),
    ("declined", "pull_request", "a per-token KL penalty option", [
        ("m", "Thanks, but we have no bandwidth to review and maintain this. Closing."),
    ]),
    ("declined", "issue", "Jax backend", [
        ("m", "Closing as won't do: supporting a second framework would double the work for every feature."),
    ]),
    ("declined", "pull_request", "auto-tuning of the learning rate", [
        ("m", "I'm not in favor of this change; it hides behaviour users should set themselves. Closing."),
    ]),
    # --- look-alikes: NOT declined or redirected ------------------------------------------------
    ("closed_other", "issue", "GRPO with multiple rewards", [
        ("m", "Closing as duplicate of #4120, let's keep the discussion there."),
    ]),
    ("closed_other", "issue", "support for Qwen3 MoE", [
        ("m", "Same request as #881. Closing in favour of that issue."),
    ]),
    ("closed_other", "issue", "a faster tokenizer path", [
        ("m", "This was implemented in #3301 and released in v0.9. Closing."),
    ]),
    ("closed_other", "issue", "a fix for the eval loop", [
        ("m", "Fixed by #512, closing."),
    ]),
    ("closed_other", "issue", "how to set the rollout batch size", [
        ("m", "You can set `data.train_batch_size`; hope that answers it. Closing since the question is answered."),
    ]),
    ("closed_by_author", "pull_request", "a checkpoint resume fix", [
        ("m", "Could you rebase on main?"),
        ("a", "This got merged as part of #902 together with the other changes, so I'm closing this one."),
    ]),
    ("closed_by_author", "issue", "a reward scaling option", [
        ("m", "Have you tried reward normalization?"),
        ("a", "Oh, that works for me, thanks! Closing."),
    ]),
    ("closed_by_author", "pull_request", "an SFT packing fix", [
        ("a", "Superseded by my new PR #77 which is cleaner, closing."),
    ]),
    ("lapsed", "pull_request", "a logging tweak", [
        ("m", "Could you fix the conflicts?"),
        ("m", "Closing for now since there's been no activity; reopen if needed."),
    ]),
    ("lapsed", "pull_request", "a rollout buffer", [
        ("m", "Any update on this?"),
        ("m", "Closing, feel free to reopen if you pick it up again."),
    ]),
    ("lapsed", "issue", "a new scheduler", [
        ("b", "This issue has been automatically marked as stale because it has not had recent activity. It will be closed if no further activity occurs."),
        ("b", "This issue was closed because it has been inactive for 14 days since being marked as stale."),
    ]),
    ("lapsed", "pull_request", "a dataset loader", [
        ("m", "Closing this old PR as it's gone quiet; happy to revisit if you come back to it."),
    ]),
    ("lapsed", "pull_request", "a vLLM upgrade", [
        ("m", "This has been sitting for months and no longer applies to main. Closing, please reopen a fresh PR if still relevant."),
    ]),
    ("closed_other", "issue", "a crash with FSDP2", [
        ("m", "This should be fixed on main now, closing. Please reopen if you still see it."),
    ]),
]


def probe_rows(probes: list[tuple[str, str, str, list[tuple[str, str]]]], prefix: str,
               first_number: int) -> list[dict[str, object]]:
    """The probes as thread records with review labels (both probe files are built here)."""
    rows = []
    for i, (state, kind, topic, turns) in enumerate(probes, 1):
        author = "prop-user"
        body = (PR_BODY if kind == "pull_request" else ISSUE_BODY).format(x=topic)
        comments = []
        replied = False
        for j, (who, text) in enumerate(turns):
            login = {"a": author, "m": "maint-lee", "u": "someone-else", "b": "stale[bot]"}[who]
            replied |= who in ("m", "u")
            comment: dict[str, object] = {"author": login, "created_at": f"2026-11-{j + 2:02d}", "body": text}
            if who == "b":
                comment["author_is_bot"] = True
            comments.append(comment)
        rows.append({
            "id": f"{prefix}-{i:03d}", "repo": "example-org/rl-lib", "number": first_number + i,
            "kind": kind, "title": f"Add {topic}", "body": body, "comments": comments,
            "state": "closed", "author": author, "created_at": "2026-11-01", "complete": True,
            "labels": {"is_proposal": True, "papers": [], "review_state": state,
                       "replied_from_other": replied, "concerns": []},
        })
    return rows


def write(rows: list[dict[str, object]], out: Path) -> None:
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def main() -> None:
    write(probe_rows(PROBES, "probe-state9", 9000), OUT)


if __name__ == "__main__":
    main()
