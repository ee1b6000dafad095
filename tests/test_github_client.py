"""GitHubClient against the in-process fake GitHub server, over real HTTP."""

from __future__ import annotations

import asyncio
import io
import logging
import socket
import time

import gidgethub
import jwt as pyjwt
import pytest

from bot.config import Settings
from bot.github.client import GitHubClient, RetryPolicy, rate_limit_wait, retry_reason
from tests.fakegithub import FakeGitHub, rsa_key_pair

REPO = "verl-project/verl"


class RecordingSleep:
    """The injected sleep: remembers the delays asked for and returns at once."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
        await asyncio.sleep(0)


@pytest.fixture
def client_settings(fake_github: FakeGitHub) -> Settings:
    # The client needs no database: these tests run once, not once per database backend.
    pem, public = rsa_key_pair()
    fake_github.app_id = "4242"
    fake_github.public_key = public
    return Settings.from_env(
        {}, app_id="4242", private_key=pem, api_url=fake_github.url, dry_run=False
    )


@pytest.fixture
def sleeper() -> RecordingSleep:
    return RecordingSleep()


@pytest.fixture
async def client(client_settings: Settings, sleeper: RecordingSleep):
    c = GitHubClient(client_settings, sleep=sleeper, rand=lambda: 0.0)
    yield c
    await c.close()


@pytest.fixture
def installed(fake_github: FakeGitHub) -> FakeGitHub:
    fake_github.add_installation(7, "verl-project", [REPO])
    fake_github.add_installation(8, "huggingface", ["huggingface/trl"])
    fake_github.add_issue(REPO, 1, "Entropy collapses", "after step 200")
    fake_github.add_issue("huggingface/trl", 2, "KL grows")
    return fake_github


async def test_app_jwt_has_skew_margin_and_short_expiry(client: GitHubClient, installed: FakeGitHub):
    app = await client.app_api()
    data = await app.getitem("/app")
    assert data["slug"] == "rltracker"
    call = installed.calls[-1]
    assert call.auth == "jwt" and call.status == 200
    claims = call.jwt_claims
    assert claims is not None
    now = int(time.time())
    assert claims["iat"] <= now - 59
    assert claims["exp"] - claims["iat"] <= 600
    assert claims["exp"] > now
    assert str(claims["iss"]) == "4242"
    # Signed with the app key: the fake verified it with the public half.
    pyjwt.decode(call.token, rsa_key_pair()[1], algorithms=["RS256"])


async def test_installation_token_is_cached(client: GitHubClient, installed: FakeGitHub):
    gh = await client.api(7)
    first = await gh.getitem("/repos/verl-project/verl/issues/1")
    again = await client.api(7)
    await again.getitem("/repos/verl-project/verl/issues/1")
    assert first["title"] == "Entropy collapses"
    assert len(installed.requests("POST", r"/access_tokens$")) == 1
    reads = installed.requests("GET", r"/issues/1$")
    assert [c.auth for c in reads] == ["installation", "installation"]
    assert {c.installation_id for c in reads} == {7}


async def test_token_refreshed_shortly_before_expiry(client: GitHubClient, installed: FakeGitHub):
    gh = await client.api(7)
    installed.token_ttl = 6 * 60  # 6 min left: the token is reused
    await gh.getitem("/repos/verl-project/verl/issues/1")
    await gh.getitem("/repos/verl-project/verl/issues/1")
    assert client.token_refreshes == 1
    client.invalidate_token(7)
    installed.token_ttl = 4 * 60  # under the 5 min margin: refreshed before each use
    await gh.getitem("/repos/verl-project/verl/issues/1")
    await gh.getitem("/repos/verl-project/verl/issues/1")
    assert client.token_refreshes == 3
    tokens = [call.token for call in installed.requests("GET", r"/issues/1$")]
    assert tokens[0] == tokens[1] != tokens[2] != tokens[3]


def _scrubbed_line(message: str, *args: object) -> str:
    """One log line as `serve` writes it (bot.logs.JsonFormatter), on a logger of the test's own."""
    from bot.logs import JsonFormatter

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("rltracker.test_scrubbing")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning(message, *args, extra={"detail": f"Authorization: token {args[0]}"})
    finally:
        logger.removeHandler(handler)
    return stream.getvalue()


