"""The contribution-rule summary is built from third-party files (CONTRIBUTING, templates)
fetched from GitHub: their names and texts must not open HTML or Markdown in the comment, ping
anyone, reach past the repository read, or make a reply GitHub refuses (65,536 characters).
Short project-written files only; GitHub is the fake server of tests/fakegithub.py."""

from __future__ import annotations

import argparse
import re

from analyzers.rules import format_rules_markdown, summarize_rules
from bot.cli.rules import rules_command
from bot.speaking.contribution import rules_for_repo
from bot.speaking.render import RULES_MARKER, rules_reply
from bot.speaking.rule_summary import rules_markdown

REPO = "acme/widgets"
CONTRIBUTING = "# Contributing\n\nPlease open an issue before you start work on a new feature.\n"
GITHUB_LIMIT = 65536
_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")


def _outside_code(markdown: str) -> str:
    return _CODE.sub(" ", markdown)


async def test_hostile_file_names_stay_inert_in_the_comment(app_ctx, fake_github) -> None:
    """A template's file name is shown as the rule's source: `<!--` in it hid the rest of the
    comment (the footer with the opt-out), `<details>` opened a block that swallowed it, and
    `[x](javascript:...)` / `*` / `_` made a link and emphasis out of the name."""
    fake_github.set_file(REPO, "CONTRIBUTING.md", CONTRIBUTING)
    names = ["<!-- a.md", "<details>b.md", "c [x](javascript:alert(1)) *d* e_@bob_#12.md"]
    for name in names:
        fake_github.set_file(REPO, f".github/ISSUE_TEMPLATE/{name}",
                             "---\nname: Bug\nabout: A bug\n---\nPlease add tests for the fix.\n")
    md = await rules_markdown(app_ctx, REPO, "en", topics=None)
    assert md is not None
    for name in names:
        # cited, whole (a `<!--` with a zero-width space in it: no marker of the app's, see
        # tests/test_marker_forgery.py)
        assert name in md.replace("<!\u200b--", "<!--"), md
    outside = _outside_code(md)
    for needle in ("<!--", "<details", "](javascript:", "*d*", "@bob", "#12"):
        assert needle not in outside, (needle, md)
    body = rules_reply(md, None, "en", "https://tracker.example")
    assert _outside_code(body).count("<details") == 1 and body.rstrip().endswith("</sub>")


def test_a_file_name_with_a_newline_or_backticks_stays_one_cited_path() -> None:
    """Git allows newlines in names (a checkout read by `rltracker rules PATH`): the name broke
    the bullet and started a heading of its own."""
    name = ".github/ISSUE_TEMPLATE/x``y\n\n# Owned.md"
    summary = summarize_rules({"CONTRIBUTING.md": CONTRIBUTING,
                               name: "---\nname: Bug\n---\nPlease add tests for the fix.\n"})
    md = format_rules_markdown(summary)
    assert "\n# Owned" not in md
    assert not any(line.startswith("#") and "Owned" in line for line in md.splitlines())


async def test_names_with_url_characters_are_read(app_ctx, fake_github) -> None:
    """A template named "feature #1.md" or "why?.md" was requested unquoted: `#` cut the URL
    (a fragment) and `?` made the rest a query, so its rules were never read."""
    fake_github.set_file(REPO, "CONTRIBUTING.md", CONTRIBUTING)
    fake_github.set_file(REPO, ".github/ISSUE_TEMPLATE/feature #1.md",
                         "---\nname: Feature\n---\nEvery commit must be signed off (`git commit -s`).\n")
    fake_github.set_file(REPO, ".github/ISSUE_TEMPLATE/why?.md",
                         "---\nname: Why\n---\nPlease add tests for the fix.\n")
    summary = await rules_for_repo(app_ctx, REPO)
    assert {".github/ISSUE_TEMPLATE/feature #1.md", ".github/ISSUE_TEMPLATE/why?.md"} <= set(
        summary["files"])
    cited = {s for f in summary["facts"] for s in f.get("sources") or []}
    assert ".github/ISSUE_TEMPLATE/feature #1.md" in cited


async def test_a_pointer_cannot_walk_out_of_the_repository_it_names(app_ctx, fake_github) -> None:
    """A stub CONTRIBUTING pointing to `.../blob/main/../../../../user` made the app GET an
    API path outside any repository's contents with the installation's token."""
    fake_github.set_file(REPO, "CONTRIBUTING.md",
                         "See https://github.com/acme/community/blob/main/../../../../user\n")
    await rules_for_repo(app_ctx, REPO)
    for call in fake_github.calls:
        if call.method == "GET" and "/contents" in call.path or call.path.startswith("/user"):
            assert ".." not in call.path and call.path.startswith("/repos/"), call.path


