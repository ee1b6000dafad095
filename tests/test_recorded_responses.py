"""GitHub's own recorded answers (../shared/fixtures/github-api: octokit's, gidgethub's and
PyGithub's recordings against api.github.com) served by the fake GitHub server to the app's
one client, unchanged but for the host in their Link headers: pages, errors, rate limits."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import gidgethub
import pytest
from aiohttp import web

from bot.config import Settings
from bot.github.client import GitHubClient, rate_limit_wait, refused_for_good
from bot.webhooks.worker import transient
from tests.fakegithub import FakeGitHub, rsa_key_pair
from tests.test_github_client import RecordingSleep

REPO = "verl-project/verl"


@pytest.fixture
def recorded(shared_dir: Path) -> Path:
    return shared_dir / "fixtures" / "github-api"


@pytest.fixture
def sleeper() -> RecordingSleep:
    return RecordingSleep()


@pytest.fixture
async def client(fake_github: FakeGitHub, sleeper: RecordingSleep) -> Any:
    """The app's client with app credentials, installation 7 on the fake (no database)."""
    pem, public = rsa_key_pair()
    fake_github.app_id = "4242"
    fake_github.public_key = public
    fake_github.add_installation(7, "verl-project", [REPO])
    settings = Settings.from_env({}, app_id="4242", private_key=pem, api_url=fake_github.url,
                                 dry_run=False)
    c = GitHubClient(settings, sleep=sleeper, rand=lambda: 0.0)
    yield c
    await c.close()


def pygithub(recorded: Path, name: str) -> list[dict[str, Any]]:
    return list(json.loads((recorded / "pygithub-replay" / f"{name}.json").read_text()))


def replay(fake: FakeGitHub, method: str, path_regex: str, records: list[dict[str, Any]]) -> None:
    """The fake answers the matching requests with `records` in turn (PyGithub's form: status,
    response_headers as pairs, response_body), Link headers pointing at the fake."""
    answers = list(records)

    @fake.route(method, path_regex)
    def answer(_: FakeGitHub, request: web.Request, match: Any, body: Any) -> web.Response:
        record = answers.pop(0)
        headers = {k: str(v).replace("https://api.github.com", fake.url)
                   for k, v in record["response_headers"]
                   if k.lower() not in ("content-length", "transfer-encoding", "content-encoding",
                                        "connection", "status")}
        payload = record["response_body"]
        text = payload if isinstance(payload, str) else json.dumps(payload)
        return web.Response(status=int(record["status"]), body=text.encode(), headers=headers)


async def test_a_5xx_with_an_html_page_said_to_be_json_is_github_down(
        client: GitHubClient, fake_github: FakeGitHub, recorded: Path) -> None:
    """GitHub's 503 from its front end, as PyGithub recorded it: `content-type:
    application/json`, an HTML page for body. gidgethub decodes the body before it reads the
    status, and its JSONDecodeError (a ValueError) came out of the client: the worker takes a
    ValueError for a payload it cannot handle and fails the delivery at its first attempt,
    where GitHub down is GitHubBroken, retried for hours. The same for GraphQL."""
    [down] = pygithub(recorded, "Exceptions.testNonJsonDataReturnedByGithub")
    assert down["status"] == 503 and str(down["response_body"]).startswith("<html>")
    replay(fake_github, "GET", r"/users/.*", [down] * client.policy.max_attempts)
    replay(fake_github, "POST", r"/graphql", [down] * client.policy.max_attempts)
    gh = await client.api(7)
    with pytest.raises(gidgethub.GitHubBroken) as rest:
        await gh.getitem("/users/jacquev6")
    with pytest.raises(gidgethub.GitHubBroken) as graphql:
        await client.graphql("{ viewer { login } }", installation_id=7)
    for error in (rest.value, graphql.value):
        assert error.status_code == 503 and transient(error) and not refused_for_good(error)
    assert len(fake_github.requests("GET", r"^/users/")) == client.policy.max_attempts