async def test_installation_tokens_and_the_app_jwt_are_scrubbed_from_logs(
        client: GitHubClient, installed: FakeGitHub):
    """The scrubber knew the webhook secret, GITHUB_TOKEN and the private key, not the
    installation tokens and app JWTs the client mints: a log line quoting one (an error text
    carrying a request's headers, a library's debug line) wrote it out as it was, a token
    good for an hour on every repository of the installation."""
    gh = await client.api(7)
    await gh.getitem("/repos/verl-project/verl/issues/1")
    token = installed.requests("GET", r"/issues/1$")[-1].token
    jwt = installed.requests("POST", r"/access_tokens$")[-1].token
    assert token and token.startswith("ghs_") and jwt
    line = _scrubbed_line("request with %s failed (app %s)", token, jwt)
    assert token not in line and jwt not in line
    assert line.count("[redacted]") == 3, line


def test_the_scrubber_holds_only_live_tokens_and_a_bounded_number(monkeypatch: pytest.MonkeyPatch):
    """Registered tokens are bounded: one already expired (past a short grace) is not kept,
    and past MAX_EXPIRING the soonest to expire leave, so a service running for months does
    not hold (and test every log line against) every token it ever minted."""
    import secrets as random_secrets

    from bot import logs

    before = logs.registered_secret_count()
    for _ in range(20):
        logs.register_secret("ghs_" + random_secrets.token_hex(18),
                             expires_in=-logs.EXPIRED_GRACE - 60)
    assert logs.registered_secret_count() == before
    monkeypatch.setattr(logs, "MAX_EXPIRING", 5)
    tokens = ["ghs_" + random_secrets.token_hex(18) for _ in range(20)]
    for n, token in enumerate(tokens):
        logs.register_secret(token, expires_in=10**6 + n)  # the later, the longer it lives
    assert logs.registered_secret_count() <= len(logs._secrets) + 5
    assert tokens[-1] not in _scrubbed_line("token %s", tokens[-1])


async def test_one_refresh_at_a_time(client: GitHubClient, installed: FakeGitHub):
    gh = await client.api(7)
    results = await asyncio.gather(
        *(gh.getitem("/repos/verl-project/verl/issues/1") for _ in range(20))
    )
    assert len(results) == 20
    assert len(installed.requests("POST", r"/access_tokens$")) == 1
    # A different installation has its own token.
    gh8 = await client.api(8)
    await gh8.getitem("/repos/huggingface/trl/issues/2")
    assert len(installed.requests("POST", r"/app/installations/8/access_tokens$")) == 1


async def test_retries_server_errors_with_backoff(
    client: GitHubClient, installed: FakeGitHub, sleeper: RecordingSleep
):
    installed.fail_next("GET", r"/issues/1$", 502, times=2)
    gh = await client.api(7)
    data = await gh.getitem("/repos/verl-project/verl/issues/1")
    assert data["number"] == 1
    assert [c.status for c in installed.requests("GET", r"/issues/1$")] == [502, 502, 200]
    # rand() = 0: half of 1 s, then half of 2 s (equal jitter).
    assert sleeper.delays == [0.5, 1.0]


async def test_backoff_has_jitter(client_settings: Settings, installed: FakeGitHub):
    sleeper = RecordingSleep()
    c = GitHubClient(client_settings, sleep=sleeper, rand=lambda: 1.0)
    try:
        installed.fail_next("GET", r"/issues/1$", 503, times=3)
        gh = await c.api(7)
        await gh.getitem("/repos/verl-project/verl/issues/1")
        assert sleeper.delays == [1.0, 2.0, 4.0]
    finally:
        await c.close()


async def test_creating_post_not_repeated_after_server_error(
    client: GitHubClient, installed: FakeGitHub, sleeper: RecordingSleep
):
    gh = await client.api(7)
    installed.fail_next("POST", r"/issues/1/comments$", 502)
    with pytest.raises(gidgethub.GitHubBroken):
        await gh.post("/repos/verl-project/verl/issues/1/comments", data={"body": "once"})
    assert len(installed.requests("POST", r"/comments$")) == 1 and sleeper.delays == []
    # Idempotent POSTs (labels, GraphQL) are retried.
    installed.fail_next("POST", r"/issues/1/labels$", 502)
    await gh.post("/repos/verl-project/verl/issues/1/labels", data={"labels": ["rl"]})
    assert len(installed.requests("POST", r"/labels$")) == 2


