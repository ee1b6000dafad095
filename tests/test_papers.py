"""Paper links (arXiv id, title, method name) and the visible-prose extraction they rely on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from analyzers.papers import PaperIndex, catalog_index, link_papers, normalise_title
from analyzers.text import is_template_line, strip_code, strip_html_comments, visible_text
from tests.work import assert_linear_work


def thread(title: str, body: str = "", comments: list[Any] | None = None) -> dict[str, Any]:
    return {
        "id": "o/r#1",
        "repo": "o/r",
        "number": 1,
        "kind": "issue",
        "title": title,
        "body": body,
        "state": "open",
        "comments": [
            c if isinstance(c, dict) else {"author": "u", "body": c} for c in comments or []
        ],
    }


def links(t: dict[str, Any], pool: PaperIndex | None = None) -> dict[str, dict[str, Any]]:
    return {(p["arxiv_id"] or p["title"]): p for p in link_papers(t, pool)}


POOL = [
    {
        "arxiv_id": "2601.00001",
        "title": "Spectral Entropy Anchors for Stable Policy Gradients",
        "aliases": ["SEA-PG"],
        "method": None,
        "first_public": "2026-01-01",
    },
    {
        "arxiv_id": None,
        "title": "Notes on Variance-Reduced Baselines in Grouped Rollouts",
        "aliases": [],
        "method": None,
        "first_public": None,
    },
    {
        "arxiv_id": "2405.99901",
        "title": "Triple Alpha Preference",
        "aliases": ["TAP"],
        "method": None,
    },
    {"arxiv_id": "2604.99902", "title": "Target Anchor Policy", "aliases": ["TAP"], "method": None},
]


@pytest.fixture(scope="module")
def pool() -> PaperIndex:
    return PaperIndex.build(POOL)


# ---- visible text ------------------------------------------------------------------------
def test_visible_text_drops_code_comments_and_template() -> None:
    body = (
        "### System Info\n\n- trl 0.19\n<!-- Please describe GSPO here -->\n"
        "### Reproduction\n\n```python\nGRPOConfig(loss_type='dapo')\n```\n\n"
        "- [x] I searched existing issues\nEntropy drops when training with CISPO.\n\n"
        "    indented = 'code DAPO'\n\nafter\n~~~\nunclosed GSPO\n"
    )
    out = visible_text(body)
    assert "CISPO" in out and "trl 0.19" in out and "after" in out
    for gone in ("System Info", "Reproduction", "GSPO", "dapo", "DAPO", "searched"):
        assert gone not in out
    assert out.count("\n") == body.count("\n")  # line structure kept


@pytest.mark.parametrize(
    ("line", "template"),
    [
        ("A clear and concise description of what the bug is.", True),
        ("  Please describe the problem", True),
        ("\tIf you have code snippets, paste them", True),
        ("> 1. Steps to reproduce the behavior:", True),
        ("**Expected behavior**", True),
        ("\u3000## Environment", True),
        ("Thanks, a clear and concise description of the bug.", False),
        ("| a clear and concise description of | x |", False),
        ("\u0130f you have code snippets", False),  # "İf": lower-cases to "i̇f", not "if"
        ("The run collapses after 100 steps.", False),
    ],
)
def test_template_lines_are_found_whatever_their_first_letters(line: str, template: bool) -> None:
    assert is_template_line(line) is template
    assert is_template_line(line, checkboxes=False) is template


def test_list_continuation_is_not_code() -> None:
    body = "1. first item\n\n    continuation mentions GSPO\n"
    assert "GSPO" in strip_code(body)


def test_unclosed_html_comment_hides_the_rest() -> None:
    assert strip_html_comments("a <!-- b\nc") == "a "


@pytest.mark.parametrize(
    "hostile",
    [
        "```\n" * 16000,
        "<!--" * 16000,
        "    x\n" * 10000,
        "# a\n" * 16000,
        "`" * 65536,
        "- [ ] " * 10000,
    ],
)
def test_visible_text_is_linear(hostile: str) -> None:
    assert_linear_work(visible_text, hostile)


def test_task_list_items_are_prose_for_papers_but_template_boxes_are_not() -> None:
    body = "- [x] I searched existing issues\n- [ ] Did you write any new necessary tests?\n"
    out = visible_text(body, keep_task_items=True)
    assert "I searched existing issues" in out and "necessary tests" not in out
    assert visible_text(body).strip() == ""  # the failure and proposal readers: unchanged


def test_paper_links_and_method_names_in_a_task_list() -> None:
    body = (
        "Methods in this PR:\n\n"
        "- [x] Clip-higher (https://huggingface.co/papers/2503.14476)\n"
        "- [ ] Sequence-level ratios, arXiv:2507.18071\n"
        "* [X] CISPO\n"
        "- [ ] Did you write any new necessary tests?\n"
        "<!-- - [ ] https://arxiv.org/abs/2402.03300 -->\n"
        "```\n- [x] https://arxiv.org/abs/2501.12948 in code is a link, still found\n```\n"
    )
    got = links(thread("Add methods", body))
    assert {"2503.14476", "2507.18071"} <= set(got)
    assert got["2503.14476"]["how"] == "arxiv_id"
    assert any((p["method"] or "").lower() == "cispo" or "CISPO" in p["title"]
               for p in got.values())
    assert "2402.03300" not in got  # HTML comments stay skipped


# ---- arXiv ids -----------------------------------------------------------------------------
def test_known_arxiv_id_gets_title_and_method() -> None:
    got = links(thread("Support the DAPO trick", "Paper: https://arxiv.org/abs/2503.14476v2"))
    p = got["2503.14476"]
    assert p["how"] == "arxiv_id" and p["score"] == 1.0
    assert p["title"].startswith("DAPO") and p["method"] == "clip-higher"


def test_method_the_thread_names_wins_over_the_papers_first() -> None:
    """DAPO's paper is the paper of four catalog methods; a thread citing it by id and naming
    one of them ("dynamic sampling") is about that one. The entry carried the paper's first
    method (clip-higher) whatever the thread named, so TRL's proposal to add DAPO dynamic
    sampling was listed under Clip-higher and /methods/dynamic-sampling said no thread names
    it. The paper's own name ("DAPO") names none of its methods: the first one stays."""
    body = ("Please add dynamic sampling from DAPO (https://arxiv.org/abs/2503.14476): groups "
            "whose completions all get the same reward give no gradient.")
    got = links(thread("Support DAPO dynamic sampling in GRPOTrainer", body))
    assert got["2503.14476"]["how"] == "arxiv_id"
    assert got["2503.14476"]["method"] == "dynamic-sampling"
    # the first method named wins, in the thread's order, the code spans' included
    got = links(thread("Overlong filtering", "and `clip_ratio_high` as in arXiv:2503.14476, "
                       "then clip-higher and dynamic sampling"))
    assert got["2503.14476"]["method"] == "overlong-filtering"
    got = links(thread("DAPO results", "We tried DAPO (arXiv:2503.14476) on Qwen."))
    assert got["2503.14476"]["method"] == "clip-higher"


