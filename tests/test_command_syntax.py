"""bot.command_syntax and what the app's analysis reads: `/rltracker` command lines are
addressed to the app, so the analyzers never read them as thread text."""

from __future__ import annotations

from typing import Any

import pytest

from bot.analysis import analysis_input, run_analysis
from bot.command_syntax import parse_command, without_commands


def test_without_commands_drops_only_command_lines() -> None:
    assert without_commands("/rltracker kind kl_growth") == ""
    assert without_commands("Thanks, looks right.\n  /RLTracker kind kl_growth\nThe KL grows.") == (
        "Thanks, looks right.\nThe KL grows."
    )
    body = "please run `/rltracker ignore` if it is noisy"
    assert without_commands(body) == body  # mentioned in prose: no command (as parse_command reads it)
    assert parse_command(body) is None
    assert without_commands("no command here") == "no command here"


def test_a_command_below_a_long_pasted_log_is_read() -> None:
    """A report comment pastes 60 lines of log in a fence and ends with the verdict: only the
    first 50 lines were read, so the command at the bottom was silently ignored. The fence
    keeps the log's lines from being commands; the whole 64 KiB is read."""
    log = "".join(f"step {n} kl 0.{n:02d}\n" for n in range(60))
    body = "Full log:\n```\n" + log + "```\n/rltracker kind kl_growth\n"
    assert parse_command(body) == ("kind", ["kl_growth"])
    assert without_commands(body) == "Full log:\n```\n" + log + "```\n"


def test_without_commands_reads_the_characters_parse_command_reads() -> None:
    long_line = "x" * 70000 + "\n"  # one line past the 64 KiB parse_command reads
    body = long_line + "/rltracker ignore\n"
    assert parse_command(body) is None
    assert without_commands(body) == body
    body = "a\n/rltracker ignore\n" + long_line
    assert parse_command(body) == ("ignore", [])
    assert without_commands(body) == "a\n" + long_line


# Two short threads written for these tests: a method proposal and a usage question.
THREADS = {
    "proposal": ("[Feature] Add GSPO (sequence-level clipping) as a policy loss",
                 "This adds GSPO from arXiv:2507.18071 as a new policy loss option. Would you accept a PR?"),
    "question": ("Question about the GRPO config",
                 "How do I set the group size for GRPO in the trainer config? Thanks."),
}


def _thread(comments: list[dict[str, Any]], which: str = "proposal") -> dict[str, Any]:
    title, body = THREADS[which]
    return {"id": "example/rl#7", "repo": "verl-project/verl", "number": 7, "kind": "issue",
            "title": title, "body": body, "author": "opener", "author_association": "NONE",
            "state": "open", "comments": comments}


def _comment(body: str, author: str = "maintainer", association: str = "MEMBER") -> dict[str, Any]:
    return {"author": author, "author_association": association, "author_is_bot": False,
            "created_at": "2026-12-01T10:00:00Z", "body": body, "kind": "issue_comment"}


def test_analysis_input_leaves_threads_without_commands_as_they_are() -> None:
    record = _thread([_comment("Interesting, could you share results on GSM8K?")])
    assert analysis_input(record) is record


def test_analysis_input_drops_command_only_comments_and_command_lines() -> None:
    record = _thread([
        _comment("/rltracker rules"),
        _comment("Nice idea.\n/rltracker kind kl_growth\nCould you add a test?"),
    ])
    seen = analysis_input(record)
    assert [c["body"] for c in seen["comments"]] == ["Nice idea.\nCould you add a test?"]
    assert [c["body"] for c in record["comments"]][0] == "/rltracker rules"  # the stored record is untouched


@pytest.mark.asyncio
@pytest.mark.parametrize("which", sorted(THREADS))
async def test_commands_leave_the_analysis_as_the_thread_without_them(which: str) -> None:
    commands = [_comment("/rltracker kind entropy_collapse"), _comment("/rltracker methods entropy collapse"),
                _comment("/rltracker rules", author="opener", association="NONE")]
    with_commands = await run_analysis(_thread(commands, which))
    assert with_commands == await run_analysis(_thread([], which))
    assert with_commands["review"]["replied_from_other"] is False


