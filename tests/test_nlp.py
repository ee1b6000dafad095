"""analyzers.nlp: the shared blank spaCy pipeline and its helpers (owner: analyzers helper)."""

from __future__ import annotations

import re
from itertools import islice

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzers import failures, nlp, review
from tests.fresh import run_fresh
from tests.work import assert_linear_work


def test_pipeline_lemmatises_lower_case_offline() -> None:
    lemmas = [t.lemma_ for t in nlp.doc("Collapsed entropy. Rewards were dropping")]
    assert lemmas[:1] == ["collapse"]
    assert "reward" in lemmas and "drop" in lemmas


def test_function_word_lemmas_fixed() -> None:
    # spaCy's table reads "does" as the plural of "doe" and splits "can't" into "ca" + "n't"
    assert [t.lemma_ for t in nlp.doc("It doesn't, can't, won't")] == [
        "it", "do", "not", ",", "can", "not", ",", "will", "not",
    ]


def test_sentences_split_on_punctuation() -> None:
    assert nlp.sentences("Entropy fell at step 10. Then reward rose!  Why?") == [
        "Entropy fell at step 10.",
        "Then reward rose!",
        "Why?",
    ]
    assert nlp.sentences(None) == []


def test_phrase_matcher_matches_inflections() -> None:
    matcher = nlp.phrase_matcher({"collapse": ["entropy collapse"], "drop": ["reward drop"]})
    hits = nlp.matches(matcher, nlp.doc("The Entropy collapsed, then rewards dropped."))
    assert [(h.label, h.text) for h in hits] == [
        ("collapse", "Entropy collapsed"),
        ("drop", "rewards dropped"),
    ]


def test_token_matcher_from_data() -> None:
    matcher = nlp.token_matcher({"kl_up": [[{"LOWER": "kl"}, {"LEMMA": {"IN": ["grow", "rise"]}}]]})
    hits = nlp.matches(matcher, nlp.doc("Our KL grows every step"))
    assert [h.label for h in hits] == ["kl_up"]


def test_substring_table_for_chinese() -> None:
    table = nlp.SubstringTable({"entropy_collapse": ["熵坍塌", "熵崩溃"], "mismatch": ["训推不一致"]})
    hits = table.find("训练过程中出现熵崩溃，并且训推不一致")
    assert [h.label for h in hits] == ["entropy_collapse", "mismatch"]
    assert nlp.has_cjk("熵") and not nlp.has_cjk("entropy")


def test_split_markdown_separates_code_and_template_comments() -> None:
    text = (
        "Entropy goes down.\n```\nTraceback (most recent call last):\n```\n"
        "<!-- Describe the bug -->after\n\n    indented log line\nback to prose"
    )
    split = nlp.split_markdown(text)
    assert "Traceback" in split.code and "Traceback" not in split.prose
    assert "Describe the bug" not in split.prose
    assert "indented log line" in split.code
    assert "back to prose" in split.prose
    # an unclosed fence swallows the rest as code, linearly
    assert nlp.split_markdown("a\n```\nlog\nlog").code == "log\nlog"


def test_hostile_inputs_are_bounded() -> None:
    for body in ("1." * 40_000, "[" * 70_000, "熵" * 70_000, "<!--" * 20_000, "```\n" * 20_000):
        assert_linear_work(nlp.split_markdown, body)
        assert_linear_work(nlp.doc, body)


_TERMS = ["hang", "out of memory", "报错", "c++", "oom", "a-b", "x.y", "-x", "nan loss", "z"]
_TERM_PIECES = [*_TERMS, "hangs", "change", "of", "out", "memory", "c", "+", "-", ".", " ", "_", "1",
                "报", "错", "a", "b", "x", "y", "é", "zz", "\n"]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_TERM_PIECES), max_size=25), st.integers(min_value=0, max_value=4))