def test_unknown_arxiv_id_is_kept_without_title() -> None:
    got = links(thread("New idea", "see arXiv:2611.04321 for details"))
    assert got["2611.04321"] == {
        "arxiv_id": "2611.04321",
        "title": "",
        "method": None,
        "how": "arxiv_id",
        "score": 1.0,
    }


def test_two_pool_papers_sharing_a_title_keep_their_own_ids() -> None:
    """Two papers of the pool with different arXiv ids and one title (a resubmission under a
    new id, two short papers both called "Position paper"): each id is its own paper. The
    second was merged into the first, its id never indexed, so a thread citing it got the
    paper with an empty title, as an id no pool knows."""
    pool = PaperIndex.build([
        {"arxiv_id": "2611.00001", "title": "Steady Rewards for Long Rollouts", "aliases": []},
        {"arxiv_id": "2611.00002", "title": "Steady Rewards for Long Rollouts", "aliases": []},
    ], include_catalog=False)
    got = links(thread("Two ids", "see arXiv:2611.00001 and arXiv:2611.00002"), pool)
    assert got["2611.00001"]["title"] == got["2611.00002"]["title"] == "Steady Rewards for Long Rollouts"
    # a pool entry with no id and the same title still completes the paper with the id
    merged = PaperIndex.build([
        {"arxiv_id": None, "title": "Steady Rewards for Long Rollouts", "aliases": ["SRLR"]},
        {"arxiv_id": "2611.00001", "title": "Steady Rewards for Long Rollouts", "aliases": []},
    ], include_catalog=False)
    assert len(merged.papers) == 1 and merged.papers[0].arxiv_id == "2611.00001"