# ------------------------------------------------------------------ what is and is not a command
# A command is a line a person wrote to the app. Text GitHub shows as code, hides (an HTML
# comment), folds away (<details>) or that quotes someone else (a quoted reply, the original
# an e-mail client pasted below a reply) is no command: a maintainer explaining
# "to silence it, write ```/rltracker stop```" asked for nothing.

@pytest.mark.parametrize("body", [
    "To silence the app, write:\n```\n/rltracker stop\n```\n",
    "To silence the app, write:\n~~~text\n/rltracker stop\n~~~\n",
    "  ```bash\n/rltracker stop\n  ```",
    "````\n```\n/rltracker stop\n```\n````",
    "```\nnever closed\n/rltracker stop\n",
    "To silence the app, write:\n\n    /rltracker stop\n",
    "\t/rltracker stop",
    "<!--\n/rltracker stop\n-->\nThanks for the report.",
    "Thanks <!-- a note\n/rltracker stop\nend --> for the report.",
    "<details><summary>How to silence it</summary>\n\n/rltracker stop\n\n</details>",
    "<DETAILS>\n<details>\n</details>\n/rltracker stop\n</DETAILS>",
    "> /rltracker stop",
    "> the maintainer said\n>\n> /rltracker stop\n",
    "Thanks!\n\nOn Mon, Dec 1, 2026 at 10:00 AM maint <notifications@github.com> wrote:\n\n/rltracker stop\n",
    "Thanks!\n\nOn Mon, Dec 1, 2026 at 10:00 AM maint <\nnotifications@github.com> wrote:\n/rltracker stop",
    "Thanks!\n________________________________\nFrom: maint <notifications@github.com>\nSent: Monday\n"
    "Subject: Re: [verl-project/verl] KL grows (#7)\n\n/rltracker stop\n\n—\nReply to this email directly",
    "Thanks!\n-----Original Message-----\n/rltracker stop",
    "谢谢！\n\n在 2026年12月1日 10:00，maint <notifications@github.com> 写道：\n\n/rltracker stop",
])
def test_text_shown_as_code_hidden_or_quoted_holds_no_command(body: str) -> None:
    assert parse_command(body) is None, body
    assert without_commands(body) == body  # and it stays in what the analyzers read


@pytest.mark.parametrize(("body", "parsed"), [
    ("```\n/rltracker ignore\n```\n/rltracker stop", ("stop", [])),
    ("<!-- template -->\n/rltracker stop", ("stop", [])),
    ("<!--\ntemplate\n-->\n/rltracker stop", ("stop", [])),
    ("<details><summary>log</summary>\n\n```\nKL 12.0\n```\n</details>\n\n/rltracker kind kl_growth",
     ("kind", ["kl_growth"])),
    ("   /rltracker stop", ("stop", [])),  # three spaces: no code block
    ("Please fold long logs in `<details>`.\n/rltracker stop", ("stop", [])),  # prose, no block
    ("On second thought, as @bob wrote:\n> it is the KL\n\n/rltracker kind kl_growth",
     ("kind", ["kl_growth"])),  # a person quoting someone, no e-mail header (security75: the
    # blank line ends the quote; without it the command line goes on bob's quoted paragraph)
    ("From: the logs, KL@step 100 is 12.0\n/rltracker kind kl_growth", ("kind", ["kl_growth"])),
    ("<!--\n<details>\n-->\n/rltracker stop", ("stop", [])),  # a tag inside a comment is none
    ("Templates hide their hints in `<!--` and `-->`; this one did not close: `<!--`.\n/rltracker stop",
     ("stop", [])),  # code spans, no HTML comment
    ("From the logs the KL grows.\n/rltracker kind kl_growth", ("kind", ["kl_growth"])),
])
def test_a_command_after_code_comments_and_details_is_read(body: str, parsed: Any) -> None:
    assert parse_command(body) == parsed


