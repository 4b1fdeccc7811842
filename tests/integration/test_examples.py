"""The example workflows (examples/workflows/) and the composite action (action.yml), run
here the way GitHub Actions would run them: `run:` steps in bash with the step's
environment, steps that use the action through the action's own `run` step, `${{ }}`
expressions from a table each test gives, and every `tracker` command on real releases.

The scheduled watch runs twice against a GitHub API on 127.0.0.1 and a bare repository as
`origin` (where the state branch goes); the pull-request workflow runs on a git repository
built from the v0.5.8 and v0.5.9 releases, v0.5.8 as the PR's base and v0.5.9 as its head.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from fake_github import REPO, TOKEN, fake_github

from bench.build_release_repo import build_release_repo
from tracker.sources.pypi import PypiSource

ROOT = Path(__file__).resolve().parents[2]
ACTION = ROOT / "action.yml"
WORKFLOWS = ROOT / "examples" / "workflows"
WATCH = WORKFLOWS / "sglang-tracker-watch.yml"
PR = WORKFLOWS / "sglang-tracker-pr.yml"
KIMI = "KimiK25ForConditionalGeneration"

# The steps of each workflow that run tracker, and so are run by a test below.
TESTED = {WATCH.name: {"watch"}, PR.name: {"check", "diff"}}

EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
OUR_ACTION = re.compile(r"[\w.-]+/sglang-tracker@[\w.-]+")


# ------------------------------------------------------------------------ reading


def load(path: Path) -> dict[str, Any]:
    doc = yaml.safe_load(path.read_text())
    assert isinstance(doc, dict)
    # PyYAML reads YAML 1.1, where the bare key `on` is the boolean true.
    if True in doc:
        doc["on"] = doc.pop(True)
    return doc


def steps(workflow: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [s for job in workflow["jobs"].values() for s in job["steps"]]


def step(workflow: Mapping[str, Any], step_id: str) -> dict[str, Any]:
    return next(s for s in steps(workflow) if s.get("id") == step_id)


def uses_our_action(s: Mapping[str, Any]) -> bool:
    return bool(OUR_ACTION.fullmatch(str(s.get("uses", ""))))


def tracker_commands(s: Mapping[str, Any]) -> list[str]:
    """The `tracker ...` command lines a step runs: the action's `args`, or lines of a
    `run:` script that start with `tracker`."""
    if uses_our_action(s):
        return ["tracker " + " ".join(str(s["with"]["args"]).split())]
    script = str(s.get("run", "")).replace("\\\n", " ")
    return [
        " ".join(line.split())
        for line in script.splitlines()
        if line.strip().startswith("tracker ")
    ]


def substitute(text: str, context: Mapping[str, str]) -> str:
    def value(match: re.Match[str]) -> str:
        expression = match.group(1)
        assert expression in context, f"the test has no value for ${{{{ {expression} }}}}"
        return context[expression]

    return EXPRESSION.sub(value, text)


# ------------------------------------------------------------------------ running


@dataclass
class Ran:
    code: int
    outputs: dict[str, str]
    stdout: str
    stderr: str


@dataclass
class Runner:
    """Runs workflow steps on this machine in `workspace`, with `temp` as RUNNER_TEMP."""

    workspace: Path
    temp: Path
    context: dict[str, str]
    env: dict[str, str]
    outputs: dict[str, dict[str, str]] = field(default_factory=dict)
    _scripts: int = 0

    def expressions(self) -> dict[str, str]:
        found = {
            f"steps.{sid}.outputs.{k}": v
            for sid, out in self.outputs.items()
            for k, v in out.items()
        }
        return {**self.context, **found, "runner.temp": str(self.temp)}

    def run(self, workflow: Mapping[str, Any], step_id: str) -> Ran:
        s = step(workflow, step_id)
        ctx = self.expressions()
        env = dict(self.env)
        for scope in (workflow, *workflow["jobs"].values(), s):
            env.update({k: substitute(str(v), ctx) for k, v in scope.get("env", {}).items()})
        if uses_our_action(s):
            ran = self.action({k: substitute(str(v), ctx) for k, v in s["with"].items()}, env)
        else:
            ran = self.bash(substitute(s["run"], ctx), env, self.workspace)
        self.outputs[step_id] = ran.outputs
        return ran

    def action(self, given: Mapping[str, str], env: dict[str, str]) -> Ran:
        """The action's `Run tracker` step, then its `Fail` step when `fail` says so; the
        step's exit code is the second's, the outputs are the first's."""
        action = load(ACTION)
        unknown = set(given) - set(action["inputs"])
        assert not unknown, f"the action has no input {unknown}"
        values = {
            name: given.get(name, spec.get("default", ""))
            for name, spec in action["inputs"].items()
        }
        for name, spec in action["inputs"].items():
            assert values[name] or not spec.get("required"), f"input {name} is required"
        ctx = {f"inputs.{k}": v for k, v in values.items()}
        run_step, fail_step = (
            s
            for s in action["runs"]["steps"]
            if s.get("name") in ("Run tracker", "Fail with tracker's exit code")
        )
        cwd = self.workspace / substitute(run_step["working-directory"], ctx)
        step_env = {k: substitute(str(v), ctx) for k, v in run_step["env"].items()}
        ran = self.bash(run_step["run"], {**env, **step_env}, cwd)
        assert ran.code == 0, ran.stderr  # it records tracker's exit code and goes on
        assert fail_step["if"] == "inputs.fail == 'true'"
        if values["fail"] == "true":
            ctx["steps.run.outputs.exit-code"] = ran.outputs["exit-code"]
            fail_env = {k: substitute(str(v), ctx) for k, v in fail_step["env"].items()}
            ran.code = self.bash(fail_step["run"], {**env, **fail_env}, cwd).code
        return ran

    def bash(self, script: str, env: Mapping[str, str], cwd: Path) -> Ran:
        self._scripts += 1
        output_file = self.temp / f"github-output-{self._scripts}"
        output_file.touch()
        full = {
            **env,
            "GITHUB_OUTPUT": str(output_file),
            "RUNNER_TEMP": str(self.temp),
            "GITHUB_WORKSPACE": str(self.workspace),
        }
        # GitHub's own command line for `shell: bash`.
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
            cwd=cwd,
            env=full,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        outputs = dict(
            line.split("=", 1) for line in output_file.read_text().splitlines() if "=" in line
        )
        return Ran(done.returncode, outputs, done.stdout, done.stderr)