def test_arxiv_link_in_code_block_counts_but_bare_number_does_not() -> None:
    body = "```\n# from https://arxiv.org/abs/2507.18071\nthroughput 2503.14476 tokens\n```"
    got = links(thread("logs", body))
    assert "2507.18071" in got and "2503.14476" not in got


def test_each_paper_once_with_strongest_evidence() -> None:
    t = thread(
        "Add GSPO",
        "GSPO (Group Sequence Policy Optimization) from https://arxiv.org/abs/2507.18071",
        ["GSPO again, arXiv:2507.18071"],
    )
    got = link_papers(t)
    gspo = [p for p in got if p["arxiv_id"] == "2507.18071"]
    assert len(gspo) == 1 and gspo[0]["how"] == "arxiv_id" and gspo[0]["method"] == "gspo"


# ---- titles --------------------------------------------------------------------------------
def test_exact_title(pool: PaperIndex) -> None:
    got = links(
        thread("Proposal", 'Implements "Spectral Entropy Anchors for Stable Policy Gradients".'),
        pool,
    )
    assert got["2601.00001"]["how"] == "title" and got["2601.00001"]["score"] == 1.0


def test_fuzzy_title(pool: PaperIndex) -> None:
    body = "Based on the paper Spectral Entropy Anchor for Stable Policy Gradient (ICML)."
    p = links(thread("Proposal", body), pool)["2601.00001"]
    assert p["how"] == "title" and 0.9 <= p["score"] < 1.0


def test_title_without_arxiv_id(pool: PaperIndex) -> None:
    got = link_papers(
        thread("Idea", "We follow Notes on Variance-Reduced Baselines in Grouped Rollouts."), pool
    )
    assert [(p["arxiv_id"], p["how"]) for p in got] == [(None, "title")]


def test_title_words_scattered_do_not_link(pool: PaperIndex) -> None:
    body = "Entropy is spectral here; anchors are stable and gradients explode in policy training."
    assert "2601.00001" not in links(thread("Question", body), pool)


def test_catalog_title_with_note_matches_in_a_url() -> None:
    body = "See https://example.notion.site/When-Speed-Kills-Stability-Demystifying-RL-Collapse-from-the-Training-Inference-Mismatch-2712"
    got = link_papers(thread("mismatch", body))
    assert any(p["method"] == "masked-importance-sampling" and p["how"] == "title" for p in got)


# ---- method names --------------------------------------------------------------------------
def test_acronym_in_prose_links_to_catalog_paper() -> None:
    p = links(thread("Support CISPO?", "Would be great to have it."))["2506.13585"]
    assert p["how"] == "method_name" and p["method"] == "cispo"


def test_longer_acronyms_match_in_any_case_short_ones_only_exact() -> None:
    assert "2402.03300" in links(thread("feat: dual-clip in grpo loss"))
    assert "1707.06347" not in links(thread("the ppo loss is off"))
    assert "1707.06347" in links(thread("the PPO loss is off"))


def test_names_inside_identifiers_paths_and_urls_do_not_link() -> None:
    body = (
        "I run examples/grpo_trainer.py with GRPOConfig and recipe/dapo, "
        "see https://github.com/org/GSPO-impl and grpo.py; DeepSeek-R3 too."
    )
    assert links(thread("crash", body)) == {}


def test_dataset_and_model_names_built_on_a_method_name_do_not_link() -> None:
    assert "2503.14476" not in links(thread("Trained on DAPO-17K-Math"))
    assert "2507.18071" in links(thread("A GSPO-style loss"))


def test_slash_separated_names_link_both() -> None:
    got = links(thread("Soft gates instead of hard clipping in GRPO/GSPO"))
    assert {"2402.03300", "2507.18071"} <= set(got)


def test_spelling_variants_of_a_name() -> None:
    assert "2310.10505" in links(thread("Implement Re-max"))
    assert "2503.20783" in links(thread("Support Dr.GRPO"))
    assert "2503.20783" in links(thread("Support Dr. GRPO"))