@pytest.mark.parametrize(("body", "parsed"), [
    ("／rltracker stop", ("stop", [])),  # a full-width slash (Chinese input methods)
    ("／RLTracker kind 熵坍塌", ("kind", ["熵坍塌"])),
    ("/rltracker\u00a0stop", ("stop", [])),  # a non-breaking space
    ("/rltracker\u3000stop", ("stop", [])),  # an ideographic space
    ("\u200b/rltracker stop", ("stop", [])),  # a zero-width space pasted before it
    ("\ufeff/rltracker stop\u200b", ("stop", [])),
    ("/rltracker stop.", ("stop", [])),
    ("/rltracker ignore, please", ("ignore", ["please"])),
    ("/rltracker kind kl_growth.", ("kind", ["kl_growth"])),
    ("/rltracker kind 熵坍塌。", ("kind", ["熵坍塌"])),
    ("/RLTRACKER   STOP  ", ("stop", [])),
])
def test_command_spellings_people_type(body: str, parsed: Any) -> None:
    assert parse_command(body) == parsed
    assert without_commands(body) == ""


def test_without_commands_keeps_a_fenced_command_and_drops_the_real_one() -> None:
    body = "Try this:\n```\n/rltracker stop\n```\n/rltracker kind kl_growth\nThe KL grows."
    assert without_commands(body) == "Try this:\n```\n/rltracker stop\n```\nThe KL grows."


@pytest.mark.parametrize("unit", ["<!--", "-->", "```\n", "<details>", "</details>", "<!-- -->",
                                  "On x wrote", "／", "\u200b", "/rltracker ", "> ",
                                  "<code>", "</code>", "<textarea>", "`", "``\n`", "`\n/rltracker stop"])
def test_hostile_64_kib_bodies_are_read(unit: str) -> None:
    """Every rule is a scan of each line (no regular expression backtracks): 64 KiB of one
    unit repeated, with and without line breaks, is read (no timing asserted here)."""
    for body in (unit * (65536 // len(unit)), (unit + "\n") * (65536 // (len(unit) + 1))):
        parse_command(body + "\n/rltracker stop")
        without_commands(body + "\n/rltracker stop")


@pytest.mark.parametrize("sep", ["\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x1c", "\x1e"])
def test_only_markdowns_line_endings_end_a_line(sep: str) -> None:
    """GitHub (CommonMark) ends a line at LF, CR or CRLF only; Python's splitlines also ends
    one at U+2028, U+2029, NEL, VT, FF and the separators U+001C..U+001E (a paste from a PDF
    or a word processor brings them). A `/rltracker` after one of them sits on the line GitHub
    shows, in a quote or mid-sentence, and was read as a command of its own (a quoted stop
    acted); the analysis dropped half of that line as a command."""
    quoted = f"> If it is noise, write{sep}/rltracker stop\n\nIt is not noise."
    assert parse_command(quoted) is None
    assert without_commands(quoted) == quoted
    prose = f"Please do not use{sep}/rltracker stop here."
    assert parse_command(prose) is None
    # a command on a line of its own is still one, whatever else the comment holds
    body = f"Thanks{sep}again.\r\n/rltracker ignore\rLater line\n"
    assert parse_command(body) == ("ignore", [])
    assert without_commands(body) == f"Thanks{sep}again.\r\nLater line\n"


@pytest.mark.parametrize(("body", "parsed"), [
    ("／ｒｌｔｒａｃｋｅｒ ｓｔｏｐ", ("stop", [])),  # a Chinese input method's full-width mode
    ("／ｒｌｔｒａｃｋｅｒ　ｍｅｔｈｏｄｓ　ｋｌ＿ｇｒｏｗｔｈ", ("methods", ["kl_growth"])),
    ("/rltracker ｋｉｎｄ 熵坍塌．", ("kind", ["熵坍塌"])),
    ("／ＲＬＴＲＡＣＫＥＲ ＩＧＮＯＲＥ！", ("ignore", [])),
])
def test_a_command_typed_in_full_width_is_read(body: str, parsed: Any) -> None:
    """The full-width slash a Chinese input method types was read, but not the full-width
    letters its full-width mode types with it: `／ｒｌｔｒａｃｋｅｒ ｓｔｏｐ` got silence (no
    command, no note). Read as its compatibility form (NFKC) when the line starts with a slash."""
    assert parse_command(body) == parsed
    assert without_commands(body) == ""