def base_env(real_cache: Path, tmp: Path) -> dict[str, str]:
    """The runner's environment: this interpreter's `tracker` and `python` first on PATH,
    the real releases from the test cache, the package index never asked."""
    gitconfig = tmp / "gitconfig"
    gitconfig.touch()
    bin_dir = str(Path(sys.executable).parent)
    return {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "HOME": str(tmp),
        "TRACKER_CACHE_DIR": str(real_cache),
        "TRACKER_PIP": "false",
        "NO_COLOR": "1",
        "GIT_CONFIG_GLOBAL": str(gitconfig),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "Test",
        "GIT_AUTHOR_EMAIL": "test@example.invalid",
        "GIT_COMMITTER_NAME": "Test",
        "GIT_COMMITTER_EMAIL": "test@example.invalid",
    }


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


# ---------------------------------------------------------------------- structure


def test_the_action_is_composite_installs_itself_and_maps_its_outputs() -> None:
    action = load(ACTION)
    assert action["runs"]["using"] == "composite"
    assert action["inputs"]["args"]["required"] is True
    assert set(action["inputs"]) == {
        "args",
        "python-version",
        "output",
        "working-directory",
        "fail",
    }
    assert {k: v["value"] for k, v in action["outputs"].items()} == {
        "exit-code": "${{ steps.run.outputs.exit-code }}",
        "output-file": "${{ steps.run.outputs.output-file }}",
    }
    setup, install, *_ = action["runs"]["steps"]
    assert setup["uses"].startswith("actions/setup-python@")
    assert setup["with"]["python-version"] == "${{ inputs.python-version }}"
    assert install["env"]["ACTION_PATH"] == "${{ github.action_path }}"
    assert "pip install" in install["run"] and '"$ACTION_PATH"' in install["run"]
    assert all(s.get("shell") == "bash" for s in action["runs"]["steps"][1:])