def test_longest_name_wins() -> None:
    got = links(thread("Dr. GRPO loss"))
    assert "2503.20783" in got and "2402.03300" not in got


def test_acronym_that_is_an_english_word_needs_exact_case(pool: PaperIndex) -> None:
    # TAP is ambiguous in the pool and "tap" is a word: neither links.
    assert links(thread("tap the config", "then TAP it"), pool) == {}


def test_ambiguous_name_settled_by_the_thread(pool: PaperIndex) -> None:
    got = links(thread("Add TAP", "TAP as in https://arxiv.org/abs/2604.99902"), pool)
    assert set(got) == {"2604.99902"}


def test_config_keys_are_not_method_names_but_values_in_code_are() -> None:
    body = "I set `clip_ratio_high` and `use_kl_loss` in my config."
    assert links(thread("config", body)) == {}
    got = links(thread("loss types", "Every `loss_type` (`dr_grpo`, `cispo`) divides by length."))
    assert {"2503.20783", "2506.13585"} <= set(got)


def test_generic_technique_words_do_not_link() -> None:
    body = "The KL loss and the entropy loss both grow; importance sampling is on."
    assert links(thread("KL grows", body)) == {}


def test_leading_title_tag_is_not_a_citation() -> None:
    assert "2402.03300" not in links(thread("[GRPO] Add a replay buffer"))
    assert "2402.03300" not in links(thread("fix(grpo): correct an import"))


def test_one_word_name_is_not_assembled_across_a_space() -> None:
    idx = PaperIndex.build(
        [
            {
                "arxiv_id": "2405.00675",
                "title": "Self-Play Preference Optimization",
                "aliases": ["SPPO"],
            }
        ]
    )
    got = links(thread("Hooks for OpenRLHF's PPO trainer"), idx)
    assert "2405.00675" not in got and "1707.06347" in got


def test_bot_comments_are_ignored() -> None:
    t = thread(
        "entropy collapse",
        "entropy goes to zero",
        [
            {
                "author": "rltracker[bot]",
                "author_is_bot": True,
                "body": "Try CISPO (arXiv:2506.13585)",
            },
            # GraphQL's login of the app's bot, without `[bot]`: its type tells (security71: a
            # person's comment holding the marker is read as theirs, tests/test_app_comment_author.py)
            {"author": "rltracker", "author_is_bot": True,
             "body": "<!-- rltracker:failure-comment --> GSPO"},
        ],
    )
    assert link_papers(t) == []


def test_short_name_before_title_colon_links_but_framework_names_do_not() -> None:
    got = links(thread("Support DAPO", "As in MiniMax-M1, and we run AReaL."))
    assert got["2503.14476"]["how"] == "method_name" and "2506.13585" in got
    assert "2505.24298" not in got  # the AReaL paper: a framework name is not a citation


def test_names_next_to_chinese_text() -> None:
    got = links(thread("使用GRPO训练时熵坍塌", "我们尝试了GSPO算法"))
    assert {"2402.03300", "2507.18071"} <= set(got)


def test_chinese_thread() -> None:
    got = links(
        thread("请求支持GSPO算法", "论文 https://arxiv.org/abs/2507.18071 提出了序列级重要性采样。")
    )
    assert got["2507.18071"]["how"] == "arxiv_id"


def test_index_includes_catalog_and_merges_pool() -> None:
    idx = PaperIndex.build(
        [
            {
                "arxiv_id": "2503.14476",
                "title": "DAPO: An Open-Source LLM Reinforcement Learning System at Scale",
                "aliases": ["DAPO"],
            }
        ]
    )
    assert len(idx) == len(catalog_index())
    assert idx.paper_for_arxiv("2503.14476").method == "clip-higher"
    assert normalise_title("DAPO: An Open-Source LLM (blog post)") == "dapo an open source llm"


def test_linking_is_linear_on_hostile_text() -> None:
    for hostile in ["GRPO " * 13000, "Dr." * 20000, "a-" * 32000, "熵坍塌" * 20000, "`x` " * 16000]:
        assert_linear_work(lambda text: link_papers(thread("t", text)), hostile)