async def test_429_honours_retry_after(client: GitHubClient, installed: FakeGitHub, sleeper: RecordingSleep):
    installed.fail_next("POST", r"/comments$", 429, headers={"retry-after": "7"})
    gh = await client.api(7)
    made = await gh.post("/repos/verl-project/verl/issues/1/comments", data={"body": "hi"})
    assert made["user"]["login"] == "rltracker[bot]"
    assert sleeper.delays == [7.0]
    assert len(installed.comments_of(REPO, 1)) == 1


async def test_secondary_rate_limit_with_retry_after(
    client: GitHubClient, installed: FakeGitHub, sleeper: RecordingSleep
):
    installed.secondary_rate_limit("GET", r"/issues/1$", retry_after=3)
    gh = await client.api(7)
    await gh.getitem("/repos/verl-project/verl/issues/1")
    assert sleeper.delays == [3.0]


async def test_secondary_rate_limit_message_without_retry_after(
    client: GitHubClient, installed: FakeGitHub, sleeper: RecordingSleep
):
    installed.secondary_rate_limit("GET", r"/issues/1$", retry_after=None)
    gh = await client.api(7)
    await gh.getitem("/repos/verl-project/verl/issues/1")
    assert sleeper.delays == [60.0]  # GitHub: wait at least a minute


async def test_primary_rate_limit_waits_until_reset(
    client: GitHubClient, installed: FakeGitHub, sleeper: RecordingSleep
):
    installed.rate_limited("GET", r"/issues/1$", reset_in=20)
    gh = await client.api(7)
    await gh.getitem("/repos/verl-project/verl/issues/1")
    assert len(sleeper.delays) == 1
    assert 18 <= sleeper.delays[0] <= 22


async def test_rate_limit_reset_beyond_bound_is_not_waited(
    client: GitHubClient, installed: FakeGitHub, sleeper: RecordingSleep
):
    installed.rate_limited("GET", r"/issues/1$", reset_in=3600)
    gh = await client.api(7)
    with pytest.raises(gidgethub.RateLimitExceeded):
        await gh.getitem("/repos/verl-project/verl/issues/1")
    assert sleeper.delays == []
    assert len(installed.requests("GET", r"/issues/1$")) == 1


async def test_retries_are_bounded(client_settings: Settings, installed: FakeGitHub):
    sleeper = RecordingSleep()
    policy = RetryPolicy(max_attempts=4, max_total_wait=100.0)
    c = GitHubClient(client_settings, sleep=sleeper, policy=policy, rand=lambda: 0.5)
    try:
        installed.fail_next("GET", r"/issues/1$", 502, times=50)
        gh = await c.api(7)
        with pytest.raises(gidgethub.GitHubBroken):
            await gh.getitem("/repos/verl-project/verl/issues/1")
        assert len(installed.requests("GET", r"/issues/1$")) == 4
        assert len(sleeper.delays) == 3
        # The total wait bound stops earlier when the server asks for long pauses.
        sleeper.delays.clear()
        installed.fail_next("GET", r"/issues/2$", 429, times=50, headers={"retry-after": "40"})
        with pytest.raises(gidgethub.BadRequest):
            await gh.getitem("/repos/verl-project/verl/issues/2")
        assert sum(sleeper.delays) <= policy.max_total_wait
        assert len(sleeper.delays) == 2
    finally:
        await c.close()


async def test_plain_403_and_404_are_not_retried(
    client: GitHubClient, installed: FakeGitHub, sleeper: RecordingSleep
):
    installed.fail_next("GET", r"/issues/1$", 403, body={"message": "Resource not accessible by integration"})
    gh = await client.api(7)
    with pytest.raises(gidgethub.BadRequest) as info:
        await gh.getitem("/repos/verl-project/verl/issues/1")
    assert info.value.status_code == 403
    with pytest.raises(gidgethub.BadRequest):
        await gh.getitem("/repos/verl-project/verl/issues/999")
    assert sleeper.delays == []


async def test_connection_errors_retried_then_raised(client_settings: Settings):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    sleeper = RecordingSleep()
    settings = Settings.from_env({}, api_url=f"http://127.0.0.1:{port}")
    c = GitHubClient(settings, sleep=sleeper, policy=RetryPolicy(max_attempts=3))
    try:
        gh = await c.api()
        with pytest.raises(Exception) as info:
            await gh.getitem("/repos/a/b")
        assert "Connect" in type(info.value).__name__ or isinstance(info.value, OSError)
        assert len(sleeper.delays) == 2
    finally:
        await c.close()