def test_term_set_finds_what_a_scan_of_every_term_finds(pieces: list[str], limit: int) -> None:
    # The first term and the counts are those of trying every term at every position and
    # checking its boundaries.
    text = "".join(pieces)
    terms = nlp.TermSet(_TERMS)

    def hits(term: str, left: bool, right: bool) -> list[int]:
        found = []
        for pos in range(len(text)):
            end = pos + len(term)
            if not text.startswith(term, pos):
                continue
            if left and pos > 0 and text[pos - 1].isascii() and text[pos - 1].isalnum():
                continue
            if right and end < len(text) and text[end].isascii() and text[end].isalnum():
                continue
            found.append(pos)
        return found

    every = [(term, hits(term, left, right)) for term, left, right in terms.terms]
    assert terms.search(text) == next((term for term, found in every if found), None)
    total, first = 0, None
    for term, found in every:
        for _ in found[: limit - total]:
            total += 1
            first = first or term
        if total >= limit:
            break
    assert terms.count(text, limit) == (total, first)


def test_term_set_word_boundaries_and_cjk() -> None:
    terms = nlp.TermSet(["hang", "out of memory", "报错", "c++"])
    assert terms.search("the job hangs") is None  # "hang" is not the word "hangs"
    assert terms.search("it will hang forever") == "hang"
    assert terms.search("please change it") is None
    assert terms.search("cuda out of memory.") == "out of memory"
    assert terms.search("运行时报错了") == "报错"
    assert terms.count("hang, hang, hang", limit=2) == (2, "hang")
    # Absent terms are skipped before the boundary scan; counts and the first term are those
    # of the full scan (longest term first, limits over all terms, no hits at limit 0).
    assert terms.count("please change it, hang on: out of memory", limit=3) == (2, "out of memory")
    assert terms.count("hang on, c++ code; c++", limit=2) == (2, "hang")
    assert terms.count("hang", limit=0) == (0, None)
    assert not nlp.TermSet([])
    assert_linear_work(lambda text: terms.count(text, limit=5), "hang" * 20_000 + " hang")


def test_pattern_files_load_as_safe_load_reads_them() -> None:
    # load_patterns uses libyaml's C loader when present: the data must be what the pure
    # Python safe loader gives, for every vocabulary file of the analyzers.
    import yaml

    from analyzers import failures, proposals, review

    for path in (failures.PATTERNS_FILE, proposals.PATTERNS_FILE, review._PATTERNS_FILE):
        fast, plain = nlp.load_patterns(path), yaml.safe_load(path.read_text(encoding="utf-8"))
        assert fast == plain and repr(fast) == repr(plain)  # types and key order too


def test_lemmas_are_the_same_for_new_and_known_words() -> None:
    # Lemmas of words never seen before are computed and cached within the doc; a word that
    # repeats in the same doc, and the same text again, read the cache: same lemmas.
    text = "Qwzlrxes collapsed, qwzlrxes Collapsed; it does collapse. Qwzlrxes"
    first = [t.lemma_ for t in nlp.doc(text)]
    assert first == [t.lemma_ for t in nlp.doc(text)]
    assert first[0] == first[3] == first[-1] == "qwzlrxes"
    assert first[1] == first[4] == first[8] == "collapse" and first[7] == "do"


# --- CaselessPattern: the fast count is the count IGNORECASE gives ---------------------------

_PIECES = [
    "We propose", "i INTRODUCE", "this PR adds", "This paper presents", "our Method", "OUR approach",
    "arXiv.org/abs/1", "ARXIV", "paper", "papers", "My run", "we are training", "I've also tried",
    "Fine-tuned", "after 200 steps", "AT STEP 5", "over 3k iterations", "30 epochs", "300步",
    "论文", "我们提出", "我的训练", "我们在训练", "İ", "ı", "ſ", "\u212a", "K", "_", "-", " ", "\n",
    "x", "use", "our", "add", "step", "9", "github.com/o/r/blob/main/a.py#L12", "#l3", "Line  40",
    # ASCII text takes the re.ASCII alternation, unless it holds a control space (\x1c-\x1f)
    "\x1c", "\x1f", "é", "3\x1esteps", "we\x1dare training",
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=40))
def test_caseless_count_equals_ignorecase_finditer(pieces: list[str]) -> None:
    text = "".join(pieces)
    for pattern in (
        failures._PITCH, failures._OWN_RUN, failures._STEPS, failures._CODE_ANALYSIS, failures._ASKS_HOW,
        failures._PREFERENCE,
    ):  # fmt: skip
        for limit in (1, 3):
            expected = len(list(islice(pattern.ignorecase.finditer(text), limit)))
            assert pattern.count(text, limit) == expected, (pattern.ignorecase.pattern, text)
            assert pattern.count(nlp.CaselessText.of(text), limit) == expected, (pattern.ignorecase.pattern, text)


