"""arXiv identifiers: every written form found once, look-alikes rejected, linear on hostile text."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzers.arxiv import (
    classify_link,
    find_arxiv_ids,
    find_arxiv_mentions,
    valid_new_style,
    valid_old_style,
)
from tests.work import assert_linear_work


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The DAPO paper 2503.14476 adds clip-higher.", ["2503.14476"]),
        ("see 2503.14476v2", ["2503.14476"]),
        ("arXiv:2503.14476", ["2503.14476"]),
        ("arXiv: 2503.14476v3", ["2503.14476"]),
        ("(arXiv 2507.18071)", ["2507.18071"]),
        ("arxiv.2507.18071", ["2507.18071"]),
        ("https://arxiv.org/abs/2503.14476", ["2503.14476"]),
        ("https://arxiv.org/pdf/1707.06347.pdf", ["1707.06347"]),
        ("https://arxiv.org/pdf/2510.11370v1", ["2510.11370"]),
        ("https://arxiv.org/html/2501.03262v1 and more", ["2501.03262"]),
        ("https://www.arxiv.org/abs/2508.09726", ["2508.09726"]),
        ("http://export.arxiv.org/abs/2503.14476", ["2503.14476"]),
        ("https://www.alphaxiv.org/abs/2507.18071", ["2507.18071"]),
        ("https://www.alphaxiv.org/overview/2507.18071v2", ["2507.18071"]),
        ("[SAPO](https://huggingface.co/papers/2511.20347)", ["2511.20347"]),
        ("doi: 10.48550/arXiv.2503.14476", ["2503.14476"]),
        ("https://doi.org/10.48550/ARXIV.2503.14476", ["2503.14476"]),
        ("Adam (1412.6980) is old.", ["1412.6980"]),
        ("old style cs/0112017 and math.GT/0309136", ["cs/0112017", "math/0309136"]),
        ("https://arxiv.org/abs/hep-th/9901001v2", ["hep-th/9901001"]),
        ("论文 2503.14476 提出了 clip-higher", ["2503.14476"]),
        ("论文2503.14476提出了", ["2503.14476"]),
        ("Papers: 2503.14476, 2507.18071, 2506.13585.", ["2503.14476", "2507.18071", "2506.13585"]),
        ("eprint={2503.14476},", ["2503.14476"]),
        ("**2503.14476**", ["2503.14476"]),
        ("paper:2503.14476", ["2503.14476"]),
    ],
)
def test_forms_are_found(text: str, expected: list[str]) -> None:
    assert find_arxiv_ids(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "vllm 0.10.1 with torch 2.7.1",
        "version 2503.14476.1",
        "build 12503.14476",
        "2503.144761",
        "decimals 1.2345 and 2023.12345 and 3.14159",
        "server at 192.168.1.1 and 10.0.0.12",
        "see PR #2503 and issue 1447",
        "dated 2025.03.18 or 2025-03-18",
        "v2503.14476",
        "step 1300.12 loss 0.5 reward 1203.4567 kl 1104.1234",
        "| 1203.4567 | 1104.1234 | 0.25 |",
        "path/2503.14476",
        "commit abc2503.14476",
        "month 13: 2513.12345",
        "too early 0612.1234",
        "wrong digits 2503.1447",
        "src/0112017",
        "cs/0113017",
        "https://github.com/org/repo/pull/2503",
        "x=2503.14476",
        "at 12:1203.4567",
    ],
)
def test_look_alikes_are_rejected(text: str) -> None:
    assert find_arxiv_ids(text) == []


def test_each_paper_once_in_order_of_first_appearance() -> None:
    text = (
        "GSPO https://arxiv.org/abs/2507.18071v1, DAPO arXiv:2503.14476, "
        "again [2507.18071](https://arxiv.org/pdf/2507.18071v2)"
    )
    assert find_arxiv_ids(text) == ["2507.18071", "2503.14476"]
    forms = [m.form for m in find_arxiv_mentions(text)]
    assert forms[:2] == ["link", "prefixed"]


def test_validity_rules() -> None:
    assert valid_new_style("0704.0001")
    assert valid_new_style("1412.6980")
    assert not valid_new_style("1412.69801")
    assert valid_new_style("1501.00001")
    assert not valid_new_style("1501.0001")
    assert not valid_new_style("2500.12345")
    assert valid_old_style("cs/0112017")
    assert not valid_old_style("xx/0112017")


def test_classify_link() -> None:
    assert classify_link("https://arxiv.org/abs/2503.14476v2") == ("arxiv", "2503.14476")
    assert classify_link("https://www.alphaxiv.org/abs/2503.14476") == ("alphaxiv", "2503.14476")
    assert classify_link("https://huggingface.co/papers/2511.20347") == (
        "huggingface",
        "2511.20347",
    )
    assert classify_link("https://doi.org/10.48550/arXiv.2503.14476") == ("doi", "2503.14476")
    assert classify_link("https://github.com/verl-project/verl/pull/2503") is None


@pytest.mark.parametrize(
    "hostile",
    [
        "1" * 65536,
        "1." * 32768,
        "2503." * 13107,
        "2503.14476 " * 5957,
        "[(" * 32768,
        "熵" * 65536,
        "arxiv.org/abs/" * 4681,
        "cs/" * 21845,
        ("1111 " * 80 + "2503.14476\n") * 160,
        "loss: 2401.12345 MiB\n" * 3120,
        "12:00:00 2401.12345 " * 3276,
        "version " * 8000 + "2401.12345",
        "a" * 65526 + " 2401.12345",
        "x" * 40 + "1.2" * 21000,
        "arXiv.cs/0112017 " * 3855,
        "math.PR/0601001 " * 4096,
    ],
)
def test_linear_on_hostile_input(hostile: str) -> None:
    assert_linear_work(find_arxiv_ids, hostile)
    # every mention, not only the first of each id: the per-id context checks run each time
    assert_linear_work(find_arxiv_mentions, hostile)


@st.composite
def new_style_ids(draw: st.DrawFn) -> str:
    yy = draw(st.integers(min_value=7, max_value=30))
    mm = draw(st.integers(min_value=4 if yy == 7 else 1, max_value=12))
    yymm = f"{yy:02d}{mm:02d}"
    width = 5 if int(yymm) >= 1501 else 4
    num = draw(st.integers(min_value=1, max_value=10**width - 1))
    return f"{yymm}.{num:0{width}d}"


_FORMS = [
    "{id}",
    "{id}v{v}",
    "arXiv:{id}",
    "arXiv:{id}v{v}",
    "https://arxiv.org/abs/{id}v{v}",
    "https://arxiv.org/pdf/{id}.pdf",
    "https://www.alphaxiv.org/abs/{id}",
    "https://huggingface.co/papers/{id}",
    "10.48550/arXiv.{id}",
    "[paper](https://arxiv.org/abs/{id})",
]
# No "b", "h", "m": a unit after a bare id ("2401.12345 h", "... min", "... kb") makes it a
# measurement, not a paper; the noise spells no unit.
_noise = st.text(
    alphabet=st.sampled_from(list("acdefgij klnop,;!?()\n熵坍塌训练")), max_size=40
).map(lambda s: s.strip(".-"))


@settings(max_examples=200, deadline=None)
@given(
    ids=st.lists(new_style_ids(), min_size=1, max_size=4, unique=True),
    forms=st.lists(st.sampled_from(_FORMS), min_size=4, max_size=4),
    version=st.integers(min_value=1, max_value=12),
    noise=st.lists(_noise, min_size=5, max_size=5),
)
def test_generated_ids_in_noise_are_found(
    ids: list[str], forms: list[str], version: int, noise: list[str]
) -> None:
    parts = [noise[0]]
    for i, ident in enumerate(ids):
        parts.append(forms[i].format(id=ident, v=version))
        parts.append(noise[i + 1])
    text = " ".join(parts)
    assert find_arxiv_ids(text) == ids


@settings(max_examples=100, deadline=None)
@given(ident=new_style_ids(), version=st.integers(min_value=1, max_value=99))
def test_versions_normalise(ident: str, version: int) -> None:
    assert find_arxiv_ids(f"{ident}v{version}") == [ident]
    assert find_arxiv_ids(f"arXiv:{ident}v{version} and {ident}") == [ident]


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("0123456789.")), max_size=60))
def test_digit_soup_only_yields_valid_ids(text: str) -> None:
    for ident in find_arxiv_ids(text):
        assert valid_new_style(ident)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("0123456789. a/v") + ["٣", "０"]), max_size=40))
def test_text_without_a_dot_before_four_digits_has_no_new_style_id(text: str) -> None:
    """find_arxiv_mentions skips the id scan of such text: nothing it would find is lost."""
    from analyzers.arxiv import _NEW_ONLY_RE, _NEW_TAIL_RE

    if _NEW_ONLY_RE.search(text):
        assert _NEW_TAIL_RE.search(text)
    else:
        assert not [m for m in find_arxiv_mentions(text) if "/" not in m.arxiv_id]


# ---- review 34 ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # ar5iv renders arXiv papers as HTML under its own domain
        ("https://ar5iv.org/abs/2401.12345", ["2401.12345"]),
        ("see https://ar5iv.org/html/1412.6980 for the HTML", ["1412.6980"]),
        ("https://ar5iv.labs.arxiv.org/html/2401.12345v2", ["2401.12345"]),
        # DataCite DOIs of pre-2007 papers hold the old-style id
        ("doi: 10.48550/arXiv.math/0211159", ["math/0211159"]),
        ("https://doi.org/10.48550/arXiv.hep-th/9901001", ["hep-th/9901001"]),
    ],
)
def test_ar5iv_links_and_old_style_dois(text: str, expected: list[str]) -> None:
    assert find_arxiv_ids(text) == expected


def test_ar5iv_link_is_classified_as_arxiv() -> None:
    assert classify_link("https://ar5iv.org/abs/2401.12345") == ("arxiv", "2401.12345")


@pytest.mark.parametrize(
    "text",
    [
        "math.PR/0601001",
        "arXiv:math.PR/0601001v2",
        "https://arxiv.org/abs/math.PR/0601001",
        "math/0601001",
        "MATH.pr/0601001",
    ],
)
def test_subject_class_is_not_part_of_an_old_style_id(text: str) -> None:
    """arXiv's old-style identifier is archive/YYMMNNN; "math.PR" names the same paper as
    "math", so the pool (which stores math/0601001) and one thread's two spellings meet."""
    assert find_arxiv_ids(text) == ["math/0601001"]
    assert find_arxiv_ids(f"{text} and math/0601001") == ["math/0601001"]