async def test_dropped_connections_retried_only_when_safe(
    client: GitHubClient, installed: FakeGitHub, sleeper: RecordingSleep
):
    gh = await client.api(7)
    installed.disconnect_next("GET", r"/issues/1$")
    assert (await gh.getitem("/repos/verl-project/verl/issues/1"))["number"] == 1
    # Retried (by aiohttp itself on a reused keep-alive connection, or by the client).
    assert len(installed.requests("GET", r"/issues/1$")) == 2
    # A POST that may have reached GitHub is not repeated: no risk of a double comment.
    installed.disconnect_next("POST", r"/issues/1/comments$")
    with pytest.raises(Exception) as info:
        await gh.post("/repos/verl-project/verl/issues/1/comments", data={"body": "once"})
    assert "Disconnected" in type(info.value).__name__
    assert len(installed.requests("POST", r"/issues/1/comments$")) == 1


async def test_dropped_graphql_query_is_repeated_a_mutation_is_not(
    client: GitHubClient, installed: FakeGitHub, sleeper: RecordingSleep
):
    """A GraphQL query only reads: repeated after a dropped connection like a GET (it was
    not, being a POST). A mutation may have been applied: not repeated."""
    installed.graphql_handler = lambda q, v: {"data": {"viewer": {"login": "x"}}}
    installed.disconnect_next("POST", r"^/graphql$")
    assert await client.graphql("query { viewer { login } }", installation_id=7) == {"viewer": {"login": "x"}}
    assert len(installed.requests("POST", r"^/graphql$")) == 2
    installed.disconnect_next("POST", r"^/graphql$")
    with pytest.raises(Exception) as info:
        await client.graphql('mutation { addReaction(input: {subjectId: "X", content: THUMBS_UP}) '
                             "{ reaction { content } } }", installation_id=7)
    assert "Disconnected" in type(info.value).__name__
    assert len(installed.requests("POST", r"^/graphql$")) == 3


async def test_revoked_token_is_replaced_once(client: GitHubClient, installed: FakeGitHub):
    gh = await client.api(7)
    await gh.getitem("/repos/verl-project/verl/issues/1")
    installed.tokens.clear()  # GitHub revoked every token
    data = await gh.getitem("/repos/verl-project/verl/issues/1")
    assert data["number"] == 1
    assert len(installed.requests("POST", r"/access_tokens$")) == 2
    assert [c.status for c in installed.requests("GET", r"/issues/1$")] == [200, 401, 304]  # the retry still sends its ETag


async def test_revoked_token_is_replaced_once_for_graphql(client: GitHubClient, installed: FakeGitHub):
    """As for REST: an installation token GitHub revoked before its expiry (another process
    handled the event that revoked it) is replaced once. GraphQL kept the dead token until
    its expiry, an hour: every discussion reply, minimise and reaction failed meanwhile."""
    installed.graphql_handler = lambda q, v: {"data": {"viewer": {"login": "x"}}}
    await client.graphql("{ viewer { login } }", installation_id=7)
    installed.tokens.clear()  # GitHub revoked every token
    assert await client.graphql("{ viewer { login } }", installation_id=7) == {"viewer": {"login": "x"}}
    assert len(installed.requests("POST", r"/access_tokens$")) == 2
    assert [c.status for c in installed.requests("POST", r"^/graphql$")] == [200, 401, 200]


async def test_suspended_installation_raises(client: GitHubClient, installed: FakeGitHub):
    installed.suspend_installation(7)
    gh = await client.api(7)
    with pytest.raises(gidgethub.BadRequest) as info:
        await gh.getitem("/repos/verl-project/verl/issues/1")
    assert info.value.status_code == 403


async def test_graphql_with_installation_token(client: GitHubClient, installed: FakeGitHub):
    seen: list[tuple[str, dict]] = []

    def handler(query: str, variables: dict) -> dict:
        seen.append((query, variables))
        return {"data": {"repository": {"name": variables["name"]}}}

    installed.graphql_handler = handler
    installed.fail_next("POST", r"^/graphql$", 502)
    data = await client.graphql(
        "query($owner: String!, $name: String!) { repository(owner: $owner, name: $name) { name } }",
        installation_id=7, owner="verl-project", name="verl",
    )
    assert data == {"repository": {"name": "verl"}}
    assert seen[0][1] == {"owner": "verl-project", "name": "verl"}
    calls = installed.requests("POST", r"^/graphql$")
    assert [c.status for c in calls] == [502, 200]
    assert calls[-1].auth == "installation"