def test_caseless_pattern_refuses_upper_case_letters() -> None:
    with pytest.raises(ValueError):
        nlp.CaselessPattern((r"\bGRPO\b", ("grpo",)))
    with pytest.raises(ValueError):
        nlp.CaselessPattern((r"\bgrpo\b", ("GRPO",)))


def test_remembering_tokenizer_gives_spacys_tokens() -> None:
    # The shared pipeline's tokenizer remembers its affix and URL expressions per string; a
    # fresh blank English tokenizer must give the same tokens, twice over (the second pass
    # reads what the first remembered).
    import spacy

    plain = spacy.blank("en").tokenizer
    texts = [
        "It's broken, isn't it? (e.g. the KL's value) don't... I'm sure: it's 3.5x slower!",
        "See https://arxiv.org/abs/2503.14476v2, or www.example.com/a-b_c?x=1; e-mail a@b.co.",
        '"Entropy-collapse" after ~200 steps -- reward=0.0, loss: nan; [GRPO] (DAPO-style) etc.',
        "can't won't shouldn't y'all 'cause o'clock U.S. a.m. 10km 5kg $3.50 #42 @user :) <3",
        "熵坍塌了，reward一直为0。It's fine (really).",
        "Line one\nC++ (o_O) it's\n\n  don't\tstop -_- 'quoted'\n\u2014 done\xa0now",
    ]
    for _ in range(2):
        for text in texts:
            ours = nlp.nlp().tokenizer(text)
            theirs = plain(text)
            assert [(t.text, t.whitespace_, t.norm_) for t in ours] == [
                (t.text, t.whitespace_, t.norm_) for t in theirs
            ]


_SENTENCE_PIECES = [
    "Entropy fell", ".", "!", "?", "...", "?!", "。", "！", "？", "．", "‼", "\"", "'", ")", "(", "]",
    "-", ":", ";", ",", " ", "  ", "\n", "\n\n", "\t", "e.g.", "U.S.", "3.5", "it's", "reward",
    "熵坍塌", "https://x.org/a.b", "*", "`", "'s",
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_SENTENCE_PIECES), max_size=30))
def test_sentence_starts_are_spacys_sentencizer(pieces: list[str]) -> None:
    # The shared pipeline's sentencizer reads spaCy's rule from the token arrays: the same
    # flags on every token as spaCy's own Sentencizer, and the same sentences.
    from spacy.attrs import SENT_START
    from spacy.pipeline import Sentencizer

    text = "".join(pieces)
    ours = nlp.nlp().get_pipe("sentencizer")(nlp.nlp().make_doc(text))
    theirs = Sentencizer()(nlp.nlp().make_doc(text))
    assert ours.to_array(SENT_START).tolist() == theirs.to_array(SENT_START).tolist()
    assert [s.start for s in ours.sents] == [s.start for s in theirs.sents] == nlp.sentence_starts(ours)
    whole, direct = nlp.nlp()(text), nlp.annotate(text)
    assert [s.start for s in whole.sents] == nlp.sentence_starts(direct)
    assert [t.lemma_ for t in whole] == [t.lemma_ for t in direct]
    # Without sentence flags (the failure reader's docs): the same tokens, lemmas, sentences.
    bounded, bare = nlp.doc(text), nlp.lemmatized(text)
    assert [(t.text, t.lemma_) for t in bounded] == [(t.text, t.lemma_) for t in bare]
    assert [s.start for s in bounded.sents] == nlp.sentence_starts(bare)


def test_lemma_table_answers_as_spacys_lookups_table() -> None:
    # The pipeline reads spacy-lookups-data's lemma table as a plain dict; spaCy's own
    # loader gives a Table keyed by string hash: every word must get the same lemma, and a
    # word outside the table the default.
    from spacy.lookups import load_lookups

    table = load_lookups("en", ["lemma_lookup"]).get_table("lemma_lookup")
    ours = nlp._lemma_table()
    assert len(ours) == len(table) > 40_000
    for word, lemma in ours.items():
        assert table.get(word) == lemma, word
    for word in ("qwzlrxes", "grpo", "", "NOUN", "collapsed", "Collapsed"):
        assert ours.get(word, word) == table.get(word, word)