# ---- shared dev set ------------------------------------------------------------------------
def test_dev_set_arxiv_links_and_names(shared_dir: Path) -> None:
    """arXiv ids: precision and recall >= 0.98; names/titles of pool papers: recall >= 0.85."""
    pool = PaperIndex.build(
        json.loads(line)
        for line in (shared_dir / "eval" / "papers.jsonl").read_text(encoding="utf-8").splitlines()
    )
    tp = fp = fn = 0
    named = named_hit = 0
    for line in (
        (shared_dir / "eval" / "dev" / "threads.jsonl").read_text(encoding="utf-8").splitlines()
    ):
        row = json.loads(line)
        gold = row["labels"].get("papers")
        if gold is None:
            continue
        got = link_papers(row, pool)
        got_ids = {p["arxiv_id"] for p in got if p["how"] == "arxiv_id"}
        gold_ids = {g["arxiv_id"] for g in gold if g["how"] == "arxiv_id" and g["arxiv_id"]}
        tp += len(got_ids & gold_ids)
        fp += len(got_ids - gold_ids)
        fn += len(gold_ids - got_ids)
        all_ids = {p["arxiv_id"] for p in got if p["arxiv_id"]}
        for g in gold:
            if g["how"] != "arxiv_id" and g["arxiv_id"] and pool.paper_for_arxiv(g["arxiv_id"]):
                named += 1
                named_hit += g["arxiv_id"] in all_ids
    assert tp / (tp + fp) >= 0.98 and tp / (tp + fn) >= 0.98
    assert named_hit / named >= 0.85


# ---- contract shape on generated text ------------------------------------------------------
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_PIECES = [
    "GRPO", "grpo", "PPO", "ppo", "Dr. GRPO", "dr_grpo", "`cispo`", "recipe/dapo", "DAPO",
    "arXiv:2503.14476v2", "https://arxiv.org/abs/2507.18071", "2506.13585", "1.2345",
    "Group Sequence Policy Optimization", "KL loss", "熵坍塌", "```\nGSPO\n```", "<!-- SAPO -->",
    "### System Info", "- [x] CISPO", "[TIS]", "TIS", "IcePop", "icepop", "\n", " ", ",", "/",
]  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.sampled_from(_PIECES), max_size=30), st.lists(st.sampled_from(_PIECES), max_size=10)
)
def test_output_keeps_the_contract_shape(body: list[str], comment: list[str]) -> None:
    got = link_papers(thread(" ".join(body[:3]), " ".join(body), [" ".join(comment)]))
    seen = set()
    for p in got:
        assert set(p) == {"arxiv_id", "title", "method", "how", "score"}
        assert p["how"] in {"arxiv_id", "title", "method_name"}
        assert 0.0 < p["score"] <= 1.0
        assert isinstance(p["title"], str)
        key = p["arxiv_id"] or p["title"]
        assert key not in seen
        seen.add(key)


# ---- the index saved and added to ----------------------------------------------------------
def _generated_pool(n: int, seed: int = 3) -> list[dict[str, Any]]:
    """Titles sharing a small vocabulary, so adding some changes which features are rare."""
    import random

    rng = random.Random(seed)
    adj = "sparse stable grouped implicit verified latent robust offline mixed tempered".split()
    noun = "rewards critics rollouts baselines verifiers advantages tokens experts".split()
    task = "math proofs code dialogue retrieval planning agents".split()
    out, seen = [], set()
    while len(out) < n:
        a, b = rng.sample(adj, 2)
        title = f"{a.title()} {rng.choice(noun).title()} with {b.title()} {rng.choice(noun).title()} for {rng.choice(task).title()}"
        if title.lower() in seen:
            continue
        seen.add(title.lower())
        out.append({"arxiv_id": f"2601.{len(out):05d}" if len(out) % 3 else None,
                    "title": title, "aliases": [], "method": None})
    return out


def test_saved_index_reads_back_equal_and_links_the_same() -> None:
    papers = POOL + _generated_pool(200)
    built = PaperIndex.build(papers)
    loaded = PaperIndex.loads(built.dumps())
    thread = {"title": "Entropy", "body": f'We follow "{papers[-1]["title"]}" and TAP with GRPO.',
              "comments": []}
    assert link_papers(thread, loaded) == link_papers(thread, built)
    assert any(p["title"] == papers[-1]["title"] for p in link_papers(thread, loaded))
    assert loaded == built