async def test_graphql_errors_raise_query_error(client: GitHubClient, installed: FakeGitHub):
    installed.graphql_handler = lambda q, v: {"errors": [{"message": "Field 'x' doesn't exist"}]}
    with pytest.raises(gidgethub.QueryError):
        await client.graphql("{ x }", installation_id=7)


async def test_graphql_rate_limit_answered_200_is_a_rate_limit(
    client: GitHubClient, installed: FakeGitHub, sleeper: RecordingSleep
):
    """GitHub answers a spent GraphQL limit with 200, RATE_LIMITED errors and the reset in
    its headers: the client waits for a near reset like REST's, and past its bound raises
    it as a rate limit (rate_limit_wait gives the wait) instead of a plain QueryError (the
    worker retried a command's mutation after 5 s, the sync after 2 s)."""
    installed.graphql_handler = lambda q, v: {"data": {"viewer": {"login": "x"}}}
    limited = {"data": None, "errors": [{"type": "RATE_LIMITED",
                                         "message": "API rate limit exceeded for installation ID 7."}]}

    def spent(reset_in: int) -> dict[str, str]:
        return {"x-ratelimit-limit": "5000", "x-ratelimit-remaining": "0",
                "x-ratelimit-reset": str(int(time.time()) + reset_in)}

    installed.fail_next("POST", r"^/graphql$", 200, headers=spent(20), body=limited)
    assert await client.graphql("{ viewer { login } }", installation_id=7) == {"viewer": {"login": "x"}}
    assert len(sleeper.delays) == 1 and 18 <= sleeper.delays[0] <= 22

    installed.fail_next("POST", r"^/graphql$", 200, headers=spent(1800), body=limited)
    with pytest.raises(gidgethub.BadRequest) as info:
        await client.graphql("{ viewer { login } }", installation_id=7)
    wait = rate_limit_wait(info.value)
    assert wait is not None and 1700 <= wait <= 1900


@pytest.mark.parametrize("body", ["<html><body>Unicorn!</body></html>", ""], ids=["html", "empty"])
async def test_graphql_server_error_without_json_is_github_broken(
    client: GitHubClient, installed: FakeGitHub, body: str
):
    """A 502 from GitHub's front end carries an HTML page or nothing. gidgethub reads the body
    before the status, so the client raised GraphQLResponseTypeError or GraphQLException:
    the worker took it for an unexpected error (five attempts over seven minutes) instead
    of GitHub being down (GitHubBroken, retried for hours), as a 5xx with JSON is."""
    from aiohttp import web

    from bot.webhooks.worker import transient

    @installed.route("POST", r"/graphql")
    def down(fake: FakeGitHub, request: web.Request, match: object, _: object) -> web.Response:
        return web.Response(status=502, text=body, content_type="text/html")

    with pytest.raises(gidgethub.GitHubBroken) as info:
        await client.graphql("{ viewer { login } }", installation_id=7)
    assert info.value.status_code == 502 and transient(info.value)
    assert len(installed.requests("POST", r"^/graphql$")) == 5  # the client's own retries


async def test_etag_cache_per_installation(client: GitHubClient, installed: FakeGitHub):
    installed.add_installation(9, "verl-mirror", [REPO])
    gh = await client.api(7)
    a = await gh.getitem("/repos/verl-project/verl/issues/1")
    b = await gh.getitem("/repos/verl-project/verl/issues/1")
    assert a == b
    gh9 = await client.api(9)
    await gh9.getitem("/repos/verl-project/verl/issues/1")
    calls = installed.requests("GET", r"/issues/1$")
    assert [c.status for c in calls] == [200, 304, 200]
    assert "If-None-Match" not in calls[0].headers
    assert calls[1].headers.get("If-None-Match")
    assert "If-None-Match" not in calls[2].headers  # installation 9 has its own cache
    # A change on GitHub is seen: the ETag no longer matches.
    installed.issue(REPO, 1)["title"] = "Entropy collapses (edited)"
    c = await gh.getitem("/repos/verl-project/verl/issues/1")
    assert c["title"] == "Entropy collapses (edited)"