def test_lemma_of_lower_is_the_pipelines_lemma() -> None:
    words = ["collapsed", "rewards", "does", "ca", "n't", "was", "better", "qwzlrxes", "data"]
    assert [nlp.lemma_of_lower(w) for w in words] == [t.lemma_ for t in nlp.doc(" ".join(words))]


def test_shared_pipeline_is_blank_english_plus_our_steps() -> None:
    # Built with English(create_tokenizer=...) rather than spacy.blank's config: the same
    # language, limits and tokenizer rules, then the sentencizer and the lemmatizer.
    import spacy

    plain, ours = spacy.blank("en"), nlp.nlp()
    assert ours.lang == plain.lang == "en" and ours.max_length == plain.max_length
    assert ours.pipe_names == ["sentencizer", "rlt_lower_lemmatizer"]
    assert type(ours.tokenizer) is type(plain.tokenizer)
    # spaCy's special cases, less those that change no token (the tokens: below)
    dropped = set(plain.tokenizer.rules) - set(ours.tokenizer.rules)
    assert dropped == {" ", "\t", "\n"}
    assert {k: v for k, v in plain.tokenizer.rules.items() if k not in dropped} == ours.tokenizer.rules


def test_special_cases_left_out_change_no_token() -> None:
    # The white space the shared tokenizer has no special case for, between and around
    # words, affixes and the special cases it keeps, tokenizes as spaCy's own tokenizer
    # (with every special case) does.
    import spacy

    plain = spacy.blank("en").tokenizer
    dropped = sorted(set(plain.rules) - set(nlp.nlp().tokenizer.rules))
    for string in dropped:
        for text in (
            string, f"a{string}b", f"({string})", f'"x"{string}.', f"a {string}, b", f"x\n{string}\nit's{string}don't!",
            f"{string} {string}  {string}{string}C++{string}\n\t e.g.{string}(a.m.)",
        ):
            for _ in range(2):  # the second pass reads what the first remembered
                ours = [(t.text, t.whitespace_, t.norm_, t.idx) for t in nlp.nlp().tokenizer(text)]
                assert ours == [(t.text, t.whitespace_, t.norm_, t.idx) for t in plain(text)], text


# --- without_ignorecase: the failure anchors over the lower-cased text -----------------------

_ANCHOR_PIECES = [
    "What does", "it MEAN", "Is this Normal", "is it OK", "Expected Behavior", "meaning of",
    "How is", "it Computed", "Hang", "HANGS", "Stuck at step", "stuck in", "No progress",
    "Collapsed", "Blew up", "DIVERGED", "Garbled", "Repeating", "!!!!!!", "的的的的的的",
    "Evaluation", "held-out", "Val", "Groups", "all the Samples", "Every Rollout", "正常吗",
    "卡住", "崩了", "评测", "组内", "İ", "ı", "ſ", "\u212a", "K", "É", "_", "-", ".", " ", "  ", "\n", "x",
    "Should", "Can we", "LET'S", "?", "Gating", "needs", "address",
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_ANCHOR_PIECES), max_size=40))
def test_anchor_matches_without_ignorecase_are_the_ignorecase_matches(pieces: list[str]) -> None:
    text = "".join(pieces)
    alike = nlp.lowered_matches_alike(text)
    assert alike == (not any(c in text for c in "\u0130\u0131\u017f\u212a"))
    if not alike:
        return
    low = text.lower()
    assert len(low) == len(text)
    for pattern in (*failures._GATES, review._ASKS):
        expected = [m.span() for m in pattern.finditer(text)]
        fast = [m.span() for m in nlp.without_ignorecase(pattern).finditer(low)]
        assert fast == expected, (pattern.pattern, text)
        # Only the alternatives whose strings are in the text: the same matches.
        assert [m.span() for m in nlp.lowered_finditer(pattern, low)] == expected, (pattern.pattern, text)


