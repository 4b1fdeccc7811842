"""The GitHub client against a real HTTP server on 127.0.0.1: pagination, exactly-once
filing, retries with bounded backoff, and one-line errors for what retrying cannot fix."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fake_github import REPO, TOKEN, Canned, State, fake_github

from tracker.common.errors import TrackerError
from tracker.release.issues import IssueDoc, IssueFacts, fingerprint_marker
from tracker.release.publish import GitHubClient

Server = tuple[str, State]


@pytest.fixture
def server() -> Iterator[Server]:
    with fake_github() as running:
        yield running


class Sleeps(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def client_for(server: Server, sleeps: Sleeps | None = None, **kwargs: object) -> GitHubClient:
    url, _ = server
    return GitHubClient(
        REPO, TOKEN, url, sleep=sleeps if sleeps is not None else Sleeps(), **kwargs
    )  # type: ignore[arg-type]


def issue(subject: str, version: str = "v0.5.9") -> IssueDoc:
    report = IssueFacts("model_wrapper_broke", "EAGLE3", "target", subject, version, "v0.5.8")
    body = f"{fingerprint_marker(report.fingerprint)}\n{subject} broke\n"
    return IssueDoc(report, f"[EAGLE3] {subject} broke", ("sglang-tracker", "model-wrapper"), body)


def tracked(state: State, doc: IssueDoc, status: str = "open") -> None:
    state.add_issue(doc.title, doc.body, list(doc.labels), state=status)


def creations(state: State) -> int:
    return sum(
        1 for method, path in state.requests if method == "POST" and path.endswith("/issues")
    )


# ----------------------------------------------------------------------- listing


def test_tracked_issues_are_collected_from_every_page_open_and_closed(server: Server) -> None:
    _, state = server
    docs = [issue(f"Model{i}") for i in range(5)]
    for i, doc in enumerate(docs):
        tracked(state, doc, "closed" if i % 2 else "open")
    state.add_issue("someone else's", "no marker", ["bug"])
    state.add_issue("a pull request", docs[0].body, ["sglang-tracker"], pull_request=True)
    with client_for(server) as client:
        found = client.tracked_issues()
    assert sorted(i.fingerprint or "" for i in found) == sorted(d.fingerprint for d in docs)
    assert {i.state for i in found} == {"open", "closed"}
    pages = [p for m, p in state.requests if m == "GET"]
    assert len(pages) == 3  # 5 tracked issues and the pull request, two per page
    assert all("state=all" in p and "labels=sglang-tracker" in p for p in pages)


def test_a_next_link_to_another_host_is_refused_so_the_token_stays_home(server: Server) -> None:
    _, state = server
    state.canned.append(Canned(200, {"Link": '<http://elsewhere.invalid/x>; rel="next"'}, []))
    with client_for(server) as client, pytest.raises(TrackerError, match=r"elsewhere\.invalid"):
        client.tracked_issues()
    assert len(state.requests) == 1


# ----------------------------------------------------------------------- filing


def test_publishing_files_each_new_issue_with_its_title_labels_and_body(server: Server) -> None:
    _, state = server
    docs = [issue("KimiK25ForConditionalGeneration"), issue("StepVLForConditionalGeneration")]
    with client_for(server) as client:
        created = [client.create_issue(d.title, d.body, d.labels) for d in docs]
    assert [i.fingerprint for i in created] == [d.fingerprint for d in docs]
    assert [i["title"] for i in state.issues] == [d.title for d in docs]
    assert state.issues[0]["body"] == docs[0].body
    assert [x["name"] for x in state.issues[0]["labels"]] == ["sglang-tracker", "model-wrapper"]


def test_a_create_whose_answer_was_lost_is_found_instead_of_filed_twice(server: Server) -> None:
    _, state = server
    state.canned.append(Canned(502, method="POST", apply=True))
    doc = issue("KimiK25ForConditionalGeneration")
    sleeps = Sleeps()
    with client_for(server, sleeps) as client:
        created = client.create_issue(doc.title, doc.body, doc.labels)
    assert len(state.bodies_with(doc.fingerprint)) == 1
    assert created.number == 1
    assert creations(state) == 1
    assert sleeps == [1.0]


def test_labels_dropped_by_github_stop_publishing_before_duplicates_can_happen(
    server: Server,
) -> None:
    _, state = server
    state.drop_labels = True
    with client_for(server) as client, pytest.raises(TrackerError, match="without the"):
        for doc in (issue("A"), issue("B")):
            client.create_issue(doc.title, doc.body, doc.labels)
    assert creations(state) == 1


# ----------------------------------------------------------------------- retries


def test_server_errors_are_retried_with_growing_bounded_delays(server: Server) -> None:
    _, state = server
    state.canned.extend([Canned(500), Canned(502), Canned(503)])
    sleeps = Sleeps()
    with client_for(server, sleeps, max_wait=3.0) as client:
        assert client.tracked_issues() == []
    assert sleeps == [1.0, 2.0, 3.0]


def test_persistent_server_errors_give_up_after_the_attempt_limit(server: Server) -> None:
    _, state = server
    state.canned.extend(Canned(500) for _ in range(10))
    sleeps = Sleeps()
    with (
        client_for(server, sleeps, max_attempts=4) as client,
        pytest.raises(TrackerError, match=r"kept failing.*after 4 attempts"),
    ):
        client.tracked_issues()
    assert len(state.requests) == 4
    assert len(sleeps) == 3


def test_a_429_waits_as_long_as_retry_after_says(server: Server) -> None:
    _, state = server
    state.canned.append(Canned(429, {"Retry-After": "7"}))
    sleeps = Sleeps()
    with client_for(server, sleeps) as client:
        client.tracked_issues()
    assert sleeps == [7.0]


def test_an_exhausted_rate_limit_waits_until_its_reset_time(server: Server) -> None:
    _, state = server
    state.canned.append(
        Canned(
            403,
            {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1000012"},
            {"message": "API rate limit exceeded"},
        )
    )
    sleeps = Sleeps()
    with client_for(server, sleeps, clock=lambda: 1_000_000.0) as client:
        client.tracked_issues()
    assert sleeps == [12.0]


def test_a_rate_limit_resetting_too_late_stops_with_a_clear_error(server: Server) -> None:
    _, state = server
    state.canned.append(Canned(403, {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1003600"}))
    sleeps = Sleeps()
    with (
        client_for(server, sleeps, clock=lambda: 1_000_000.0) as client,
        pytest.raises(TrackerError, match="rate limit is used up for 3600 s"),
    ):
        client.tracked_issues()
    assert sleeps == []


def test_a_rate_limited_create_is_repeated_without_filing_twice(server: Server) -> None:
    _, state = server
    state.canned.append(Canned(429, {"Retry-After": "2"}, method="POST"))
    sleeps = Sleeps()
    with client_for(server, sleeps) as client:
        doc = issue("A")
        client.create_issue(doc.title, doc.body, doc.labels)
    assert len(state.issues) == 1
    assert sleeps == [2.0]


# ------------------------------------------------------------------------- refusals


def test_a_bad_token_stops_at_once_with_a_one_line_error() -> None:
    with fake_github() as (url, state):
        client = GitHubClient(REPO, "wrong-token", url, sleep=Sleeps())
        with client, pytest.raises(TrackerError) as info:
            client.tracked_issues()
    assert "401" in str(info.value) and "GITHUB_TOKEN" in str(info.value)
    assert "\n" not in str(info.value)
    assert len(state.requests) == 1


def test_a_403_that_is_not_a_rate_limit_is_a_permission_error(server: Server) -> None:
    _, state = server
    state.canned.append(Canned(403, body={"message": "Resource not accessible by integration"}))
    with client_for(server) as client, pytest.raises(TrackerError, match="permission"):
        client.tracked_issues()
    assert len(state.requests) == 1


def test_a_missing_repository_names_the_repository() -> None:
    with fake_github() as (url, state):
        client = GitHubClient("octo/nope", TOKEN, url, sleep=Sleeps())
        with client, pytest.raises(TrackerError, match="no repository octo/nope"):
            client.tracked_issues()
    assert len(state.requests) == 1


def test_posting_without_a_token_or_with_a_bad_repository_is_refused_up_front() -> None:
    with pytest.raises(TrackerError, match="GITHUB_TOKEN"):
        GitHubClient(REPO, None, "http://127.0.0.1:9")
    with pytest.raises(TrackerError, match="OWNER/REPO"):
        GitHubClient("not a repo", TOKEN, "http://127.0.0.1:9")
    with pytest.raises(TrackerError, match="http"):
        GitHubClient(REPO, TOKEN, "ftp://127.0.0.1")


# ------------------------------------------------------------------------ lifecycle


def test_a_comment_with_a_marker_is_posted_once_and_closing_closes(server: Server) -> None:
    _, state = server
    doc = issue("A")
    tracked(state, doc)
    with client_for(server) as client:
        client.comment(1, "<!-- m -->\nFixed in v0.5.10", marker="<!-- m -->")
        client.comment(1, "<!-- m -->\nFixed in v0.5.10", marker="<!-- m -->")
        client.close_issue(1)
    assert state.comments[1] == ["<!-- m -->\nFixed in v0.5.10"]
    assert state.issues[0]["state"] == "closed"
    assert state.issues[0]["state_reason"] == "completed"


# ------------------------------------------------------------------------ dry run


def test_a_read_only_client_reads_but_refuses_every_write_before_sending_it(
    server: Server,
) -> None:
    _, state = server
    tracked(state, issue("A"))
    with client_for(server, read_only=True) as client:
        assert [i.title for i in client.tracked_issues()] == ["[EAGLE3] A broke"]
        for write in (
            lambda: client.create_issue("t", "b", ["sglang-tracker"]),
            lambda: client.comment(1, "body"),
            lambda: client.close_issue(1),
        ):
            with pytest.raises(TrackerError, match=r"^dry run: refusing to send (POST|PATCH) "):
                write()
    assert {method for method, _ in state.requests} == {"GET"}
    assert len(state.issues) == 1 and state.issues[0]["state"] == "open"
    assert state.comments == {}


def test_a_read_only_client_can_be_made_without_a_token() -> None:
    with fake_github() as (url, state):
        client = GitHubClient(REPO, None, url, read_only=True, max_attempts=1)
        with client, pytest.raises(TrackerError, match="rejected the token"):
            client.tracked_issues()  # the fake server wants a token for everything
    assert state.requests == [
        ("GET", f"/repos/{REPO}/issues?state=all&labels=sglang-tracker&per_page=100")
    ]


# ------------------------------------------------------------------ the token's safety


@pytest.mark.parametrize("url", ["http://github.example.com", "http://10.0.0.1:8080/api"])
def test_the_token_is_never_sent_in_cleartext_to_another_host(url: str) -> None:
    with pytest.raises(TrackerError, match=r"refusing to send GITHUB_TOKEN in cleartext"):
        GitHubClient(REPO, TOKEN, url)


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:9", "http://localhost:9", "http://[::1]:9", "https://gh.example"]
)
def test_the_token_may_go_over_https_or_to_this_machine(url: str) -> None:
    GitHubClient(REPO, TOKEN, url).__exit__()


def test_a_read_only_client_without_a_token_may_read_over_plain_http() -> None:
    GitHubClient(REPO, None, "http://github.example.com", read_only=True).__exit__()


def test_credentials_in_the_api_url_never_appear_in_an_error() -> None:
    client = GitHubClient(
        REPO, TOKEN, "http://user:URLPASSWORD123@127.0.0.1:1", sleep=Sleeps(), max_attempts=1
    )
    with client, pytest.raises(TrackerError) as info:
        client.tracked_issues()
    assert "cannot connect to http://127.0.0.1:1" in str(info.value)
    assert "URLPASSWORD123" not in str(info.value) and "user:" not in str(info.value)


@pytest.mark.parametrize("status", [401, 422])
def test_a_server_message_echoing_the_token_is_shown_redacted_escaped_and_short(
    server: Server, status: int
) -> None:
    _, state = server
    echoed = f"bad credentials: Bearer {TOKEN}\x1b]0;pwned\x07\n" + "A" * 5000
    state.canned.append(Canned(status, body={"message": echoed}))
    with client_for(server) as client, pytest.raises(TrackerError) as info:
        client.tracked_issues()
    message = str(info.value)
    assert TOKEN not in message and "[redacted]" in message
    assert "\x1b" not in message and "\x07" not in message and "\n" not in message
    assert "\\x1b]0;pwned\\x07" in message
    assert len(message) < 400


def test_a_token_ending_in_a_newline_is_used_without_it(server: Server) -> None:
    url, state = server
    tracked(state, issue("A"))
    with GitHubClient(REPO, TOKEN + "\r\n", url, sleep=Sleeps()) as client:
        assert len(client.tracked_issues()) == 1


@pytest.mark.parametrize("token", ["tökén", "abc def", "abc\x00def"])
def test_a_token_that_cannot_be_a_token_gets_one_clear_line(token: str) -> None:
    with pytest.raises(TrackerError, match=r"^GITHUB_TOKEN holds a character") as info:
        GitHubClient(REPO, token, "http://127.0.0.1:9")
    assert token not in str(info.value) and "\n" not in str(info.value)
