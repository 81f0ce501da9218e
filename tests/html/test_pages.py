"""The HTML pages without a browser: bad run folders, atomic writes, escaping, the live refresh's throttle,
the Markdown reader, and the templates shipping with the package."""

from __future__ import annotations

import logging
import re
import sqlite3
import tomllib
from pathlib import Path

import pandas as pd
import pytest

from conftest import HOSTILE
from structnets.cli import main
from structnets.html import _markdown

ROOT = Path(__file__).resolve().parents[2]


def _toy_run(out: Path, *extra: str) -> None:
    assert main(["run", "toy", "--quick", "--out", str(out), "--jobs", "1", "-q", *extra]) == 0


def _error_line(capsys: pytest.CaptureFixture[str]) -> str:
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    return lines[0]


# -- bad input: the same one-line errors as `structnets report`, and no page --------------------


def _corrupt(run: Path) -> None:
    (run / "results.db").write_bytes(b"not a database at all")
    for suffix in ("-wal", "-shm"):
        (run / f"results.db{suffix}").unlink(missing_ok=True)


@pytest.mark.parametrize("damage", ["missing folder", "no results.db", "corrupt results.db"])
def test_bad_folder_gives_the_report_error_and_no_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: str
) -> None:
    run = tmp_path / "run"
    if damage != "missing folder":
        _toy_run(run, "--no-html")
        (run / "results.db").unlink() if damage == "no results.db" else _corrupt(run)
    capsys.readouterr()
    assert main(["report", str(run)]) == 2
    plain = _error_line(capsys)
    assert main(["report", str(run), "--html"]) == 2
    assert _error_line(capsys) == plain
    assert not (run / "report.html").exists()


def test_unfinished_run_page_says_what_is_missing(tmp_path: Path) -> None:
    run = tmp_path / "run"
    _toy_run(run)
    with sqlite3.connect(run / "results.db") as conn:  # as if killed before the last two units
        conn.execute("DELETE FROM results WHERE key LIKE 'stage2/%'")
    assert main(["report", str(run), "--html", "-q"]) == 0
    page = (run / "report.html").read_text()
    assert "Unfinished run of toy" in page  # the notice of table.md, rendered
    assert page.count('<td class="key">stage1/') == 4 and "stage2/" not in page.split('id="results-table"')[1]


def test_page_is_replaced_atomically_and_a_failed_render_keeps_the_old_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    _toy_run(run)
    before = (run / "report.html").read_bytes()
    import os

    real_replace = os.replace

    def full_disk(src: str, dst: str) -> None:  # the new page is complete, its move fails
        if Path(dst).name == "report.html":
            raise OSError(28, "No space left on device")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", full_disk)
    capsys.readouterr()
    assert main(["report", str(run), "--html"]) == 2
    assert "No space left on device" in _error_line(capsys)
    assert (run / "report.html").read_bytes() == before
    assert [p.name for p in run.iterdir() if p.name.startswith(".report.html")] == []


def test_every_value_from_the_folder_is_escaped(tmp_path: Path) -> None:
    run = tmp_path / "run"
    _toy_run(run, "--set", f"label={HOSTILE}")
    page = (run / "report.html").read_text()
    assert "<script" not in page and "pwned" in page
    assert "&lt;script&gt;document.title=&#39;pwned&#39;" in page
    assert page.count("&lt;script&gt;") >= 7


# -- structnets run: the page is refreshed, throttled, and never breaks the run ----------------


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_live_report_is_throttled_to_its_time_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from structnets.html import live

    (tmp_path / "results.db").write_bytes(b"")
    clock = _Clock()
    calls: list[dict[str, object]] = []

    def render(run_dir: Path, **options: object) -> Path:
        calls.append(options)
        clock.now += 2.0  # each render takes 2 s
        return run_dir / "report.html"

    monkeypatch.setattr(live, "write_run_page", render)
    report = live.LiveReport(tmp_path, min_interval=10.0, budget=0.05, clock=clock)
    for done in range(1, 1001):  # a unit every 0.1 s for 100 s
        report.progress(done, 1000)
        clock.now += 0.1
    # 2 s per render at a 5 % budget: one render per 40 s at most, the first at once.
    assert len(calls) == 3 and calls[0]["progress"] == (1, 1000) and calls[0]["status"] == "running"
    report.finish("finished")
    assert len(calls) == 4 and calls[-1]["progress"] is None and calls[-1]["status"] is None