@pytest.mark.parametrize("damage", ["truncated", "flipped", "not_an_index", "other_version",
                                    "header_cut", "body_missing"])
def test_damaged_or_foreign_saved_index_is_refused(damage: str) -> None:
    from analyzers.papers import _MAGIC, index_tag

    data = PaperIndex.build(_generated_pool(50)).dumps()
    digest_end = data.index(b"\n", data.index(b"\n", len(_MAGIC)) + 1)
    if damage == "truncated":
        data = data[: len(data) // 2]
    elif damage == "header_cut":  # the tag line, then nothing: no digest line
        data = data[: data.index(b"\n", len(_MAGIC)) + 20]
    elif damage == "body_missing":
        data = data[: digest_end + 1]
    elif damage == "flipped":
        data = data[:-10] + bytes([data[-10] ^ 0xFF]) + data[-9:]
    elif damage == "not_an_index":
        data = b'{"title": "a paper pool line"}\n'
    else:
        data = data.replace(index_tag().encode(), b"0:0000.00.00-0:0000000000000000", 1)
    with pytest.raises(ValueError):
        PaperIndex.loads(data)


@pytest.mark.parametrize("saved", [False, True], ids=["in_memory", "read_back"])
def test_adding_papers_equals_building_from_scratch(saved: bool) -> None:
    papers = _generated_pool(400)
    extra = [
        *papers[360:],
        {"arxiv_id": None, "title": papers[5]["title"].upper(), "aliases": ["SRV"], "method": None},
        {"arxiv_id": "2601.00004", "title": "", "aliases": ["QRC-2"], "method": "qrc"},
    ]
    index = PaperIndex.build(papers[:360])
    if saved:
        index = PaperIndex.loads(index.dumps())
    index.add_papers(extra)
    full = PaperIndex.build(papers[:360] + extra)
    assert index == full
    # Some titles already there had to be keyed again for this to hold.
    before = PaperIndex.build(papers[:360])
    assert any(before._titles[i].keys != full._titles[i].keys for i in range(len(before._titles)))


def test_a_merge_that_gives_a_paper_its_title_equals_a_rebuild() -> None:
    papers = [{"arxiv_id": "2601.99999", "title": "", "aliases": ["ZQX"], "method": None},
              *_generated_pool(60)]
    filled = {"arxiv_id": "2601.99999", "title": "Grouped Zeta Rollouts for Sparse Verifiers",
              "aliases": [], "method": None}
    index = PaperIndex.loads(PaperIndex.build(papers).dumps())
    index.add_papers([filled])
    assert index == PaperIndex.build([*papers, filled])


@pytest.mark.parametrize("collector_on", [True, False])
def test_building_and_reading_leave_the_collector_as_they_found_it(collector_on: bool) -> None:
    # Both pause the cyclic collector while they make their objects, then restore it.
    import gc

    was = gc.isenabled()
    (gc.enable if collector_on else gc.disable)()
    try:
        built = PaperIndex.build(_generated_pool(30))
        assert gc.isenabled() is collector_on
        assert PaperIndex.loads(built.dumps()) == built
        assert gc.isenabled() is collector_on
        with pytest.raises(ValueError):
            PaperIndex.loads(built.dumps()[:-100])
        assert gc.isenabled() is collector_on
    finally:
        (gc.enable if was else gc.disable)()


# ---- the linker's C-level scans against their plain definitions ----------------------------
from analyzers.papers import _TOKEN_RE, TITLE_STOPWORDS, _stem, _tokens  # noqa: E402

_TOKEN_CHARS = list("aZz09+ -./_`\n\t") + ["熵", "é", "\u212a", "\u0130", "\ud800", "\u00a0"]


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(alphabet=st.sampled_from(_TOKEN_CHARS), max_size=60), st.text(max_size=60)))
def test_tokens_are_the_token_expressions_matches(text: str) -> None:
    """Words from the C-level split, offsets made on demand: the same as finditer."""
    toks = _tokens(text)
    matches = list(_TOKEN_RE.finditer(text))
    assert toks.words == [m.group(0) for m in matches]
    assert toks.lows == [m.group(0).lower() for m in matches]
    assert toks.offsets() == ([m.start() for m in matches], [m.end() for m in matches])
    assert len(toks) == len(matches)