async def test_the_rules_reply_fits_in_a_github_comment(app_ctx, fake_github) -> None:
    """`/rltracker rules` lists every fact: forty issue forms with long required fields made
    a reply of ~200,000 characters, which GitHub refuses (422), so the command got nothing."""
    fake_github.set_file(REPO, "CONTRIBUTING.md", CONTRIBUTING)
    for i in range(40):
        fields = "".join(
            f"  - type: textarea\n    attributes:\n      label: '{'Field ' * 20}{j}'\n"
            "    validations:\n      required: true\n" for j in range(50))
        fake_github.set_file(REPO, f".github/ISSUE_TEMPLATE/form{i:02d}.yml",
                             f"name: 'Form {i} {'words ' * 20}'\nbody:\n{fields}")
    for lang in ("en", "zh"):
        md = await rules_markdown(app_ctx, REPO, lang, topics=None)
        body = rules_reply(md, None, lang, "https://tracker.example")
        assert len(body) <= GITHUB_LIMIT, len(body)
        assert body.count("<details") == body.count("</details>") == 1
        assert "Open an issue" in body or "issue" in body.lower()
        # The note of what was left out names what a reader on GitHub can turn to: not the
        # operator's CLI (`rltracker rules`, which a reader cannot run), nor the command
        # this reply answers (it lists no more than this).
        [note] = [x for x in body.splitlines() if "more lines not shown" in x or "未显示" in x]
        assert "rltracker rules" not in note and "CONTRIBUTING" in note, note


def test_an_opening_posts_cut_rules_name_the_command_a_reader_can_type() -> None:
    """The opening post's summary (a few rules per topic), cut at 60,000 characters, said
    "`rltracker rules` lists them all": the operator's CLI, which nobody reading the issue on
    GitHub can run. It names `/rltracker rules`, the command they can type there."""
    from bot.speaking.rule_summary import within_budget

    text = "\n".join(f"- rule {i} " + "words " * 20 for i in range(2000))
    for lang in ("en", "zh"):
        cut = within_budget(text, lang)
        assert len(cut) <= 60_000 and "`/rltracker rules`" in cut.splitlines()[-1], cut[-300:]


def test_the_cli_prints_no_terminal_control_sequences(tmp_path, capsys) -> None:
    """`rltracker rules PATH` printed code spans of the file as they were: an escape sequence
    in a checkout's CONTRIBUTING (clear screen, a retitled window) reached the terminal."""
    (tmp_path / "CONTRIBUTING.md").write_text(
        "# Contributing\n\n* Make sure all tests pass before opening a pull request: run "
        "`pytest \x1b[2Jtests/`.\n", encoding="utf-8")
    forms = tmp_path / ".github" / "ISSUE_TEMPLATE"
    forms.mkdir(parents=True)
    (forms / "x\x1b]0;owned\x07.md").write_text("---\nname: Bug\n---\nPlease add tests.\n",
                                                 encoding="utf-8")
    assert rules_command(argparse.Namespace(target=str(tmp_path), json=False)) == 0
    out = capsys.readouterr().out
    assert "pytest" in out and "ISSUE_TEMPLATE/x" in out
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", out), repr(out)


def test_markers_are_not_forged_by_a_summary() -> None:
    assert RULES_MARKER.startswith("<!--")


async def test_a_huge_contributing_file_is_not_called_absent(app_ctx, fake_github) -> None:
    """A CONTRIBUTING.md over 256 KiB was dropped without a word, and the summary said "No
    CONTRIBUTING file was found": an invented absence. Its first 256 KiB are read and the
    summary says the file was read only in part."""
    text = CONTRIBUTING + "\nEvery commit must be signed off (`git commit -s`).\n" + (
        "Some history of the project, told at length.\n" * 8000)
    assert len(text) > 256 * 1024
    fake_github.set_file(REPO, "CONTRIBUTING.md", text)
    summary = await rules_for_repo(app_ctx, REPO)
    rules = {f["rule"] for f in summary["facts"]}
    assert "no_contributing" not in rules and "signoff_required" in rules
    md = format_rules_markdown(summary)
    assert "No CONTRIBUTING" not in md
    assert "`CONTRIBUTING.md`" in md and "256 KiB" in md


async def test_a_contributing_file_github_serves_without_content(app_ctx, fake_github) -> None:
    """Over 1 MB the contents API gives no content ("encoding": "none"): the file is there,
    unread, and the summary says so instead of "No CONTRIBUTING file was found"."""
    fake_github.set_file(REPO, "CONTRIBUTING.md", "x")

    @fake_github.route("GET", rf"/repos/{REPO}/contents/CONTRIBUTING.md")
    async def big(fake, request, match, body):
        return {"type": "file", "encoding": "none", "size": 2_000_000, "name": "CONTRIBUTING.md",
                "path": "CONTRIBUTING.md", "content": ""}

    summary = await rules_for_repo(app_ctx, REPO)
    assert "no_contributing" not in {f["rule"] for f in summary["facts"]}
    for lang in ("en", "zh"):
        md = format_rules_markdown(summary, lang=lang)
        assert "`CONTRIBUTING.md`" in md and ("CONTRIBUTING" not in md.replace("`CONTRIBUTING.md`", ""))