async def test_token_and_anonymous_fallbacks(fake_github: FakeGitHub, sleeper: RecordingSleep):
    fake_github.add_issue(REPO, 3, "x")
    with_token = Settings.from_env(
        {"GITHUB_TOKEN": fake_github.user_token, "GITHUB_API_URL": fake_github.url}
    )
    anonymous = Settings.from_env({"GITHUB_API_URL": fake_github.url})
    for settings, expected in ((with_token, "token"), (anonymous, None)):
        c = GitHubClient(settings, sleep=sleeper)
        try:
            gh = await c.api(7)  # no app credentials: the id is ignored
            await gh.getitem("/repos/verl-project/verl/issues/3")
        finally:
            await c.close()
        assert fake_github.calls[-1].auth == expected
    assert fake_github.requests("POST", r"/access_tokens$") == []


async def test_app_api_needs_credentials(fake_github: FakeGitHub):
    c = GitHubClient(Settings.from_env({"GITHUB_API_URL": fake_github.url}))
    try:
        with pytest.raises(RuntimeError, match="credentials"):
            await c.app_api()
        assert await c.installation_for_repo(REPO) is None
    finally:
        await c.close()


async def test_private_key_with_escaped_newlines(fake_github: FakeGitHub, client_settings: Settings):
    one_line = client_settings.private_key.replace("\n", "\\n")
    settings = Settings.from_env(
        {"GITHUB_APP_ID": "4242", "GITHUB_PRIVATE_KEY": one_line, "GITHUB_API_URL": fake_github.url}
    )
    c = GitHubClient(settings)
    try:
        app = await c.app_api()
        await app.getitem("/app")
        assert fake_github.calls[-1].status == 200
    finally:
        await c.close()


async def test_installation_for_repo(client: GitHubClient, installed: FakeGitHub):
    assert await client.installation_for_repo("Verl-Project/VERL") == 7
    assert await client.installation_for_repo("nobody/nothing") is None
    await client.installation_for_repo("verl-project/verl")
    assert len(installed.requests("GET", r"/installation$")) == 2  # the hit was cached


async def test_pagination_through_getiter(client: GitHubClient, installed: FakeGitHub):
    for i in range(65):
        installed.add_comment(REPO, 1, f"comment {i}")
    gh = await client.api(7)
    bodies = [c["body"] async for c in gh.getiter("/repos/verl-project/verl/issues/1/comments")]
    assert bodies == [f"comment {i}" for i in range(65)]
    assert len(installed.requests("GET", r"/issues/1/comments$")) == 3


async def test_fake_refuses_anonymous_writes(fake_github: FakeGitHub, sleeper: RecordingSleep):
    fake_github.add_issue(REPO, 4, "x")
    c = GitHubClient(Settings.from_env({"GITHUB_API_URL": fake_github.url}), sleep=sleeper)
    try:
        gh = await c.api()
        with pytest.raises(gidgethub.BadRequest) as info:
            await gh.post("/repos/verl-project/verl/issues/4/comments", data={"body": "x"})
        assert info.value.status_code == 401
    finally:
        await c.close()


async def test_secrets_never_logged(
    client: GitHubClient, installed: FakeGitHub, caplog: pytest.LogCaptureFixture
):
    caplog.set_level(logging.DEBUG)
    installed.fail_next("GET", r"/issues/1$", 502)
    installed.secondary_rate_limit("GET", r"/issues/1$", retry_after=1)
    gh = await client.api(7)
    await gh.getitem("/repos/verl-project/verl/issues/1?access_token=leak")
    installed.tokens.clear()
    await gh.getitem("/repos/verl-project/verl/issues/1")
    installed.graphql_handler = lambda q, v: {"data": {}}
    await client.graphql("{ viewer { login } }", installation_id=7)
    assert "retry" in caplog.text  # something was logged
    secrets = [c.token for c in installed.calls if c.token] + [client.app_jwt()]
    secrets.append(client.settings.private_key.splitlines()[1])
    text = caplog.text + " ".join(str(r.args) for r in caplog.records)
    for secret in secrets:
        assert secret not in text
    assert "leak" not in text
    assert "private_key" not in repr(client.settings)


def test_retry_reason_classification():
    assert retry_reason(502, {}, b"") == "server_error"
    assert retry_reason(429, {}, b"") == "too_many_requests"
    assert retry_reason(403, {"retry-after": "5"}, b"{}") == "secondary_rate_limit"
    body = b'{"message": "You have exceeded a secondary rate limit."}'
    assert retry_reason(403, {}, body) == "secondary_rate_limit"
    assert retry_reason(403, {"x-ratelimit-remaining": "0"}, b"{}") == "rate_limit"
    assert retry_reason(403, {"x-ratelimit-remaining": "10"}, b'{"message": "Forbidden"}') is None
    assert retry_reason(404, {}, b"") is None
    assert retry_reason(200, {}, b"") is None


