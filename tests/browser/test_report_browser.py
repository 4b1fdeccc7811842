"""The report in a real headless Chromium: built by `tracker report` from the shipped
snapshots of v0.5.5..v0.5.23, opened from file://, checked as a person would see it.

Set TRACKER_UPDATE_SCREENSHOT=1 to also write the screenshot to docs/report.png (the
README's picture); it is always written to the test's temporary directory.
"""

from __future__ import annotations

import os
import shutil
import struct
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, ClassVar

import pytest
from click.testing import CliRunner

from tracker.cli import cli
from tracker.compare.matrix import build_matrix
from tracker.compare.snapshot import Snapshot, load_file, shipped_dir
from tracker.compare.workspace import shipped_versions
from tracker.sources import clear_memo
from tracker.sources.versions import expand_range

pytestmark = pytest.mark.browser

RANGE = "v0.5.5..v0.5.23"
KIMI = "KimiK25ForConditionalGeneration"
REPO = Path(__file__).resolve().parents[2]
SCREENSHOT_VIEW = f"#algo=EAGLE3&filter=kimi%20deepseek%20qwen3&cell={KIMI}@v0.5.9"


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """`tracker report v0.5.5..v0.5.23 -a EAGLE3 -o DIR`, offline (shipped snapshots)."""
    out = tmp_path_factory.mktemp("report")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TRACKER_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        mp.setenv("TRACKER_PIP", "false")  # never ask the package index
        mp.delenv("TRACKER_REPO", raising=False)
        clear_memo()
        result = CliRunner().invoke(
            cli, ["report", RANGE, "--algorithm", "EAGLE3", "-o", str(out), "-q"]
        )
        clear_memo()
    assert result.exit_code == 0, result.output + result.stderr
    yield out


@pytest.fixture(scope="module")
def snapshots() -> list[Snapshot]:
    out = []
    for v in expand_range(RANGE, shipped_versions()):
        snap = load_file(shipped_dir() / f"{v}.json")
        assert snap is not None
        out.append(snap)
    return out


@pytest.fixture(scope="module")
def loaded(browser_page: Any, report_dir: Path) -> dict[str, Any]:
    """The page opened once; what the browser reported while loading it."""
    url = (report_dir / "index.html").as_uri()
    browser_page.open(url)
    return {
        "url": url,
        "errors": browser_page.errors(),
        "requests": browser_page.requests(),
        "dom": browser_page.evaluate("document.documentElement.outerHTML"),
    }


@pytest.fixture
def report_page(browser_page: Any, loaded: dict[str, Any]) -> Any:
    """The shared page, on the report as first loaded. Tests run in random order and share
    one page: one before may have left it on another report or on a view set in the URL."""
    if browser_page.evaluate("location.href") != loaded["url"]:
        browser_page.open("about:blank")  # a fragment-only change would not reload
        browser_page.open(loaded["url"])
    return browser_page