async def test_a_spent_rate_limit_without_its_reset_time_is_not_asked_again_at_once(
        client: GitHubClient, fake_github: FakeGitHub, recorded: Path,
        sleeper: RecordingSleep) -> None:
    """GitHub's 403 for a spent primary limit, as PyGithub recorded it: `x-ratelimit-remaining:
    0` and no `x-ratelimit-reset`. The client asked again after 0.5, 1, 2 and 4 s (its 5xx
    backoff), five requests inside the limit in under ten seconds, which GitHub answers by
    blocking an integration that keeps doing it. Without a time to wait for, GitHub says to
    wait at least a minute: the client gives the wait to the job (rate_limit_wait)."""
    _, spent = pygithub(recorded, "SpecificExceptions.testRateLimitExceeded")
    assert spent["status"] == 403 and ["x-ratelimit-remaining", "0"] in spent["response_headers"]
    assert not any(k.lower() == "x-ratelimit-reset" for k, _ in spent["response_headers"])
    replay(fake_github, "GET", r"/users/.*", [spent] * client.policy.max_attempts)
    gh = await client.api(7)
    with pytest.raises(gidgethub.BadRequest) as info:
        await gh.getitem("/users/jacquev6")
    assert all(delay >= 60 for delay in sleeper.delays), sleeper.delays
    assert len(fake_github.requests("GET", r"^/users/")) <= 2
    wait = rate_limit_wait(info.value)
    assert wait is not None and wait >= 60 and not refused_for_good(info.value)


def octokit(recorded: Path, name: str) -> list[dict[str, Any]]:
    """octokit's recording in PyGithub's form (status, header pairs, body). octokit's
    normalisation wrote `x-ratelimit-reset` in milliseconds (1507651200000); GitHub sends
    seconds, as here."""

    def header(name: str, value: Any) -> tuple[str, str]:
        if name.lower() == "x-ratelimit-reset" and len(str(value)) > 10:
            return name, str(int(value) // 1000)
        return name, str(value)

    return [{"status": r["status"], "response_headers": [header(*h) for h in r["headers"].items()],
             "response_body": r["response"], "path": r["path"]}
            for r in json.loads((recorded / "octokit-fixtures" / f"{name}.json").read_text())]


async def test_pages_are_followed_by_their_recorded_link_headers_to_the_last(
        client: GitHubClient, fake_github: FakeGitHub, recorded: Path) -> None:
    """octokit's 13 issues in five pages of three, and PyGithub's comments of an issue in
    three pages (each page's Link names the next by the repository's id, as GitHub does):
    every item read once, each page asked once, no page after the last."""
    pages = octokit(recorded, "paginate-issues")
    assert len(pages) == 5
    replay(fake_github, "GET", r"/repos/octokit-fixture-org/paginate-issues/issues|/repositories/1000/issues",
           pages)
    gh = await client.api(7)
    issues = [i async for i in gh.getiter("/repos/octokit-fixture-org/paginate-issues/issues?per_page=3")]
    assert len(issues) == 13 == len({i["id"] for i in issues})
    assert [c.query.get("page") for c in fake_github.requests("GET", r"/repositories/1000/issues")] == [
        "2", "3", "4", "5"]
    records = pygithub(recorded, "PaginatedList.testCustomPerPageIteration")
    comments = [r for r in records if "/comments" in r["path"]]
    replay(fake_github, "GET", r".*/issues/1136/comments", comments)
    read = [c async for c in gh.getiter("/repos/PyGithub/PyGithub/issues/1136/comments?per_page=3")]
    assert [c["id"] for c in read] == [c["id"] for r in comments for c in r["response_body"]]
    assert len(fake_github.requests("GET", r".*/issues/1136/comments")) == 3


async def test_three_recorded_502s_then_the_answer(client: GitHubClient, fake_github: FakeGitHub,
                                                   recorded: Path, sleeper: RecordingSleep) -> None:
    records = pygithub(recorded, "Retry.testReturnsRepoAfter3Retries")
    assert [r["status"] for r in records] == [502, 502, 502, 200]
    replay(fake_github, "GET", r"/repos/PyGithub/PyGithub", records)
    gh = await client.api(7)
    repo = await gh.getitem("/repos/PyGithub/PyGithub")
    assert repo["full_name"] == "PyGithub/PyGithub" and len(sleeper.delays) == 3


async def test_the_recorded_abuse_limit_is_waited_for_as_its_retry_after_asks(
        client: GitHubClient, fake_github: FakeGitHub, recorded: Path) -> None:
    """PyGithub's 403 "You have triggered an abuse detection mechanism" (the secondary limit's
    old wording) with `Retry-After: 60`: a rate limit, waited for, not a refusal."""
    _, abuse = pygithub(recorded, "SpecificExceptions.testAuthenticatedRateLimitExceeded")
    assert abuse["status"] == 403
    replay(fake_github, "GET", r"/search/code", [abuse] * 5)
    gh = await client.api(7)
    with pytest.raises(gidgethub.BadRequest) as info:
        await gh.getitem("/search/code?q=jacquev6")
    assert rate_limit_wait(info.value) == 60 and not refused_for_good(info.value)
    assert transient(info.value)