async def test_binary_non_utf8_submodule_and_directory_files(app_ctx, fake_github) -> None:
    """A binary CONTRIBUTING.md, a GBK-encoded Chinese template, a submodule and a directory
    named like a contribution file: a summary is made and stored (SQLite and PostgreSQL)."""
    fake_github.set_file(REPO, "CONTRIBUTING.md", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe")
    fake_github.set_file(REPO, ".github/PULL_REQUEST_TEMPLATE.md",
                         "请在提交前运行测试。Please add tests for the fix.\n".encode("gbk"))
    fake_github.set_file(REPO, "GOVERNANCE.md/README.md", "a folder, not a file\n")

    @fake_github.route("GET", rf"/repos/{REPO}/contents/AGENTS.md")
    async def submodule(fake, request, match, body):
        return {"type": "submodule", "name": "AGENTS.md", "path": "AGENTS.md", "size": 0,
                "submodule_git_url": "https://example.invalid/x.git"}

    fake_github.set_file(REPO, "AGENTS.md", "listed as a file, as GitHub lists submodules")
    summary = await rules_for_repo(app_ctx, REPO)
    assert "AGENTS.md" not in summary["files"] and "GOVERNANCE.md" not in summary["files"]
    md = await rules_markdown(app_ctx, REPO, "zh", topics=None)
    assert md is not None and "\x00" not in md


def test_the_cli_reads_a_huge_contributing_file_in_part(tmp_path, capsys) -> None:
    """`rltracker rules PATH` skipped a CONTRIBUTING.md over 256 KiB and printed "No
    CONTRIBUTING file was found"."""
    (tmp_path / "CONTRIBUTING.md").write_text(
        "# Contributing\n\nEvery commit must be signed off (`git commit -s`).\n"
        + "Some history of the project, told at length.\n" * 8000, encoding="utf-8")
    assert rules_command(argparse.Namespace(target=str(tmp_path), json=False)) == 0
    out = capsys.readouterr().out
    assert "No CONTRIBUTING" not in out and "git commit -s" in out and "256 KiB" in out


async def test_the_framework_page_says_a_file_was_read_in_part(app_ctx, fake_github) -> None:
    """The framework page listed the rules of a CONTRIBUTING read only to 256 KiB as if the
    whole file had been read."""
    from aiohttp.test_utils import TestClient, TestServer

    from bot.app import create_app

    fake_github.set_file("verl-project/verl", "CONTRIBUTING.md", CONTRIBUTING + (
        "Some history of the project, told at length.\n" * 8000))
    await rules_for_repo(app_ctx, "verl-project/verl")
    async with TestClient(TestServer(create_app(app_ctx, worker=False))) as client:
        resp = await client.get("/frameworks/verl")
        assert resp.status == 200
        page = await resp.text()
    assert "256 KiB" in page and "<code><bdi>CONTRIBUTING.md</bdi></code>" in page


async def test_a_repository_with_no_contribution_files_is_told_plainly(app_ctx, fake_github) -> None:
    """With no contribution file at all, the proposal's summary said only "Not stated in the
    files read: tests, docs, ...", as if some files had been read."""
    fake_github.set_file(REPO, "README.md", "A widget library.\n")
    for lang, words in (("en", "No contribution files"), ("zh", "没有找到贡献文件")):
        md = await rules_markdown(app_ctx, REPO, lang)
        assert md is not None and words in md and "files read" not in md, md


async def test_direction_controls_quoted_from_a_file_are_not_posted(app_ctx, fake_github) -> None:
    """A command the summary quotes from CONTRIBUTING (a code span) kept Unicode direction
    controls as they were: in a `/rltracker rules` reply or a proposal's reply an override
    reorders what follows it on GitHub (the tracker pages isolate such text, a comment cannot).
    They are posted as spaces, as the file names the summary cites already were."""
    bidi = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
    fake_github.set_file(REPO, "CONTRIBUTING.md",
                         "# Contributing\n\nBefore you open a pull request, run "
                         f"`pytest tests/{bidi}x` and `ruff check .`.\n")
    md = await rules_markdown(app_ctx, REPO, "en", topics=None)
    assert md is not None and "pytest tests/" in md, md
    assert not set(bidi) & set(md), [hex(ord(c)) for c in set(bidi) & set(md)]