def test_the_watch_workflow_is_scheduled_and_runs_watch_through_the_action() -> None:
    workflow = load(WATCH)
    assert workflow["on"]["schedule"][0]["cron"]
    assert workflow["permissions"] == {"contents": "write", "issues": "write"}
    watch = step(workflow, "watch")
    assert uses_our_action(watch)
    assert tracker_commands(watch)[0].startswith(
        "tracker watch --post ${{ github.repository }} --state "
    )


def test_the_pr_workflow_checks_the_head_uploads_sarif_and_comments_the_diff() -> None:
    workflow = load(PR)
    assert "pull_request" in workflow["on"]
    checkout = steps(workflow)[0]
    assert checkout["with"]["ref"] == "${{ github.event.pull_request.head.sha }}"
    assert checkout["with"]["fetch-depth"] == 0
    check, diff = step(workflow, "check"), step(workflow, "diff")
    assert uses_our_action(check) and uses_our_action(diff)
    assert "--fail-on broken --format sarif" in tracker_commands(check)[0]
    assert tracker_commands(diff)[0].startswith(
        "tracker diff ${{ github.event.pull_request.base.sha }} "
        "${{ github.event.pull_request.head.sha }} "
    )
    upload = next(s for s in steps(workflow) if "upload-sarif" in s.get("uses", ""))
    assert upload["uses"].startswith("github/codeql-action/upload-sarif@")
    assert upload["with"]["sarif_file"] == "${{ steps.check.outputs.output-file }}"
    assert "${{ steps.diff.outputs.output-file }}" in step(workflow, "comment")["env"].values()


@pytest.mark.parametrize("path", [WATCH, PR], ids=lambda p: p.name)
def test_every_tracker_command_of_a_workflow_is_run_by_a_test_here(path: Path) -> None:
    running = {s.get("id") for s in steps(load(path)) if tracker_commands(s)}
    assert running == TESTED[path.name]


# ------------------------------------------------------------------------ the action


def test_the_action_splits_its_args_like_a_shell_but_never_evaluates_them(
    tmp_path: Path, real_cache: Path
) -> None:
    runner = Runner(tmp_path, tmp_path, {}, base_env(real_cache, tmp_path))
    args = "versions --source 'dir:$(touch evaluated)' --format json"
    ran = runner.action({"args": args, "fail": "false"}, runner.env)
    assert ran.outputs["exit-code"] == "2" and ran.code == 0
    assert "tracker: error: " in ran.stderr and "$(touch evaluated)" in ran.stderr
    assert not (tmp_path / "evaluated").exists()
    failing = runner.action({"args": args}, runner.env)
    assert failing.code == 2  # fail defaults to true: the step fails with tracker's code
    unbalanced = runner.action({"args": "versions 'dir:x", "fail": "false"}, runner.env)
    assert unbalanced.outputs["exit-code"] == "2"
    assert unbalanced.stderr == ("tracker action: error: cannot split args: No closing quotation\n")


# ------------------------------------------------------------------- scheduled watch


@pytest.fixture
def origin(tmp_path: Path, real_cache: Path) -> Path:
    """A bare repository standing for the repository the workflow runs in."""
    env = base_env(real_cache, tmp_path)
    seed = tmp_path / "seed"
    seed.mkdir()
    (seed / "README.md").write_text("issues about SGLang model wrappers\n")
    for args in (["init", "-q", "-b", "main"], ["add", "README.md"], ["commit", "-qm", "start"]):
        subprocess.run(["git", *args], cwd=seed, env=env, check=True)
    bare = tmp_path / "origin.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(seed), str(bare)], env=env, check=True)
    return bare


def scheduled_run(origin: Path, tmp: Path, real_cache: Path, api_url: str) -> dict[str, Ran]:
    """One scheduled run of the watch workflow: a fresh checkout and a fresh RUNNER_TEMP."""
    tmp.mkdir()
    env = {**base_env(real_cache, tmp), "GITHUB_API_URL": api_url}
    subprocess.run(["git", "clone", "-q", str(origin), str(tmp / "work")], env=env, check=True)
    context = {
        "github.repository": REPO,
        "github.token": TOKEN,
        "inputs.dry-run && '--dry-run' || ''": "",
    }
    temp = tmp / "runner-temp"
    temp.mkdir()
    runner = Runner(tmp / "work", temp, context, env)
    workflow = load(WATCH)
    ran = {sid: runner.run(workflow, sid) for sid in ("state", "watch")}
    save = next(s for s in steps(workflow) if s.get("name") == "Save the watch state")
    assert save["if"] == "always() && steps.state.outcome == 'success'"
    ran["save"] = runner.bash(save["run"], {**env, **workflow["env"]}, runner.workspace)
    return ran