class _Grid(HTMLParser):
    """The EAGLE3 heatmap as the browser built it: versions, and per row its cell classes;
    plus every element attribute that would make a browser load something."""

    LOADERS: ClassVar[set[str]] = {
        "script",
        "link",
        "img",
        "iframe",
        "source",
        "video",
        "audio",
        "embed",
        "object",
        "image",
        "use",
        "track",
        "input",
    }

    def __init__(self) -> None:
        super().__init__()
        self.in_eagle3 = False
        self.depth = 0
        self.versions: list[str] = []
        self.rows: dict[str, list[str]] = {}
        self.row: list[str] | None = None
        self.in_tbody = False
        self.loads: list[tuple[str, str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        for key in ("src", "href", "xlink:href", "data", "poster", "srcset"):
            if tag in self.LOADERS and a.get(key):
                self.loads.append((tag, key, a[key]))
        if tag == "section" and a.get("data-algorithm") == "EAGLE3":
            self.in_eagle3 = True
        if not self.in_eagle3:
            return
        if tag == "table" and "heatmap" in a.get("class", ""):
            self.depth = 1
        elif self.depth and tag == "tbody":
            self.in_tbody = True
        elif self.depth and tag == "th" and "data-version" in a:
            self.versions.append(a["data-version"])
        elif self.in_tbody and tag == "tr":
            self.row = self.rows.setdefault(a["data-model"], [])
        elif self.in_tbody and tag == "td" and self.row is not None:
            self.row.append(a.get("class", ""))

    def handle_endtag(self, tag: str) -> None:
        if tag == "tbody":
            self.in_tbody = False
        elif tag == "table":
            self.depth = 0
        elif tag == "section":
            self.in_eagle3 = False


@pytest.fixture(scope="module")
def grid(loaded: dict[str, Any]) -> _Grid:
    parser = _Grid()
    parser.feed(loaded["dom"])
    return parser


def test_page_loads_without_console_errors(loaded: dict[str, Any]) -> None:
    assert loaded["errors"] == []


def test_no_request_leaves_file_urls(loaded: dict[str, Any], grid: _Grid) -> None:
    # What the browser actually requested...
    assert loaded["requests"], "the protocol reported no request at all: the check is blind"
    assert all(u.startswith(("file://", "data:")) for u in loaded["requests"]), loaded["requests"]
    # ...and nothing in the DOM that could load something later. Links (<a href>) to the
    # source on GitHub are fine: they are only followed when clicked.
    remote = [x for x in grid.loads if x[2].startswith(("http:", "https:", "//"))]
    assert remote == []


def test_one_row_per_model_one_column_per_version(grid: _Grid, snapshots: list[Snapshot]) -> None:
    matrix = build_matrix(snapshots, "EAGLE3")
    assert grid.versions == [s.version for s in snapshots]
    assert len(grid.versions) == 29
    assert sorted(grid.rows) == matrix.models
    assert all(len(cells) == len(grid.versions) for cells in grid.rows.values())


def test_kimi_broken_at_v059_fixed_at_v0510(grid: _Grid) -> None:
    cells = grid.rows[KIMI]
    at = grid.versions.index
    assert "broken" in cells[at("v0.5.9")].split()
    assert "ok" in cells[at("v0.5.10")].split()
    assert "ev-fixed" in cells[at("v0.5.10")].split()
    assert "absent" in cells[at("v0.5.8.post1")].split()


CELL_JS = """
(() => {
  const s = document.querySelector('section.algo[data-algorithm="EAGLE3"]');
  const col = [...s.querySelectorAll('tr.versions th[data-version]')]
    .findIndex(th => th.dataset.version === %r);
  const tr = s.querySelector('tr[data-model="%s"]');
  tr.cells[col + 1].click();
  const panel = s.querySelector('aside.detail');
  return {text: panel.innerText, links: [...panel.querySelectorAll('a')].map(a => a.href),
          hash: location.hash};
})()
"""


def test_clicking_the_broken_cell_reveals_members_and_sites(report_page: Any) -> None:
    shown = report_page.evaluate(CELL_JS % ("v0.5.9", KIMI))
    text = shown["text"]
    assert "broken" in text
    assert "get_embed_and_head" in text and "set_eagle3_layers_to_capture" in text
    assert "speculative/eagle_worker.py:157" in text
    assert "model_executor/model_runner.py:622" in text
    assert "self.eagle_use_aux_hidden_state" in text
    assert "DeepseekV3ForCausalLM" in text
    assert f"tracker fix {KIMI} --at v0.5.9 -a EAGLE3" in text
    assert (
        "https://github.com/sgl-project/sglang/blob/v0.5.9/"
        "python/sglang/srt/speculative/eagle_worker.py#L157"
    ) in shown["links"]
    assert shown["hash"] == f"#algo=EAGLE3&cell={KIMI}@v0.5.9"
    fixed = report_page.evaluate(CELL_JS % ("v0.5.10", KIMI))
    assert "ok" in fixed["text"] and "Now provides get_embed_and_head" in fixed["text"]
    assert report_page.errors() == []


def test_filter_and_sort(report_page: Any) -> None:
    visible = report_page.evaluate(
        """(() => {
          const s = document.querySelector('section.algo[data-algorithm="EAGLE3"]');
          const input = s.querySelector('input.filter');
          input.value = 'kimik25';
          input.dispatchEvent(new Event('input'));
          const rows = [...s.querySelectorAll('table.heatmap tbody tr')].filter(r => !r.hidden);
          const out = {rows: rows.map(r => r.dataset.model),
                       counter: s.querySelector('.counter').textContent};
          input.value = '';
          input.dispatchEvent(new Event('input'));
          const sort = s.querySelector('select.sort');
          sort.value = 'broken';
          sort.dispatchEvent(new Event('change'));
          const rows2 = s.querySelectorAll('table.heatmap tbody tr');
          out.broken = [...rows2].map(r => +r.dataset.broken);
          sort.value = 'name';
          sort.dispatchEvent(new Event('change'));
          out.names = [...s.querySelectorAll('table.heatmap tbody tr')].map(r => r.dataset.model);
          return out;
        })()"""
    )
    assert visible["rows"] == [KIMI]
    assert visible["counter"].startswith("1 of ")
    assert visible["broken"] == sorted(visible["broken"], reverse=True)
    assert visible["names"] == sorted(visible["names"])
    assert report_page.errors() == []


def test_call_graph_switcher(report_page: Any) -> None:
    state = report_page.evaluate(
        """(() => {
          const s = document.querySelector('section.algo[data-algorithm="EAGLE3"]');
          const link = s.querySelector('.graph-nav a[data-version="v0.5.9"]');
          link.click();
          const shown = [...s.querySelectorAll('figure.graph')].filter(f => !f.hidden);
          const svg = shown[0].querySelector('svg');
          return {shown: shown.map(f => f.dataset.version),
                  targets: svg.querySelectorAll('.target-site').length,
                  width: svg.getBoundingClientRect().width};
        })()"""
    )
    assert state["shown"] == ["v0.5.9"]
    assert state["targets"] >= 2
    assert state["width"] > 300
    assert report_page.errors() == []


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_screenshot(browser_page: Any, loaded: dict[str, Any], tmp_path: Path) -> None:
    browser_page.open("about:blank")  # a fresh load of the page, with the view in the hash
    browser_page.open(loaded["url"] + SCREENSHOT_VIEW)
    assert browser_page.errors() == []
    target = tmp_path / "report.png"
    data = browser_page.screenshot(target)
    assert _png_size(data) == (1440, 1000)
    assert len(data) > 50_000  # a rendered page, not a blank one
    if os.environ.get("TRACKER_UPDATE_SCREENSHOT"):
        (REPO / "docs").mkdir(exist_ok=True)
        shutil.copyfile(target, REPO / "docs" / "report.png")


@pytest.fixture(scope="module")
def every_algorithm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every algorithm, target and draft classes, a call graph for every release."""
    out = tmp_path_factory.mktemp("report-all")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TRACKER_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        mp.setenv("TRACKER_PIP", "false")
        mp.delenv("TRACKER_REPO", raising=False)
        clear_memo()
        result = CliRunner().invoke(
            cli,
            ["report", "v0.5.8..v0.5.10", "--kind", "all", "--graphs", "all", "-o", str(out)],
        )
        clear_memo()
    assert result.exit_code == 0, result.output + result.stderr
    return out


def test_tabs_switch_algorithms(browser_page: Any, every_algorithm: Path) -> None:
    browser_page.open((every_algorithm / "index.html").as_uri())
    state = browser_page.evaluate(
        """(() => {
          const tabs = [...document.querySelectorAll('.tabs .tab')];
          const eagle3 = tabs.find(t => t.dataset.algorithm === 'EAGLE3');
          eagle3.click();
          const shown = [...document.querySelectorAll('section.algo')].filter(s => !s.hidden);
          const marks = shown[0].querySelector('table.heatmap tr.marks th');
          return {tabs: tabs.map(t => t.dataset.algorithm),
                  shown: shown.map(s => s.dataset.algorithm),
                  hash: location.hash,
                  marksTop: parseFloat(marks.style.top),
                  draft: shown[0].querySelectorAll('tr[data-kind="draft"]').length,
                  graphs: shown[0].querySelectorAll('figure.graph').length};
        })()"""
    )
    assert {"EAGLE", "EAGLE3"} <= set(state["tabs"])
    assert state["shown"] == ["EAGLE3"]
    assert state["hash"] == "#algo=EAGLE3"
    # The sticky header rows were measured when the section became visible.
    assert state["marksTop"] > 40
    assert state["draft"] > 0  # --kind all: draft classes have rows too
    assert state["graphs"] == 4  # --graphs all: every release
    assert browser_page.errors() == []


def test_no_item_of_a_two_column_list_is_split_between_the_columns(report_page: Any) -> None:
    # Every timeline list opened, at a width where the lists do make two columns; an item
    # split between them has one box in each.
    split = report_page.evaluate(
        """(() => {
          document.querySelectorAll('details').forEach(d => { d.open = true; });
          const lists = [...document.querySelectorAll('ul')]
            .filter(u => getComputedStyle(u).columnCount !== 'auto'
                         || getComputedStyle(u).columnWidth !== 'auto');
          const items = lists.flatMap(u => [...u.children]);
          const split = items.filter(li => li.getClientRects().length > 1)
            .map(li => li.textContent.trim().slice(0, 80));
          return {lists: lists.length, items: items.length, split};
        })()"""
    )
    assert split["lists"] > 10 and split["items"] > 100, split
    assert split["split"] == []
