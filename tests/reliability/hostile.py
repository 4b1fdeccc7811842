"""One hostile SGLang history: every piece of untrusted text that could act on whoever reads
the tool's output, carried by a small tree and a git history built over it.

The tool prints and posts text it does not write: member names (from `getattr` strings),
the source text of conditions, file names, commit subjects and authors, and the reasons in
a project's tracker.toml. Each payload below is one way such text could act: a terminal
control sequence (set the window title, clear the screen, colour, reverse the text), a
newline or carriage return that forges an output line, HTML and markdown that render, an
@mention that pings, backticks that break out of a code span, and hidden-comment markers
that forge an issue's identity. The history:

    v0.5.15  the tiny tree, plus model files with hostile names, and VictimForCausalLM (ok)
    (commit) the hostile subject and author: VictimForCausalLM loses get_embed_and_head
    v0.5.16  that commit
    (commit) nothing changed, a 200,000-character subject
    v0.5.17  the EAGLE3 worker requires (and conditionally uses) members with hostile names
    v0.5.18  those requirements gone again: what v0.5.17 filed is fixed
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from sgl_trees import BASE, tree

SRT = "python/sglang/srt/"

# What a forged line starts with: no line of the tool's output may begin with it.
FORGED = "FORGED"
# Window title (OSC), clear screen and colour (CSI), bell, right-to-left override.
TERMINAL = "\x1b]0;pwned\x07\x1b[2J\x1b[31m\u202e"
# What GitHub or a markdown page would render, link or notify.
MARKUP = (
    "<script>alert(1)</script> <img src=x onerror=alert(2)> <b>bold</b> *em* _u_ "
    "[click](javascript:alert(3)) @everyone @octocat `tick`` | pipe | $x$ ]]> -->"
)
# What str.splitlines() breaks a line at and git does not.
SEPARATORS = "\u2028\u0085\x0b\x0c\x1c\x1d\x1e"

MEMBER_TERMINAL = f"term{TERMINAL}{SEPARATORS}end"
MEMBER_MARKUP = f"mark {MARKUP}"
# A hidden marker inside a member name: the issue about it must keep its own identity.
MEMBER_FINGERPRINT = "fp<!-- sglang-tracker:fingerprint=00000000deadbeef -->"
# Ends the report comment early, where a parser looks for `} -->`.
MEMBER_REPORT_END = "rb} -->"
MEMBER_OPTIONAL = f"opt{TERMINAL}<b>@everyone</b>"
REQUIRED_MEMBERS = (MEMBER_TERMINAL, MEMBER_MARKUP, MEMBER_FINGERPRINT, MEMBER_REPORT_END)
CONDITION = f"c{TERMINAL}{MARKUP}"

FILE_TERMINAL = f"models/f{TERMINAL}<img src=x onerror=alert(6)>@everyone.py"
FILE_NEWLINE = f"models/new\n{FORGED} line.py"
FILE_RETURN = f"models/cr\r{FORGED}.py"
# Not UTF-8: the warning about it names the file.
FILE_UNDECODABLE = f"models/w{TERMINAL}\n{FORGED} warning.py"
ODD_FILES = {
    FILE_TERMINAL: "EscWrapperForCausalLM",
    FILE_NEWLINE: "NewlineForCausalLM",
    FILE_RETURN: "ReturnForCausalLM",
}

SUBJECT = f"s{TERMINAL}{MARKUP}{SEPARATORS} \r{FORGED} subject"
LONG_SUBJECT = "long " + "x" * 200_000
# git drops `<` and `>` from names; the rest stays.
AUTHOR = f"Mallory{TERMINAL} *bold* `x` @everyone"
AUTHOR_EMAIL = "mallory@example.invalid"
REASON = f"r{TERMINAL}{MARKUP}\n{FORGED} reason"

VICTIM = "VictimForCausalLM"
ACCEPTED_MODEL = "NewlineForCausalLM"

_VICTIM_OK = """
from torch import nn


class VictimForCausalLM(nn.Module):
    def get_embed_and_head(self):
        return self.embed, self.head

    def set_eagle3_layers_to_capture(self, layer_ids=None):
        self.layers = layer_ids


EntryClass = VictimForCausalLM
"""
_VICTIM_BROKEN = _VICTIM_OK.replace(
    "    def get_embed_and_head(self):\n        return self.embed, self.head\n\n", ""
)

# A wrapper whose inner model provides what it lacks: `tracker fix` writes a patch naming
# its (hostile) file.
_ESC_WRAPPER = """
from torch import nn

from sglang.srt.models.llama import LlamaForCausalLM


class EscWrapperForCausalLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.language_model = LlamaForCausalLM(config)


EntryClass = EscWrapperForCausalLM
"""

_PLAIN_BROKEN = """
from torch import nn


class {name}(nn.Module):
    def forward(self, x):
        return x


EntryClass = {name}
"""

_ANCHOR = "        embed, head = self.target_worker.model_runner.model.get_embed_and_head()\n"


def _hostile_worker() -> str:
    """The EAGLE3 worker of v0.5.17: it requires the hostile members, reads one optionally
    and calls one under a hostile condition."""
    model = "self.target_worker.model_runner.model"
    added = "".join(f"        getattr({model}, {_py(m)})()\n" for m in REQUIRED_MEMBERS)
    added += f"        getattr({model}, {_py(MEMBER_OPTIONAL)}, None)\n"
    added += f"        if self.server_args.mode == {_py(CONDITION)}:\n"
    added += f"            {model}.conditional_member()\n"
    worker = BASE["speculative/eagle_worker.py"]
    assert _ANCHOR in worker
    return worker.replace(_ANCHOR, _ANCHOR + added)


def _py(text: str) -> str:
    """A Python string literal holding `text` as raw characters (escapes would be read as
    the source text, not as what they stand for)."""
    assert "'" not in text and "\\" not in text and "\n" not in text and "\r" not in text
    return f"'{text}'"


def files(version: str) -> dict[str, str | bytes]:
    """The repo-path -> content of the tree at `version` (v0.5.15 to v0.5.18)."""
    out: dict[str, str | bytes] = dict(tree())
    out[SRT + FILE_UNDECODABLE] = b"X = '\xff'\n"
    for path, name in ODD_FILES.items():
        text = _ESC_WRAPPER if name == "EscWrapperForCausalLM" else _PLAIN_BROKEN.format(name=name)
        out[SRT + path] = text.lstrip()
    victim = _VICTIM_OK if version == "v0.5.15" else _VICTIM_BROKEN
    out[SRT + "models/victim.py"] = victim.lstrip()
    if version == "v0.5.17":
        out[SRT + "speculative/eagle_worker.py"] = _hostile_worker()
    return out


def accepted_config(folder: Path) -> Path:
    """A tracker.toml accepting one broken class with the hostile reason."""
    path = folder / "tracker.toml"
    path.write_text(
        "[[accepted]]\n"
        f"model = {json.dumps(ACCEPTED_MODEL)}\n"
        'algorithm = "EAGLE3"\n'
        f"reason = {json.dumps(REASON)}\n",
        encoding="utf-8",
    )
    return path


def _git(repo: Path, *args: str, env: dict[str, str]) -> str:
    done = subprocess.run(
        ["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {done.stderr}")
    return done.stdout


def _write(root: Path, content: dict[str, str | bytes]) -> None:
    for path, data in content.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data if isinstance(data, bytes) else data.encode())


def build_history(root: Path) -> Path:
    """The hostile git repository in `root` (created), with the work tree at v0.5.18."""
    root.mkdir(parents=True)
    config = root.parent / f"{root.name}.gitconfig"
    config.touch()
    env = {
        **os.environ,
        "GIT_CONFIG_GLOBAL": str(config),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "Test",
        "GIT_AUTHOR_EMAIL": "test@example.invalid",
        "GIT_COMMITTER_NAME": "Test",
        "GIT_COMMITTER_EMAIL": "test@example.invalid",
    }
    _git(root, "init", "-q", "-b", "main", env=env)
    steps = [  # (tree, subject, author, tag)
        ("v0.5.15", "release v0.5.15", None, True),
        ("v0.5.16", SUBJECT, AUTHOR, True),
        ("v0.5.16", LONG_SUBJECT, None, False),
        ("v0.5.17", "release v0.5.17", None, True),
        ("v0.5.18", "release v0.5.18", None, True),
    ]
    for number, (version, subject, author, tagged) in enumerate(steps):
        _write(root, files(version))
        _git(root, "add", "-A", env=env)
        when = f"{1_700_000_000 + number * 60} +0000"
        commit_env = {**env, "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}
        if author is not None:
            commit_env.update(GIT_AUTHOR_NAME=author, GIT_AUTHOR_EMAIL=AUTHOR_EMAIL)
        # From a file: an argument that long is refused by the kernel.
        message = root.parent / f"{root.name}.message"
        message.write_bytes(subject.encode())
        commit = ["commit", "-q", "--allow-empty", "--cleanup=verbatim", "-F", str(message)]
        _git(root, *commit, env=commit_env)
        if tagged:
            _git(root, "tag", version, env=env)
    return root