@pytest.mark.realdata
def test_the_scheduled_watch_starts_from_first_since_then_from_its_state_on_the_branch(
    origin: Path, tmp_path: Path, real_cache: Path, real_pypi: PypiSource
) -> None:
    workflow = load(WATCH)
    first_since = workflow["env"]["FIRST_SINCE"]
    # In the test cache before tracker runs with the package index turned off.
    for tag in real_pypi.versions()[real_pypi.versions().index(first_since) :]:
        real_pypi.tree(tag)
    branch = workflow["env"]["STATE_BRANCH"]
    with fake_github() as (url, server):
        first = scheduled_run(origin, tmp_path / "run1", real_cache, url)
        filed = [i["title"] for i in server.issues]
        second = scheduled_run(origin, tmp_path / "run2", real_cache, url)
    assert first["state"].outputs == {"since": f"--since {first_since}"}
    assert first["watch"].code == 0, first["watch"].stderr
    assert first["save"].code == 0, first["save"].stderr
    state = json.loads(git(origin, "show", f"{branch}:watch.json"))
    assert state["schema"] == "sglang-tracker/watch-state@1"
    newest = state["last_version"]
    assert state["history"][0]["previous"] == first_since
    # What the run filed is what `tracker issues` says the releases after FIRST_SINCE bring.
    expected = []
    for entry in state["history"]:
        listed = subprocess.run(
            ["tracker", "issues", entry["previous"], entry["version"], "--format", "json"],
            env=base_env(real_cache, tmp_path),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            check=True,
        )
        expected += [i["title"] for i in json.loads(listed.stdout)["issues"]]
    assert sorted(filed) == sorted(expected)

    assert second["state"].outputs == {"since": ""}  # a state exists: no --since
    assert second["watch"].code == 0, second["watch"].stderr
    assert second["watch"].stdout.startswith(f"no release after {newest}")
    assert "watch state unchanged" in second["save"].stdout
    assert git(origin, "rev-list", "--count", branch) == "1"


# ------------------------------------------------------------------ pull requests


@dataclass
class PullRequest:
    checkout: Path
    base: str
    head: str
    ran: dict[str, Ran]
    gh_calls: list[list[str]]
    sarif: dict[str, Any]


def run_pull_request(
    checkout: Path, tmp: Path, real_cache: Path, ids: tuple[str, ...]
) -> tuple[dict[str, Ran], list[list[str]]]:
    """Runs the PR workflow's steps `ids` on `checkout` (HEAD is the PR head); `gh` is a
    stand-in that records its arguments."""
    tmp.mkdir()
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    log = tmp / "gh.log"
    (bin_dir / "gh").write_text(f'#!/bin/sh\nprintf "%s\\0" "$@" >> {log}\necho >> {log}\n')
    (bin_dir / "gh").chmod(0o755)
    env = base_env(real_cache, tmp)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    context = {
        "github.event.pull_request.base.sha": git(checkout, "rev-parse", "v0.5.8^{commit}"),
        "github.event.pull_request.head.sha": git(checkout, "rev-parse", "HEAD"),
        "github.event.pull_request.number": "7",
        "github.repository": REPO,
        "github.token": TOKEN,
    }
    temp = tmp / "runner-temp"
    temp.mkdir()
    runner = Runner(checkout, temp, context, env)
    workflow = load(PR)
    ran = {sid: runner.run(workflow, sid) for sid in ids}
    calls = (
        [line.strip("\0").split("\0") for line in log.read_text().splitlines() if line.strip("\0")]
        if log.exists()
        else []
    )
    return ran, calls