def test_a_failing_render_is_logged_and_the_run_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from structnets.html import live

    def broken(run_dir: Path, **options: object) -> Path:
        raise RuntimeError("template exploded")

    monkeypatch.setattr(live, "write_run_page", broken)
    run = tmp_path / "run"
    with caplog.at_level(logging.WARNING, logger="structnets.html"):
        _toy_run(run)
    assert (run / "table.md").is_file() and not (run / "report.html").exists()
    warnings = [r for r in caplog.records if "template exploded" in r.getMessage()]
    assert len(warnings) == 1 and "the run goes on" in warnings[0].getMessage()


def test_no_html_writes_no_page(tmp_path: Path) -> None:
    run = tmp_path / "run"
    _toy_run(run, "--no-html")
    assert (run / "table.md").is_file() and not (run / "report.html").exists()


def test_refused_folder_gets_no_page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    _toy_run(run, "--no-html")
    assert main(["run", "toy", "--out", str(run), "--jobs", "1", "-q"]) == 2  # another config: refused
    assert not (run / "report.html").exists()


# -- the reproducing command -------------------------------------------------------------------


def test_reproduce_command_parses_back_to_the_stored_config(tmp_path: Path) -> None:
    import toy_experiment as toy

    from structnets.html.run_page import reproduce_command
    from structnets.runner import apply_overrides

    config = toy.ToyConfig(arms=3, seeds=(0, 1), repeats=2, label="a b;c")
    command, note = reproduce_command(toy.EXPERIMENT, config, "runs/x y")
    assert note == ""
    assert command == "structnets run toy --quick --set arms=3 'label=a b;c' --out 'runs/x y'"
    import shlex

    words = shlex.split(command)
    sets = words[words.index("--set") + 1 : words.index("--out")]
    assert apply_overrides(toy.ToyConfig.quick(), sets) == config


# -- the claims page's links to units --------------------------------------------------------------


def _claims_row(run: str, keys: tuple[str, ...], claim_id: str = "000-x") -> dict[str, object]:
    return {"id": claim_id, "paper": "paper A (000)", "claim": "c", "paper value": "1", "ours": "1",
            "verdict": "reproduced", "test": "t", "run": run, "experiment": "toy", "preset": "quick",
            "units": max(len(keys), 1), "unit keys": keys}  # fmt: skip


