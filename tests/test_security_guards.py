"""Guards for paths of GitHub's text that the security66 review found safe and no test held
(docs/app.md, "Review security66"): the metrics label of a delivery's event header, and the
app's own patterns over 64 KiB of GitHub text outside the analyzers (which
tests/test_hostile_inputs.py covers): references to an issue in a pull request's body, the
quoted rules of a repository, a settings file that does not parse, command lines.
Work is counted (tests/work.py), not timed."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from bot.app import create_app
from bot.command_syntax import parse_commands, without_commands
from bot.context import AppContext
from bot.speaking.quiet import issue_ref
from bot.speaking.repo_config import ConfigError, parse_config_text
from bot.speaking.rule_summary import _no_markers, _no_references
from bot.speaking.situation import full_issue_ref
from bot.webhooks.replay import delivery_headers
from tests.work import assert_linear_work

SIZE = 65536
VERL = "verl-project/verl"


def _fill(unit: str, size: int = SIZE) -> str:
    return (unit * (size // len(unit) + 1))[:size]


@pytest.fixture
async def client(ctx: AppContext) -> AsyncIterator[TestClient]:
    async with TestClient(TestServer(create_app(ctx, worker=False))) as c:
        yield c


# A sample line of the text exposition format: name, labels whose values escape \ " and newline
_SAMPLE = re.compile(r'[a-z_]+(?:\{(?:[a-z_]+="(?:[^"\\\n]|\\[\\"n])*",?)*\})? \S+')


async def test_an_event_header_cannot_break_the_metrics_exposition(
        client: TestClient, shared_dir: Path) -> None:
    """The event of a delivery is a label of rltracker_webhook_deliveries_total, read from
    X-GitHub-Event, which the signature does not cover: quotes and backslashes in it are
    escaped (a header over 64 characters is refused with 400)."""
    body = (shared_dir / "fixtures" / "webhooks" / "ping" / "ping.json").read_bytes()
    event = 'ping"} 1\\ evil{x="' + "e" * 40
    headers = delivery_headers("ping", body, "test-secret")
    headers["X-GitHub-Event"] = event
    assert (await client.post("/webhook", data=body, headers=headers)).status == 202
    text = await (await client.get("/metrics")).text()
    [line] = [x for x in text.splitlines() if x.startswith("rltracker_webhook_deliveries_total{")]
    escaped = event.replace("\\", "\\\\").replace('"', '\\"')
    assert line == f'rltracker_webhook_deliveries_total{{event="{escaped}"}} 1', line
    for sample in text.splitlines():
        if sample and not sample.startswith("#"):
            assert _SAMPLE.fullmatch(sample), sample


HOSTILE_BODIES = {
    "hashes": _fill("#"),
    "hash-digits": _fill("#1"),
    "refs": _fill(f"{VERL}#1 "),
    "ref-prefixes": _fill(f"{VERL}#"),
    "urls": _fill(f"https://github.com/{VERL}/issues/"),
    "slashes": _fill("a/"),
    "words": _fill("a"),
    "amp": _fill("&#"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_BODIES))
def test_issue_references_in_a_64_kib_body_are_found_in_linear_work(name: str) -> None:
    """`linked_pull_request` searches a pull request's body (its first 64 KiB) for `#N`,
    `owner/repo#N` and the issue's URL."""
    short, full = issue_ref(12), full_issue_ref(VERL, 12)
    body = HOSTILE_BODIES[name]
    assert_linear_work(lambda text: (short.search(text), full.search(text)), body)
    assert short.search(body + " #12") and full.search(body + f" {VERL}#12")


@pytest.mark.parametrize("unit", ["#1 ", "a/b#1 ", "`", "``#1", "<!--", "<!-- rltracker:x -->", "@a "])
def test_the_quoted_rules_are_made_inert_in_linear_work(unit: str) -> None:
    """The rules markdown quotes a repository's files (`rule_summary.rules_markdown`)."""
    text = _fill(unit)
    assert_linear_work(lambda md: _no_markers(_no_references(md)), text)
    assert "<!--" not in _no_markers(_no_references(text))


@pytest.mark.parametrize("unit", ["failure_comments: false  # x\n", "daily_budget: 1 ", ": : :\n",
                                  "[", "a: '\n", "dry_run:" + " " * 60 + "\n"])
def test_a_large_settings_file_that_does_not_parse_is_read_in_linear_work(unit: str) -> None:
    """`.github/rltracker.yml` is the repository's text; one over the size limit, or one YAML
    refuses, is still read for the opt-outs it states, line by line."""
    def read(text: str) -> Any:
        try:
            return parse_config_text(text)
        except ConfigError as exc:
            return exc.opt_outs

    assert_linear_work(read, _fill(unit, 4 * SIZE))


@pytest.mark.parametrize("unit", ["/rltracker stop\n", "> /rltracker stop\n", "```\n/rltracker x\n",
                                  "<!--\n", "<details>\n", "    /rltracker stop\n", "`/rltracker`",
                                  "<code>\n", "<textarea>\n", "`\n/rltracker stop\n",
                                  "``\n/rltracker stop `\n", "` `` ``` ", "- `\n",
                                  # security75: code tags in prose, quote markers, lazy lines
                                  "x <code> ", "</code><code", ">", "> > a\n/rltracker x\n",
                                  "<code>\n- a\n",
                                  # security79: direction controls, references, textarea ends
                                  "/rltracker stop \u202e\n", "<div>\n\u2066\n/rltracker x\n",
                                  "/rltracker &#x202e;&#", "<textarea>\n</textarea>\n",
                                  # left81: list items around a textarea, nested on a line
                                  "- ", "1. ", "- <textarea>\n  x\n", " - a\n",
                                  "- * ", "-\t",
                                  # fence81: fences in list items, closed or ended by the item
                                  "- ```\n  /rltracker x\n", "1. ~~~\n   x\n   ~~~\n",
                                  "- - ```\n", "- ```\n/rltracker x\n", "  ```\n",
                                  # commands82: raw HTML laid out, types 1-7, quotes in items
                                  "<div>\nx\n/rltracker x\n", "<b>x</b>", "<", "</div", "<div>",
                                  "</div>", "<script>\n", "<?php\n", "<!X\n", "- <span>\n",
                                  "> - ", "> - - ", "<div>\n\n", "x\n    /rltracker x\n",
                                  "* a\n<td>\n", "- <textarea>\n  </textarea>\n  x\n",
                                  "a | b\n--|--\n", "|-", "<div>\n<?x\n", "<div><a "])
def test_command_lines_of_a_64_kib_comment_are_read_in_linear_work(unit: str) -> None:
    body = _fill(unit)
    assert_linear_work(lambda text: (parse_commands(text), without_commands(text)), body)