def _key_places_reading_every_token(
    index: PaperIndex, lows: list[str]
) -> tuple[dict[str, list[int]], dict[str, list[int]]]:
    """The title scan as first written: every token read in order."""
    positions: dict[str, list[int]] = {}
    solo_pos: dict[str, list[int]] = {}
    prev_w: str | None = None
    prev2_w: str | None = None
    prev_pos = prev2_pos = -1
    for pos, w in enumerate(lows):
        if w in TITLE_STOPWORDS or len(w) < 2:
            continue
        w = _stem(w)
        if w not in index._title_vocab:
            prev2_w, prev2_pos = prev_w, prev_pos
            prev_w = None
            continue
        if w in index._postings:
            positions.setdefault(w, []).append(pos)
        if w in index._solo_postings:
            solo_pos.setdefault(w, []).append(pos)
        if prev_w is not None and prev_w + " " + w in index._postings:
            positions.setdefault(prev_w + " " + w, []).append(prev_pos)
        if prev2_w is not None and prev2_w + " _ " + w in index._postings:
            positions.setdefault(prev2_w + " _ " + w, []).append(prev2_pos)
        prev2_w, prev2_pos = prev_w, prev_pos
        prev_w, prev_pos = w, pos
    return positions, solo_pos


_KEYED_POOL = PaperIndex.build(POOL + _generated_pool(60))
_TITLE_WORDS = sorted({w for p in POOL + _generated_pool(60) for w in normalise_title(p["title"]).split()})
_SCAN_WORDS = (
    _TITLE_WORDS + [w + "s" for w in _TITLE_WORDS] + [w[:-1] for w in _TITLE_WORDS]
    + ["the", "of", "policy", "trains", "train", "a", "x", "7", "grpo", "reward", "unrelated"]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_SCAN_WORDS), max_size=40))
def test_title_key_places_are_those_of_reading_every_token(lows: list[str]) -> None:
    got = _KEYED_POOL._key_places(lows)
    assert got == _key_places_reading_every_token(_KEYED_POOL, lows)
    assert [list(d) for d in got] == [list(d) for d in _key_places_reading_every_token(_KEYED_POOL, lows)]


def test_a_loaded_index_finds_long_names_where_the_built_one_does() -> None:
    """The name scan remembers its decision per stretch of text as long as the longest name;
    a loaded index must know that length too, or a near miss ("... Policy Optimizer") is
    remembered for the name written out in full a little further on."""
    built = PaperIndex.build([])
    loaded = PaperIndex.loads(built.dumps())
    body = (
        "x Clipped Importance Sampling Weight Policy Optimizer, and Clipped Importance "
        "Sampling Weight Policy Optimization."
    )
    assert [p["method"] for p in link_papers(thread("x", body), built)] == ["cispo"]
    assert link_papers(thread("x", body), loaded) == link_papers(thread("x", body), built)


# ---- review 34 ---------------------------------------------------------------------------
def test_old_style_id_with_subject_class_finds_the_pool_paper() -> None:
    pool = PaperIndex.build(
        [{"arxiv_id": "math/0601001", "title": "Random walks on something rare"},
         {"arxiv_id": "arXiv:2601.00077v2", "title": "A pool id written with its prefix"}]
    )
    got = link_papers(thread("q", "see arXiv:math.PR/0601001 and math/0601001, 2601.00077"), pool)
    assert [(p["arxiv_id"], p["title"]) for p in got] == [
        ("math/0601001", "Random walks on something rare"),
        ("2601.00077", "A pool id written with its prefix"),
    ]


_PHRASE_POOL = [
    {"arxiv_id": "2601.00011", "title": "Reward is enough"},
    {"arxiv_id": "2601.00012", "title": "Let's Verify Step by Step"},
    {"arxiv_id": "2601.00013", "title": "Attention Is All You Need"},
    {"arxiv_id": "2601.00014", "title": "Learning to Reason"},
]