def test_claims_page_lists_the_first_units_then_how_many_more(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from structnets.claims import COLUMNS
    from structnets.html import claims_page

    monkeypatch.setattr(claims_page, "LISTED_UNITS", 3)
    run = tmp_path / "run"
    run.mkdir()
    keys = tuple(f"u/seed={i}" for i in range(5))
    table = pd.DataFrame(
        [_claims_row(str(run), keys), _claims_row(str(run), ("a b#1%",), "000-y")], columns=list(COLUMNS)
    )
    html = claims_page.render_claims_page(table, page_path=tmp_path / "claims.html")
    several = html.split('id="claim-000-x"')[1].split("</tr>")[0]
    assert re.findall(r'href="([^"]*)"', several) == [
        "run/report.html#results",
        *(f"run/report.html#unit-u/seed={i}" for i in range(3)),
        "run/report.html#results",
    ]
    assert "the 5 units used" in several and "+2 more, in" in several
    one = html.split('id="claim-000-y"')[1].split("</tr>")[0]  # the anchor's _ for space, the rest encoded
    assert re.findall(r'href="([^"]*)"', one) == ["run/report.html#unit-a_b%231%25"] * 2


def test_claims_markdown_names_one_unit_or_the_first_two() -> None:
    from structnets.claims import COLUMNS, claims_markdown

    rows = [_claims_row("r", ("k0",), "000-a"), _claims_row("r", ("k0", "k1", "k2"), "000-b"), _claims_row("r", ())]
    page = claims_markdown(pd.DataFrame(rows, columns=list(COLUMNS)))
    lines = {line.split("**")[1]: line for line in page.splitlines() if line.startswith("| **")}
    assert lines["000-a"].endswith("(toy, quick, 1 units): unit `k0` |")
    assert lines["000-b"].endswith("(toy, quick, 3 units): units `k0`, `k1`, +1 more |")
    assert lines["000-x"].endswith("(toy, quick, 1 units) |")


# -- the Markdown of table.md ---------------------------------------------------------------------


def test_markdown_tables_inline_markup_and_unsafe_links() -> None:
    blocks = _markdown.parse(
        "# Title *x*\n\nText with **bold**, `a|b` and [doc](docs/a.md) and [bad](javascript:alert(1)).\n\n"
        "| a | b \\| c |\n|---|---|\n| 1 | `x` |\n\n> **Note**: quoted\n\n- one\n- two\n"
    )
    assert [b.kind for b in blocks] == ["heading", "paragraph", "table", "quote", "list"]
    spans = blocks[1].spans
    assert ("strong", "bold") in [(s.kind, s.text) for s in spans]
    assert ("code", "a|b") in [(s.kind, s.text) for s in spans]
    links = [s for s in spans if s.kind == "link"]
    assert [(s.text, s.href) for s in links] == [("doc", "docs/a.md")]
    assert "[bad](javascript:alert(1))" in "".join(s.text for s in spans if s.kind == "text")  # left as text
    table = blocks[2]
    assert [[s.text for s in c] for c in table.header] == [["a"], ["b | c"]]
    assert [[(s.kind, s.text) for s in c] for c in table.rows[0]] == [[("text", "1")], [("code", "x")]]
    assert blocks[3].children[0].spans[0] == _markdown.Span("strong", "Note")
    assert [[s.text for s in item] for item in blocks[4].items] == [["one"], ["two"]]


# -- packaging -------------------------------------------------------------------------------------


def test_templates_are_package_data() -> None:
    from importlib.resources import files

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "html/templates/*" in project["tool"]["setuptools"]["package-data"]["structnets"]
    shipped = {p.name for p in files("structnets.html").joinpath("templates").iterdir()}
    assert {"base.html.j2", "run.html.j2", "claims.html.j2", "_markdown.html.j2", "style.css"} <= shipped
    assert any(r.startswith("jinja2") for r in project["project"]["dependencies"])


def test_the_last_page_embeds_the_figures_the_run_drew_without_drawing_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import toy_experiment as toy

    calls: list[int] = []
    real = toy.ToyExperiment.figures

    def counted(self: toy.ToyExperiment, results: object, config: object, out_dir: Path) -> list[Path]:
        calls.append(len(results))  # type: ignore[arg-type]
        return real(self, results, config, out_dir)  # type: ignore[arg-type]

    monkeypatch.setattr(toy.ToyExperiment, "figures", counted)
    run = tmp_path / "run"
    _toy_run(run)
    assert calls == [6]  # the runner's own call; the first page (no unit finished) and the last draw none
    page = (run / "report.html").read_text()
    assert page.count("data:image/svg+xml;base64,") == 1 and "SVG, drawn by the run" in page
    assert (run / "figures" / "values.png").is_file()  # the run's own figures are still PNG
    assert main(["report", str(run), "--html", "-q"]) == 0
    assert calls == [6, 6, 6]  # report draws figures/ (PNG), then the page draws its SVG


def test_a_stopped_run_page_draws_no_figure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import toy_experiment as toy

    calls: list[int] = []
    monkeypatch.setattr(toy.ToyExperiment, "figures", lambda self, results, config, out: calls.append(1) or [])
    monkeypatch.setenv("STRUCTNETS_TOY_FAIL_KEYS", "stage1/arm=1/seed=0")
    run = tmp_path / "run"
    assert main(["run", "toy", "--quick", "--out", str(run), "--jobs", "1", "-q"]) == 1
    page = (run / "report.html").read_text()
    assert calls == [] and "not drawn for this page (the first page of a run, or one that stopped early)" in page
