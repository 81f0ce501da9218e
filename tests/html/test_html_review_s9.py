"""Review of the HTML report (session 9): each test names what went wrong before its fix."""

from __future__ import annotations

import fcntl
import os
import sqlite3
from pathlib import Path

import pytest

from structnets.cli import main


def _toy_run(out: Path, *extra: str) -> int:
    return main(["run", "toy", "--quick", "--out", str(out), "--jobs", "1", "-q", *extra])


def _lock_is_held(run_dir: Path) -> bool:
    """Whether some open file description holds the run lock of ``run_dir`` (flock conflicts across them)."""
    path = run_dir / ".structnets.lock"
    if not path.exists():
        return False
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def test_the_last_page_is_written_while_the_run_lock_is_held(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``LiveReport.finish`` wrote report.html after ``runner.run`` had released the run lock, so a second
    ``structnets run`` (or ``report``) of the folder could start meanwhile and have its page overwritten
    by this run's stale last page (e.g. 'finished' over a page of a run in progress)."""
    from structnets.html import live

    seen: list[tuple[object, bool]] = []
    real = live.write_run_page

    def spy(run_dir: Path, **options: object) -> Path:
        seen.append((options.get("progress"), _lock_is_held(Path(run_dir))))
        return real(run_dir, **options)

    monkeypatch.setattr(live, "write_run_page", spy)
    run = tmp_path / "run"
    assert _toy_run(run) == 0
    assert seen and seen[-1][0] is None  # the last page (no live progress) was written
    assert [held for _, held in seen] == [True] * len(seen), seen
    assert not (run / ".structnets.lock").exists()  # the lock file is removed after, as by the runner


def test_the_last_page_is_not_written_over_a_folder_another_run_holds(tmp_path: Path) -> None:
    """The other side of the lock: when another process took the folder between the end of the run and its
    last page, that page is not written (the other run writes its own), and nothing is raised."""
    import toy_experiment as toy

    from structnets.html import LiveReport
    from structnets.runner.lock import run_lock

    run = tmp_path / "run"
    assert _toy_run(run) == 0
    page = LiveReport(run, experiment=toy.EXPERIMENT)
    page.progress(1, 2)  # a mid-run render (takes no lock: the runner holds it then)
    mid = (run / "report.html").read_bytes()
    assert page.renders == 1 and b'<span class="badge s-running">running</span>' in mid
    with run_lock(run):  # another run holds the folder now
        page.finish("finished")
        assert (run / "report.html").read_bytes() == mid
    assert page.renders == 1 and page.failures == 0
    page.finish("finished")  # the folder is free again: the last page is written
    assert page.renders == 2 and b'<span class="badge s-finished">finished</span>' in (run / "report.html").read_bytes()


def test_temporaries_of_a_page_write_cut_short_are_removed_when_the_run_finishes(tmp_path: Path) -> None:
    """kill -9 while report.html (or failed_units.json) was being written leaves its atomic_io temporary
    (``.report.html.x1y2.tmp``, a whole page) in the run folder; resuming and finishing the run left it
    there for good (the runner tidies only its own files' temporaries)."""
    run = tmp_path / "run"
    assert _toy_run(run) == 0
    with sqlite3.connect(run / "results.db") as conn:  # as if killed before the last units
        conn.execute("DELETE FROM results WHERE key LIKE 'stage2/%'")
    conn.close()
    leftovers = [run / ".report.html.k2j3h4.tmp", run / ".failed_units.json.zz9.tmp"]
    kept = [run / ".report.html.notes", run / "report.html.tmp", run / "my.report.html.tmp"]
    for path in [*leftovers, *kept]:
        path.write_text("half a page")
    assert _toy_run(run) == 0
    assert [p for p in leftovers if p.exists()] == []
    assert all(p.read_text() == "half a page" for p in kept)
    leftovers[0].write_text("half a page")
    assert main(["report", str(run), "--html", "-q"]) == 0  # report --html tidies them too
    assert not leftovers[0].exists()


_PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16


def test_odd_entries_of_figures_do_not_break_the_page_nor_reach_outside_the_folder(tmp_path: Path) -> None:
    """The PNGs of figures/ embedded when the page draws none (a run's first page, a stopped run): a folder
    named ``x.png`` made every render fail (IsADirectoryError: a run's page never appeared, ``report
    --html`` died); a symbolic link ``figures/leak.png -> ~/secret`` in a received folder embedded that
    file in the page (to be shared); a file that is not a PNG showed as a broken image."""
    import base64

    import toy_experiment as toy

    from structnets.html import write_run_page

    run = tmp_path / "run"
    assert _toy_run(run) == 0
    figures = run / "figures"
    good = (figures / "values.png").read_bytes()
    secret = tmp_path / "secret"
    secret.write_bytes(_PNG + b"SECRET-KEY")
    (figures / "a-folder.png").mkdir()
    (figures / "leak.png").symlink_to(secret)
    (figures / "garbled.png").write_bytes(b"half a figure")
    page = write_run_page(run, experiment=toy.EXPERIMENT, draw_figures=False).read_text()
    assert page.count("<figure ") == 1 and base64.b64encode(good).decode() in page
    assert base64.b64encode(secret.read_bytes()).decode() not in page
    for name in ("a-folder.png", "leak.png", "garbled.png"):
        assert name in page.split('id="figures"')[1].split("</p>")[0]  # named in the note, not embedded


def test_a_folder_whose_name_is_not_utf8_gets_its_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """``--out $'run\\xff'`` (a byte that is not UTF-8: Python holds it as the lone surrogate \\udcff): the run
    finished but its page was never written (UnicodeEncodeError, logged at every refresh), and ``structnets
    report RUN --html`` died in a UnicodeEncodeError traceback after rewriting the other outputs."""
    import io
    import sys

    # the command prints the folder's name as a terminal would take it (pytest's capture is strict UTF-8)
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="surrogateescape"))
    run = tmp_path / os.fsdecode(b"run\xff")
    assert _toy_run(run) == 0
    assert [r.getMessage() for r in caplog.records if "UnicodeEncodeError" in r.getMessage()] == []
    page = (run / "report.html").read_text(encoding="utf-8")
    assert "run\ufffd" in page and "not UTF-8" in page
    (run / "report.html").unlink()
    assert main(["report", str(run), "--html", "-q"]) == 0
    assert "run\ufffd" in (run / "report.html").read_text(encoding="utf-8")