@pytest.mark.parametrize(
    "body",
    [
        "I think the reward is enough to learn from here.",
        "let's verify step by step that the fix works",
        "More attention is all you need to give the logs.",
        "the policy is learning to reason now",
    ],
)
def test_titles_that_read_as_a_sentence_do_not_link_from_ordinary_prose(body: str) -> None:
    pool = PaperIndex.build(_PHRASE_POOL)
    assert [p for p in link_papers(thread("q", body), pool) if p["how"] == "title"] == []


@pytest.mark.parametrize(
    ("body", "arxiv_id"),
    [
        ("As in Reward Is Enough (Silver et al.), the signal suffices.", "2601.00011"),
        ('The paper "reward is enough" argues this.', "2601.00011"),
        ("See “Let’s verify step by step” for process rewards.", "2601.00012"),
        ("Like *Let's Verify Step by Step*, we label steps.", "2601.00012"),
        ("Attention Is All You Need introduced it.", "2601.00013"),
        ("论文《Attention is all you need》提出了", "2601.00013"),
        ("as shown in Learning to Reason, the policy", "2601.00014"),
    ],
)
def test_titles_that_read_as_a_sentence_link_when_written_as_a_title(body: str, arxiv_id: str) -> None:
    pool = PaperIndex.build(_PHRASE_POOL)
    got = [(p["arxiv_id"], p["how"]) for p in link_papers(thread("q", body), pool)]
    assert got == [(arxiv_id, "title")]


@pytest.mark.parametrize(
    "body",
    ["run it with --gspo and --remax", "python train.py --icepop", "the --M2PO flag"],
)
def test_command_line_flags_are_not_method_names(body: str) -> None:
    assert link_papers(thread("q", body)) == []


def test_a_name_after_a_dash_in_prose_still_links() -> None:
    assert [p["method"] for p in link_papers(thread("q", "baselines - GSPO and ReMax"))] == [
        "gspo",
        "remax",
    ]


def test_a_flag_and_a_dashed_name_are_decided_apart_in_one_text() -> None:
    """The decision at a name depends on the two characters before it: a text with both
    " -GSPO" (a list item) and "--GSPO" (a flag) links the first and not the second."""
    assert [p["method"] for p in link_papers(thread("q", "x --gspo and y -gspo"))] == ["gspo"]
    body = "run --gspo first.\n\n-gspo is what we compare"
    got = link_papers(thread("q", body))
    assert [p["method"] for p in got] == ["gspo"]


@pytest.mark.parametrize(
    ("body", "method"),
    [
        ("we compared both GRPOs on the same data", "grpo"),
        ("the two PPOs here differ in clipping", "ppo"),
        ("GSPOs and the like", "gspo"),
    ],
)
def test_an_acronym_in_the_plural_names_the_method(body: str, method: str) -> None:
    assert [p["method"] for p in link_papers(thread("q", body))] == [method]


@pytest.mark.parametrize("body", ["grpos are here", "the PPOS value", "use TISs", "Tiss"])
def test_plural_only_as_the_acronym_plus_a_small_s(body: str) -> None:
    got = [p["method"] for p in link_papers(thread("q", body))]
    assert got in ([], ["tis"]) and ("TISs" in body) == (got == ["tis"])


@pytest.mark.parametrize(
    "hostile",
    [
        "GRPOs PPOs " * 6000,
        "--gspo -gspo " * 5000,
        "the reward is enough " * 3100,
        "“Reward Is Enough” " * 3400,
        "learning to reason " * 3400,
        "version 2401.12345 MiB 12:00:00\n" * 2000,
        "math.PR/0601001 arXiv.cs/0112017 " * 2000,
    ],
)
def test_linking_is_linear_on_hostile_text_of_this_review(hostile: str) -> None:
    pool = PaperIndex.build(_PHRASE_POOL)
    assert_linear_work(lambda text: link_papers(thread("t", text), pool), hostile)


def test_a_pool_row_stored_with_a_lower_case_subject_class_is_found() -> None:
    """Imports before review 34 stored math.PR/0601001 as math.pr/0601001."""
    pool = PaperIndex.build([{"arxiv_id": "math.pr/0601001", "title": "Random walks on something rare"}])
    got = link_papers(thread("q", "see arXiv:math/0601001"), pool)
    assert [(p["arxiv_id"], p["title"]) for p in got] == [("math/0601001", "Random walks on something rare")]