async def test_shared_fixtures_wire_the_fake(app_ctx, fake_github: FakeGitHub):
    """app_settings / github_client / app_ctx: what other helpers' tests build on."""
    assert app_ctx.settings.api_url == fake_github.url
    assert app_ctx.settings.dry_run is False and app_ctx.settings.has_app_credentials
    fake_github.add_installation(11, "THUDM", ["THUDM/slime"])
    fake_github.add_issue("THUDM/slime", 5, "Rollout mismatch")
    gh = await app_ctx.github.api(11)
    await gh.post("/repos/THUDM/slime/issues/5/labels", data={"labels": ["rl"]})
    assert [lab["name"] for lab in fake_github.issue("THUDM/slime", 5)["labels"]] == ["rl"]
    fake_github.set_file("THUDM/slime", "CONTRIBUTING.md", "Be kind. 中文")
    data = await gh.getitem("/repos/THUDM/slime/contents/CONTRIBUTING.md")
    import base64

    assert base64.b64decode(data["content"]).decode() == "Be kind. 中文"
    listing = await gh.getitem("/repos/THUDM/slime/contents/")
    assert [e["name"] for e in listing] == ["CONTRIBUTING.md"]


async def test_token_read_from_a_file_with_its_newline_is_accepted(fake_github: FakeGitHub
                                                                    ) -> None:
    """GITHUB_TOKEN filled from a file ends in a newline: aiohttp refused the Authorization
    header it made ("potential header injection"), so every GitHub call failed."""
    settings = Settings.from_env({"GITHUB_TOKEN": fake_github.user_token + "\n",
                                  "GITHUB_API_URL": fake_github.url}, database_may_be_absent=True)
    fake_github.add_issue(REPO, 1, "Entropy collapses")
    c = GitHubClient(settings, sleep=RecordingSleep(), rand=lambda: 0.0)
    try:
        gh = await c.api()
        issue = await gh.getitem(f"/repos/{REPO}/issues/1")
    finally:
        await c.close()
    assert issue["number"] == 1
    assert fake_github.calls[-1].auth == "token"


async def test_a_reinstalled_repository_is_looked_up_again(client_settings: Settings, installed: FakeGitHub,
                                                           sleeper: RecordingSleep):
    """Uninstalled and installed again (a new installation id, the old one's tokens revoked):
    the old installation's 404 for a token drops every repository mapped to it, and a
    mapping older than REPO_INSTALLATION_TTL is asked of GitHub again."""
    import time

    import gidgethub

    from bot.github.client import REPO_INSTALLATION_TTL, InstallationGone

    back = [0.0]  # the client's clock this far behind (the fake checks JWTs on the real one)
    c = GitHubClient(client_settings, sleep=sleeper, clock=lambda: time.time() - back[0])
    try:
        assert await c.installation_for_repo(REPO) == 7
        installed.remove_installation(7)
        installed.add_installation(8, "verl-project", repos=[REPO])
        gh = await c.api(7)
        with pytest.raises(InstallationGone) as refused:
            await gh.getitem("/repos/verl-project/verl/issues/1")
        assert isinstance(refused.value, gidgethub.BadRequest) and refused.value.status_code == 410  # not the resource's 404
        assert await c.installation_for_repo(REPO) == 8
        # Moved without a refusal the client saw: read again once the mapping is old.
        back[0] = REPO_INSTALLATION_TTL + 1
        assert await c.installation_for_repo(REPO, refresh=True) == 8
        installed.remove_installation(8)
        installed.add_installation(9, "verl-project", repos=[REPO])
        assert await c.installation_for_repo(REPO) == 8
        back[0] = 0.0
        assert await c.installation_for_repo(REPO) == 9
    finally:
        await c.close()