def test_a_long_run_of_backticks_is_read_in_linear_time() -> None:
    """The inline-code pattern backtracked over every split of a run of backticks: 8000 of them (a config
    string in a table, a table.md cell) took 6 s to read, 16000 about a minute, for every page render."""
    import time

    from structnets.html._markdown import Span, spans

    start = time.perf_counter()
    assert spans("`" * 20000) == [Span("text", "`" * 20000)]
    assert spans("a" + "`" * 20000 + "b") == [Span("text", "a" + "`" * 20000 + "b")]
    assert time.perf_counter() - start < 1.0
    assert spans("``a`b`` and `c` and ```d``` ") == [
        Span("code", "a`b"), Span("text", " and "), Span("code", "c"), Span("text", " and "), Span("code", "d"),
        Span("text", " "),
    ]  # fmt: skip


def test_the_command_of_a_run_of_an_unregistered_experiment_names_its_spec(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``structnets run toy_experiment:EXPERIMENT --out RUN``: the page's 'Reproduce (or resume) this run'
    command read ``structnets run toy --out RUN``, which fails (no experiment is registered as 'toy')."""
    import toy_experiment as toy

    from structnets import experiments
    from structnets.html.run_page import reproduce_command

    monkeypatch.delitem(experiments._MODULES, "toy")  # as for a user: toy is not a registered experiment

    run = tmp_path / "run"
    assert main(["run", toy.SPEC, "--quick", "--out", str(run), "--jobs", "1", "-q"]) == 0
    assert f"<code>structnets run {toy.SPEC} --quick --out {run}</code>" in (run / "report.html").read_text()
    config = toy.ToyConfig.quick()
    assert (
        reproduce_command(toy.EXPERIMENT, config, "r", registry=toy.REGISTRY)[0] == "structnets run toy --quick --out r"
    )
    assert (
        reproduce_command(toy.EXPERIMENT, config, "r", registry={})[0] == f"structnets run {toy.SPEC} --quick --out r"
    )


def test_a_finished_run_shows_no_failure_of_an_earlier_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A first unit failed (no unit finished), so the folder took the next command's other config; that run
    finished every unit, yet its page said '1 failed' with the old error for good: the failed key is no
    unit of the new config, so it never finished and failed_units.json kept it."""
    run = tmp_path / "run"
    monkeypatch.setenv("STRUCTNETS_TOY_FAIL_KEYS", "stage1/arm=0/seed=0")
    assert _toy_run(run) == 1
    assert "1 failed" in (run / "report.html").read_text()
    monkeypatch.delenv("STRUCTNETS_TOY_FAIL_KEYS")
    assert _toy_run(run, "--set", "seeds=5,6") == 0
    page = (run / "report.html").read_text()
    assert "no failed unit" in page and "toy failure requested" not in page
    assert not (run / "failed_units.json").exists()
    assert main(["report", str(run), "--html", "-q"]) == 0
    assert "no failed unit" in (run / "report.html").read_text()


def test_deeply_nested_quotes_do_not_break_the_page() -> None:
    """A table.md line of 3000 '>' (each a nested quote) raised RecursionError in the Markdown reader (400
    in the template), so the page could not be made at all; deeper than MAX_QUOTE_DEPTH stays text."""
    from structnets.html import _markdown
    from structnets.html._render import render

    blocks = _markdown.parse(">" * 3000 + " x\n\nafter")
    html = render("run.html.j2", page=_page_of(blocks))
    assert html.count("<blockquote>") == _markdown.MAX_QUOTE_DEPTH and "after" in html


def _page_of(blocks: list[object]) -> object:
    from structnets.html import run_page as rp

    return rp._Page(
        experiment="x", description="", run_dir="r", status="finished", done=1, total=1, failed=[], missing=0,
        config=[], command="c", command_note="", table=blocks, table_note="", columns=[], rows=[], figures=[],
        figure_note="", environment=[], sessions=[], generated="g",
    )  # type: ignore[arg-type]  # fmt: skip


def test_report_html_does_not_write_over_a_folder_a_run_holds(tmp_path: Path) -> None:
    """``structnets report RUN --html`` wrote the page after ``report`` had released the run lock, so a run
    started meanwhile had its live page replaced by report's (of the results before it); the page is now
    read and written holding the lock, and refused while a run holds it."""
    import toy_experiment as toy

    from structnets.html import write_run_page
    from structnets.runner import RunLockedError
    from structnets.runner.lock import run_lock

    run = tmp_path / "run"
    assert _toy_run(run) == 0
    before = (run / "report.html").read_bytes()
    with run_lock(run), pytest.raises(RunLockedError, match="in use by another structnets run"):
        write_run_page(run, experiment=toy.EXPERIMENT)
    assert (run / "report.html").read_bytes() == before
    write_run_page(run, experiment=toy.EXPERIMENT)
    assert (run / "report.html").read_bytes() != before and not (run / ".structnets.lock").exists()


def test_claims_links_go_through_a_linked_run_folder_as_a_browser_does(tmp_path: Path) -> None:
    """``runs/x`` a symbolic link to a folder on another disk: the claims page linked to the link's target
    (``../../big/x/report.html``, the path resolved), which breaks once the project folder moves or is
    opened elsewhere; a browser resolves ``..`` in the address as written, so the link goes through ``runs/x``."""
    from structnets.claims import COLUMNS
    from structnets.html import claims_page

    target = tmp_path / "disk" / "big" / "x"
    target.mkdir(parents=True)
    (target / "report.html").write_text("page")
    project = tmp_path / "project"
    (project / "runs").mkdir(parents=True)
    (project / "runs" / "x").symlink_to(target)
    row = {"id": "000-x", "paper": "p", "claim": "c", "paper value": "1", "ours": "1", "verdict": "reproduced",
           "test": "t", "run": str(project / "runs" / "x"), "experiment": "toy", "preset": "quick", "units": 1,
           "unit keys": ("k",)}  # fmt: skip
    html = claims_page.render_claims_page(
        __import__("pandas").DataFrame([row], columns=list(COLUMNS)), page_path=project / "docs" / "claims.html"
    )
    assert 'href="../runs/x/report.html#unit-k"' in html and "No <code>report.html</code> yet" not in html


def test_claims_links_stay_inside_a_project_reached_through_a_link(tmp_path: Path) -> None:
    """The other side: the page written through a linked project folder (``~/proj -> /data/proj``) and the
    run named by its physical path keep the short link inside the project, not one out through the root."""
    from structnets.claims import COLUMNS
    from structnets.html import claims_page

    physical = tmp_path / "data" / "proj"
    (physical / "runs" / "x").mkdir(parents=True)
    (physical / "runs" / "x" / "report.html").write_text("page")
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "proj").symlink_to(physical)
    row = {"id": "000-x", "paper": "p", "claim": "c", "paper value": "1", "ours": "1", "verdict": "reproduced",
           "test": "t", "run": str(physical / "runs" / "x"), "experiment": "toy", "preset": "quick", "units": 1,
           "unit keys": ("k",)}  # fmt: skip
    html = claims_page.render_claims_page(
        __import__("pandas").DataFrame([row], columns=list(COLUMNS)),
        page_path=tmp_path / "home" / "proj" / "docs" / "claims.html",
    )
    assert 'href="../runs/x/report.html#unit-k"' in html
