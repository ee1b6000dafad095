"""One judgement of a bot account (analyzers.accounts.is_bot_login): every place that skips
bots agrees with it. Each copy it replaced disagreed somewhere: the failure analyzer's
follow-up reading skipped only `author_is_bot` (a contract comment may leave it out, so a
`[bot]` login was read as somebody's reply, while the paper analyzer skipped it), and the
speaking rules and the report matched `[bot]` in lower case only."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from analyzers.accounts import is_bot_login
from analyzers.failures import follow_up_features
from bot.speaking.quiet import replies
from bot.speaking.repo_config import RepoConfig
from bot.speaking.rule_summary import summary_quiet
from bot.speaking.situation import Situation
from bot.store.types import format_datetime

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
BOT_COMMENT = {"author": "github-actions[bot]", "body": "The KL keeps growing and the loss is NaN."}


def test_a_bot_login_without_the_flag_is_no_reply_to_the_failure_analyzer() -> None:
    assert is_bot_login(BOT_COMMENT["author"])
    assert follow_up_features("reporter", [BOT_COMMENT]) == {}


def test_the_speaking_rules_skip_a_bot_login_in_any_case() -> None:
    login = "Renovate[BOT]"
    assert is_bot_login(login)
    comment = {"author": login, "author_association": "NONE", "body": "Updated.",
               "created_at": format_datetime(NOW)}
    assert replies({"author": "alice", "comments": [comment]}) == []
    record: dict[str, Any] = {"kind": "issue", "state": "open", "author": login, "author_is_bot": False,
                              "labels": [], "assignees": [], "comments": [],
                              "created_at": format_datetime(NOW - timedelta(hours=1))}
    sit = Situation(repo="verl-project/verl", number=1, record=record, repo_id=1, installation_id=1,
                    framework="verl", paused=False, paused_reason=None, muted=False, existing=None)
    out = summary_quiet(record, RepoConfig(), sit, now=NOW)
    assert out is not None and out[0] == "bot_author"