@pytest.mark.parametrize(
    "text",
    [
        "version 2401.12345 of the package",
        "upgraded to release 2401.12345",
        "build v 2401.12345",
        "took 2401.12345 seconds",
        "elapsed 2401.12345 ms",
        "peak memory 2401.12345 MiB",
        "2401.12345 GB of cache",
        "throughput 2401.12345 tokens/s",
        "2024-01-15 10:23:45,123 INFO step 2401.12345",
        "[2024-01-15 10:23:45] step 1203.4567",
        "grad_norm: 1203.4567",
        "loss: 2401.12345",
        "Loss: 2401.12345",
        "Reward = 1203.4567",
        "train/reward: 1203.4567",
    ],
)
def test_numbers_in_version_strings_log_lines_and_measurements_are_not_papers(text: str) -> None:
    assert find_arxiv_ids(text) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("the paper 2401.12345 shows", ["2401.12345"]),
        ("see 2401.12345 (GSPO) for details", ["2401.12345"]),
        ("paper: 2401.12345", ["2401.12345"]),
        ("2401.12345 is the paper", ["2401.12345"]),
        ("arXiv:2401.12345 took 3 seconds to read", ["2401.12345"]),
        ("version: see arXiv:2401.12345v2", ["2401.12345"]),
        # a method's name as the key: a list of papers, not a log
        ("DAPO: 2503.14476, GSPO: 2507.18071", ["2503.14476", "2507.18071"]),
        ("- Dr. GRPO: 2503.20783", ["2503.20783"]),
        ("GSPO：2507.18071", ["2507.18071"]),
        ("ReMax = 2310.10505", ["2310.10505"]),
    ],
)
def test_ids_next_to_ordinary_words_still_count(text: str, expected: list[str]) -> None:
    assert find_arxiv_ids(text) == expected


def test_two_letter_archive_after_arxiv_dot() -> None:
    assert find_arxiv_ids("https://doi.org/10.48550/arxiv.cs/0112017") == ["cs/0112017"]
    assert find_arxiv_ids("arXiv.cs/0112017v1") == ["cs/0112017"]