@pytest.fixture(scope="module")
def pull_request(
    tmp_path_factory: pytest.TempPathFactory, real_cache: Path
) -> Iterator[PullRequest]:
    """The whole PR workflow on a checkout of v0.5.9 whose base is v0.5.8."""
    tmp = tmp_path_factory.mktemp("pr")
    checkout = build_release_repo(tmp / "sglang", ["v0.5.8", "v0.5.9"], real_cache / "pypi")
    ran, calls = run_pull_request(
        checkout, tmp / "run", real_cache, ("check", "diff", "comment", "verdict")
    )
    sarif = json.loads((checkout / "sglang-tracker.sarif").read_text())
    yield PullRequest(
        checkout,
        git(checkout, "rev-parse", "v0.5.8^{commit}"),
        git(checkout, "rev-parse", "HEAD"),
        ran,
        calls,
        sarif,
    )


@pytest.mark.realdata
def test_the_pr_check_fails_on_a_served_wrapper_the_head_breaks_and_writes_sarif(
    pull_request: PullRequest,
) -> None:
    check = pull_request.ran["check"]
    assert check.outputs["exit-code"] == "1"  # KimiK25 lacks what EAGLE3 requires at v0.5.9
    assert check.code == 0  # fail: "false", so the upload still runs
    assert Path(check.outputs["output-file"]) == Path("sglang-tracker.sarif")
    results = pull_request.sarif["runs"][0]["results"]
    assert {r["properties"]["model"] for r in results} == {KIMI}
    for r in results:
        for location in r["locations"]:
            physical = location["physicalLocation"]
            # Code scanning places a result by its path in the repository: it must exist.
            path = pull_request.checkout / physical["artifactLocation"]["uri"]
            assert path.is_file()
            assert physical["region"]["startLine"] <= len(path.read_text().splitlines())
    assert pull_request.ran["verdict"].code == 1


@pytest.mark.realdata
def test_the_pr_diff_compares_the_base_and_head_commits_and_is_posted_as_a_comment(
    pull_request: PullRequest,
) -> None:
    diff = pull_request.ran["diff"]
    assert diff.code == 0, diff.stderr
    body = (pull_request.checkout / diff.outputs["output-file"]).read_text()
    assert body.startswith(
        f"## Speculative decoding interface: sglang {pull_request.base} → {pull_request.head}\n"
    )
    assert f"new class {KIMI} lacks what EAGLE3 requires" in body
    assert pull_request.ran["comment"].code == 0
    assert pull_request.gh_calls == [
        ["pr", "comment", "7", "--edit-last", "--body-file", diff.outputs["output-file"]]
    ]


@pytest.mark.realdata
def test_a_break_accepted_in_the_checkouts_tracker_toml_passes_the_pr_check(
    pull_request: PullRequest, tmp_path: Path, real_cache: Path
) -> None:
    config = pull_request.checkout / "tracker.toml"
    config.write_text(
        f'[[accepted]]\nmodel = "{KIMI}"\nalgorithm = "EAGLE3"\nreason = "patched in our fork"\n'
    )
    try:
        ran, _ = run_pull_request(
            pull_request.checkout, tmp_path / "run", real_cache, ("check", "verdict")
        )
    finally:
        config.unlink()
    assert ran["check"].outputs["exit-code"] == "0", ran["check"].stderr
    assert ran["verdict"].code == 0
    sarif = json.loads((pull_request.checkout / "sglang-tracker.sarif").read_text())
    results = sarif["runs"][0]["results"]
    assert results and all(
        r["suppressions"][0]["justification"] == "patched in our fork" for r in results
    )


def test_an_unreachable_origin_stops_the_watch_instead_of_starting_over(
    origin: Path, tmp_path: Path, real_cache: Path
) -> None:
    env = base_env(real_cache, tmp_path)
    work = tmp_path / "work"
    subprocess.run(["git", "clone", "-q", str(origin), str(work)], env=env, check=True)
    git(work, "remote", "set-url", "origin", str(tmp_path / "gone.git"))
    (tmp_path / "temp").mkdir()
    runner = Runner(work, tmp_path / "temp", {}, env)
    ran = runner.run(load(WATCH), "state")
    assert ran.code != 0
    assert "since" not in ran.outputs  # the watch step, which needs it, cannot start over