def test_lowered_alternation_splits_top_level_alternatives_and_finds_their_strings() -> None:
    import re

    assert nlp._alternatives(r"a|b(c|d)|[|]|[]|]|\\|x|(?:e|f)g") == ["a", "b(c|d)", "[|]", "[]|]", r"\\", "x", "(?:e|f)g"]
    pattern = re.compile(r"(?i)\bwhat\s{1,3}is\b.{0,9}\bmean\b|\bhang(?:s|ing)?\b|\d{1,3}\s?steps?|x{2,}|正常吗")
    alternation = nlp._lowered_alternation(pattern)
    assert [sorted(n) if n else None for n in alternation.needs] == [
        ["mean"], ["hang"], ["step"], ["x"], ["正常吗"],
    ]
    low = "it hangs after 30 steps; what is it, what is the mean? xx 正常吗"
    assert [m.group() for m in nlp.lowered_finditer(pattern, low)] == [
        m.group() for m in pattern.finditer(low)
    ] == ["hangs", "30 steps", "what is the mean", "xx", "正常吗"]
    assert [m.group() for m in nlp.lowered_finditer(pattern, "the 2 steps hang")] == ["2 steps", "hang"]
    assert list(nlp.lowered_finditer(pattern, "nothing here")) == []
    # A back-reference counts groups: such a pattern is tried whole.
    assert nlp._lowered_alternation(re.compile(r"(?i)ab|(c)\1")).needs == [None, None]


def test_without_ignorecase_refuses_what_it_cannot_lower() -> None:
    import re

    with pytest.raises(ValueError):
        nlp.without_ignorecase(re.compile(r"(?i)\bGRPO\b"))
    with pytest.raises(ValueError):
        nlp.without_ignorecase(re.compile(r"\bgrpo\b"))  # not case-insensitive to begin with
    assert nlp.without_ignorecase(re.compile(r"(?i)\bgrpo\b")).pattern == r"\bgrpo\b"


def test_lower_forms_are_every_word_lemmatised_so() -> None:
    forms = nlp.lower_forms(["close", "do", "qwzlrx"])
    assert {"close", "closed", "closes", "closing"} <= forms["close"]
    assert all(nlp.lemma_of_lower(w) == lemma for lemma, words in forms.items() for w in words)
    assert forms["do"] >= {"does", "did", "doing"}  # "does" by the override
    assert forms["qwzlrx"] == {"qwzlrx"}  # unknown words are their own lemma


# --- long runs: found by where they start, broken up as before --------------------------------

_RUN_PIECES = ["a" * 20, "b" * 63, "c" * 79, "[" * 17, "熵" * 30, "x", " ", "\n", "\t", "\u3000", ".", "é"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_RUN_PIECES), max_size=12))
def test_long_runs_are_broken_where_the_plain_substitution_breaks_them(pieces: list[str]) -> None:
    # The look-behind pre-check only decides whether to substitute: a text with a run of 80
    # (review: 64) non-space characters anywhere is cut as before, any other is left as it is.
    text = "".join(pieces)
    assert nlp._bounded(text) == nlp._LONG_RUN.sub(r"\g<0> ", text)
    prose = text.replace("`", "").replace("/", " / ")
    assert review._clean(text) == review._LONG_RUN.sub(review._cut_run, review._INWORD_HYPHEN.sub(" ", prose))



def test_term_set_reports_the_same_term_whatever_the_hash_seed() -> None:
    # Equal-length terms are tried in alphabetical order: which one is reported as evidence
    # must not depend on a set's order (PYTHONHASHSEED), or `rltracker analyze` would give
    # different records for the same thread from one run to the next.
    terms = nlp.TermSet(["feature", "request", "support", "add"])
    assert terms.search("feature request: add support") == "feature"
    assert terms.count("request a feature", limit=2) == (2, "feature")
    assert [t for t, _, _ in nlp.TermSet(["bb", "aa", "ccc", "a"]).terms] == ["ccc", "aa", "bb", "a"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_RUN_PIECES + ["\x1c", "\u00a0", "\u2028"]), max_size=12), st.sampled_from([1, 64, 80]))