async def test_a_late_401_for_the_old_token_does_not_drop_the_new_one(client: GitHubClient,
                                                                     installed: FakeGitHub):
    """Two requests went out with a token GitHub then revoked: the first 401 refreshes it; the
    second, answered later, dropped the token just refreshed and asked GitHub for another (a
    burst of jobs made as many token requests as late answers). Only the refused token is
    dropped: one token request."""
    gate, arrived = asyncio.Event(), asyncio.Event()
    slow: list[int] = []

    @installed.route("GET", r"/repos/verl-project/verl/issues/2")
    async def _slow(fake: FakeGitHub, request: object, match: object, body: object) -> object:
        slow.append(1)
        if len(slow) == 1:
            arrived.set()
            await gate.wait()  # answered after the other request's refresh
            return 401, {"message": "Bad credentials"}
        return {"number": 2, "title": "late"}

    gh = await client.api(7)
    await gh.getitem("/repos/verl-project/verl/issues/1")  # token T1
    late = asyncio.create_task(gh.getitem("/repos/verl-project/verl/issues/2"))
    await arrived.wait()
    installed.tokens.clear()  # T1 revoked
    await gh.getitem("/repos/verl-project/verl/issues/1")  # 401, refreshed: T2
    gate.set()
    assert (await late)["title"] == "late"
    assert len(installed.requests("POST", r"/access_tokens$")) == 2  # T1 and T2, no T3


async def test_the_etag_cache_is_bounded_across_installations(client_settings: Settings,
                                                              installed: FakeGitHub,
                                                              sleeper: RecordingSleep):
    """Each installation had its own LRU of 2,000 responses and nothing bounded their sum: an
    app installed on thousands of repositories (hundreds of installations) kept up to 2,000
    responses for each, for the life of the process, uninstalled ones included. One bound
    holds for all of them now (`etag_entries`), each installation's responses still apart."""
    for n in (3, 4):
        installed.add_issue(REPO, n, f"issue {n}")
        installed.add_issue("huggingface/trl", n, f"issue {n}")
    c = GitHubClient(client_settings, sleep=sleeper, etag_entries=4)
    try:
        for iid, repo in ((7, REPO), (8, "huggingface/trl")):
            gh = await c.api(iid)
            for n in (1, 3, 4) if iid == 7 else (2, 3, 4):
                await gh.getitem(f"/repos/{repo}/issues/{n}")
        assert c.cached_responses == 4
        gh7, gh8 = await c.api(7), await c.api(8)
        await gh8.getitem("/repos/huggingface/trl/issues/4")  # kept: asked with its ETag
        await gh7.getitem(f"/repos/{REPO}/issues/1")  # the oldest: dropped
        assert [c.status for c in installed.calls[-2:]] == [304, 200]
        # Installation 9 reading what installation 8 has cached asks without its ETag.
        installed.add_installation(9, "huggingface", ["huggingface/trl"])
        gh9 = await c.api(9)
        await gh9.getitem("/repos/huggingface/trl/issues/4")
        assert installed.calls[-1].status == 200 and "If-None-Match" not in installed.calls[-1].headers
        c.forget_installation(8)
        assert c.cached_responses == 2  # installation 8's responses went with it
    finally:
        await c.close()


async def test_429_without_retry_after_waits_as_a_secondary_limit(
    client: GitHubClient, installed: FakeGitHub, sleeper: RecordingSleep
):
    """GitHub answers a secondary rate limit with 403 or 429; without retry-after (and with
    requests left) it asks for at least a minute's wait, then exponentially longer. A 429
    was retried after the 5xx backoff (0.5 s, 1 s, 2 s...): more requests into the limit,
    which GitHub may answer by banning the integration."""
    installed.fail_next("GET", r"/issues/1$", 429, body={"message": "Too many requests"})
    gh = await client.api(7)
    await gh.getitem("/repos/verl-project/verl/issues/1")
    assert sleeper.delays == [60.0]  # GitHub: wait at least a minute


async def test_an_uninstalled_installation_is_forgotten_with_several_repositories_mapped(
    client: GitHubClient, installed: FakeGitHub
):
    """forget_installation scanned the repository mapping with items(), whose reads moved
    each entry in the LRU while it was iterated: with two repositories mapped, RuntimeError
    ("OrderedDict mutated during iteration") instead of InstallationGone for a request through
    an uninstalled installation, and from installation.deleted and suspend."""
    from bot.github.client import InstallationGone

    assert await client.installation_for_repo(REPO) == 7
    assert await client.installation_for_repo("huggingface/trl") == 8
    installed.remove_installation(7)
    gh = await client.api(7)
    with pytest.raises(InstallationGone):
        await gh.getitem("/repos/verl-project/verl/issues/1")
    client.forget_installation(8)  # as installation.deleted does
    calls = len(installed.requests("GET", r"/installation$"))
    assert await client.installation_for_repo("huggingface/trl") == 8  # asked again
    assert len(installed.requests("GET", r"/installation$")) == calls + 1