def test_has_run_finds_what_a_search_for_the_run_finds(pieces: list[str], length: int) -> None:
    text = "".join(pieces)
    assert nlp.has_run(text, length) == (re.search(rf"\S{{{length}}}", text) is not None)


_LED_SOURCES = [
    r"\b(?:hang|hangs|hanging|hung|freezes?)\b|\bstuck\b", r"\bfoo\s|\bbar", r"卡住|\bx\w{0,3}",
    r"\b(?:normal|expected)\s{1,3}(?:behavior|behaviour)\b", r"\b(?:a|ab|)c", r"(?:x|y)z|\bxy",
    r"\bwhat\s{1,3}(?:does|is)\b.{0,9}\bmean\b|\bis\s{1,3}(?:this|it)\s{1,3}(?:ok|normal)\b", r"\d{1,3}\s?steps?|\bstep",
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["hang", "hangs", "hung", "stuck", "foo", "bar", " ", "x", "y", "z", "ab", "c", "a",
                                  "what", "does", "is", "it", "mean", "ok", "normal", "expected", "behaviour",
                                  "卡住", "_", "-", "3", "steps", "step", "é", "\n"]), max_size=30))
def test_literal_led_patterns_find_what_the_plain_ones_find(pieces: list[str]) -> None:
    # nlp._literal_led writes each top-level alternative to start with a literal (so re can
    # skip ahead): the same matches, at the same offsets, in ASCII and Unicode mode.
    import re

    text = "".join(pieces)
    for source in _LED_SOURCES:
        for flags in (0, re.ASCII):
            led = nlp._literal_led(source, flags)
            assert [m.span() for m in led.finditer(text)] == [m.span() for m in re.finditer(source, text, flags)], source


def test_threads_calling_nlp_first_at_once_share_one_pipeline() -> None:
    """The app's first calls can come from several threads at once; each used to build its
    own pipeline, and a matcher compiled on one met another's StringStore (KeyError E018).
    A fresh interpreter, since this one has built the pipeline already."""
    script = (
        "import threading\n"
        "from analyzers.nlp import nlp\n"
        "barrier = threading.Barrier(4)\n"
        "got = []\n"
        "def run():\n"
        "    barrier.wait()\n"
        "    got.append(nlp())\n"
        "threads = [threading.Thread(target=run) for _ in range(4)]\n"
        "for t in threads: t.start()\n"
        "for t in threads: t.join()\n"
        "print(len(got), len({id(p) for p in got}))\n"
    )
    done = run_fresh(script)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["4", "1"]


def _pattern_words() -> set[str]:
    """Every lower-cased word of the failure and review pattern files (split at spaces and
    "|", the token language's marks stripped)."""
    words: set[str] = set()

    def walk(value: object) -> None:
        if isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, str):
            for raw in value.split():
                words.update(w.lower() for w in raw.strip("=?~#").split("|") if w)

    for path in (failures.PATTERNS_FILE, review._PATTERNS_FILE):
        walk(nlp.load_patterns(path))
    return words


def test_one_token_answers_what_the_tokenizer_makes() -> None:
    # one_token answers lower-case letter runs without tokenizing them: it must agree with
    # the tokenizer on every pattern word, on the letter-only special cases it sends to the
    # tokenizer ("cannot" is two tokens), and on words with marks.
    tokenizer = nlp.nlp().tokenizer
    rule_words = {w for w in tokenizer.rules if re.fullmatch(r"[a-z]+", w)}
    assert {"cannot", "gonna"} <= rule_words
    words = _pattern_words() | rule_words | {"can't", "e.g.", "a.m.", "x", "re-run", "kl", "grpo", "ppo2"}
    assert len(words) > 1000
    for word in sorted(words):
        assert nlp.one_token(word) == (len(tokenizer(word)) == 1), word
    assert not nlp.one_token("cannot") and nlp.one_token("entropy")


@settings(max_examples=300, deadline=None)
@given(st.from_regex(r"[a-z]{1,14}", fullmatch=True))
def test_one_token_agrees_with_the_tokenizer_on_letter_runs(word: str) -> None:
    assert nlp.one_token(word) == (len(nlp.nlp().tokenizer(word)) == 1)
