"""The pages in a real browser (headless Chromium): they render, run nothing, show every row and figure.

Each test opens a page made from a small run folder of the toy experiment, evaluates one probe in the
page and checks: no console error or warning and no uncaught exception; every figure is drawn with a
non-zero size and has alt text; the results table holds exactly the rows of ``results.db``; a hostile
string from the run folder (config value, error message) is shown as text and neither ran (the title
is unchanged, no element it would add exists) nor became an element; at 1280 px the page does not
scroll sideways and the summary is on the first screen. A screenshot of each page is kept.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pandas as pd
import pytest
from browser import Browser
from odd_keys_experiment import ODD_KEYS

from conftest import HOSTILE, HOSTILE_ERROR
from structnets.cli import main
from structnets.html.run_page import unit_anchor

PROBE = """(() => {
  const box = (el) => { const r = el.getBoundingClientRect(); return [r.width, r.height, r.top, r.bottom]; };
  const q = (s) => [...document.querySelectorAll(s)];
  return {
    title: document.title,
    scripts: document.scripts.length,
    pwned: q('#pwned, #pwned-img').length,
    images: q('img').map(i => ({natural: [i.naturalWidth, i.naturalHeight], box: box(i), alt: i.alt,
                                 complete: i.complete, caption: i.closest('figure')?.querySelector('figcaption')?.textContent || ''})),
    keys: q('#results-table tbody tr').map(tr => tr.cells[0].textContent),
    ids: q('#results-table tbody tr').map(tr => tr.id),
    columns: q('#results-table thead th').map(th => th.textContent),
    text: document.body.innerText,
    scrollWidth: document.documentElement.scrollWidth,
    innerWidth: window.innerWidth, innerHeight: window.innerHeight,
    summary: (document.querySelector('#progress, #verdicts') ? box(document.querySelector('#progress, #verdicts')) : null),
    badges: q('.summary .badge').map(b => [b.textContent, getComputedStyle(b).color]),
    links: q('td a[href]').map(a => a.getAttribute('href')),
    external: q('[src]').map(e => e.getAttribute('src')).filter(s => !s.startsWith('data:')),
  };
})()"""


def _keys(run: Path) -> list[str]:
    with sqlite3.connect(run / "results.db") as conn:
        return [k for (k,) in conn.execute("SELECT key FROM results ORDER BY rowid")]


def _open(browser: Browser, page: Path, screenshots: Path, name: str) -> dict:  # type: ignore[type-arg]
    visit = browser.open(page, PROBE)
    shot = screenshots / f"{name}.png"
    shot.write_bytes(visit.screenshot)
    print(f"screenshot: {shot}")
    assert visit.screenshot.startswith(b"\x89PNG\r\n\x1a\n") and len(visit.screenshot) > 10_000
    assert visit.errors == [], visit.errors
    value = visit.value
    assert value["scripts"] == 0 and value["pwned"] == 0 and value["title"] != "pwned"
    assert value["external"] == []  # nothing but data: URIs: the page loads nothing
    assert value["scrollWidth"] <= value["innerWidth"] == 1280  # wide tables scroll inside their box
    top, bottom = value["summary"][2], value["summary"][3]
    assert 0 <= top < bottom <= value["innerHeight"]  # the summary is on the first screen
    return value


def test_run_page_in_a_browser(tmp_path: Path, browser: Browser, screenshots: Path) -> None:
    run = tmp_path / "run"
    assert main(["run", "toy", "--quick", "--set", f"label={HOSTILE}", "--out", str(run), "--jobs", "1", "-q"]) == 0
    page = run / "report.html"  # written by `structnets run` itself
    value = _open(browser, page, screenshots, "run-page")
    assert value["title"] == f"toy: {run}"
    assert value["keys"] == _keys(run) and len(value["keys"]) == 6
    assert value["ids"] == [f"unit-{key}" for key in value["keys"]]  # each unit can be linked to
    assert value["columns"] == list(pd.read_csv(run / "results.csv").columns)
    assert value["text"].count(HOSTILE) >= 7  # six result rows and the config table show it as text
    assert len(value["images"]) == 1
    for image in value["images"]:
        assert image["complete"] and min(image["natural"]) > 0 and min(image["box"][:2]) > 0, image
        assert image["alt"].startswith("Figure values of toy") and "value against arm" in image["alt"]
        assert image["caption"].startswith("Figure 1: values")
    assert "6 of 6 units known so far finished" in value["text"]
    assert "structnets run toy --quick --set" in value["text"]


def test_failed_run_page_shows_the_errors_as_text(
    tmp_path: Path, browser: Browser, screenshots: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = tmp_path / "run"
    monkeypatch.setenv("STRUCTNETS_TOY_FAIL_KEYS", "stage1/arm=1/seed=0")
    assert main(["run", "toy", "--quick", "--out", str(run), "--jobs", "1", "-q"]) == 1
    visit = browser.open(run / "report.html", PROBE)
    assert visit.errors == []
    assert "stage1/arm=1/seed=0: RuntimeError: toy failure requested for stage1/arm=1/seed=0" in visit.value["text"]
    assert (
        "1 failed" in visit.value["text"] and visit.value["keys"] == _keys(run) and len(_keys(run)) == 2
    )  # the fourth never ran
    # A crafted record: the error message holds markup; `report --html` must show it as text.
    record = [{"key": "stage1/arm=1/seed=0", "error": HOSTILE_ERROR, "time": "then"}]
    (run / "failed_units.json").write_text(json.dumps(record))
    assert main(["report", str(run), "--html", "-q"]) == 0
    value = _open(browser, run / "report.html", screenshots, "failed-run-page")
    assert HOSTILE_ERROR in value["text"]
    assert "2 of 4 units known so far finished" in value["text"]


def test_claims_page_in_a_browser(tmp_path: Path, browser: Browser, screenshots: Path) -> None:
    from structnets.claims import COLUMNS, VERDICTS
    from structnets.html import write_claims_page

    run = tmp_path / "runs" / "toy run"
    assert main(["run", "toy", "--quick", "--out", str(run), "--jobs", "1", "-q"]) == 0
    rows = [
        {
            "id": f"00{i}-claim",
            "paper": "paper A (000)" if i < 3 else "paper B (001)",
            "claim": HOSTILE if i == 0 else f"claim {i}",
            "paper value": "0.5",
            "ours": HOSTILE_ERROR if i == 1 else "0.49 ± 0.01",
            "verdict": verdict,
            "test": "x " * 200,  # a long cell: the table wraps or scrolls, never the page
            "run": str(run) if i % 2 == 0 else "—",
            "experiment": "toy",
            "preset": "quick",
            "units": 6,
            "unit keys": {0: ("stage1/arm=0/seed=1",), 2: tuple(_keys(run))}.get(i, ()),
        }
        for i, verdict in enumerate(VERDICTS)
    ]
    (tmp_path / "docs").mkdir()
    page = write_claims_page(pd.DataFrame(rows, columns=list(COLUMNS)), tmp_path / "docs" / "claims.html")
    value = _open(browser, page, screenshots, "claims-page")
    assert HOSTILE in value["text"] and HOSTILE_ERROR in value["text"]
    # Colour and text: every verdict named in the summary, each in its own colour.
    assert [b[0] for b in value["badges"]] == list(VERDICTS)
    assert len({b[1] for b in value["badges"]}) == len(VERDICTS)
    page_link = "../runs/toy%20run/report.html"
    one = f"{page_link}#unit-stage1/arm=0/seed=1"  # one unit: the run link and the key go to its row
    several = [f"{page_link}#results"] + [f"{page_link}#unit-{key}" for key in _keys(run)]  # six: listed
    assert value["links"] == [one, one, *several, f"{page_link}#results"]
    assert (page.parent / "../runs/toy run/report.html").resolve().is_file()
    assert "the 6 units used" in value["text"]


LINKS = """[...document.querySelectorAll('table.claims tbody tr')].map(tr => [tr.id,
  [...tr.querySelectorAll('a[href]')].map(a => [a.getAttribute('href'), a.href, a.textContent])])"""

TARGET = """(() => {
  const t = document.querySelector(':target');
  if (!t) return null;
  const r = t.getBoundingClientRect();
  return {id: t.id, tag: t.tagName, key: t.cells ? t.cells[0].textContent : null, top: r.top, bottom: r.bottom,
          height: window.innerHeight};
})()"""


def test_claim_links_reach_the_rows_of_their_units(
    tmp_path: Path, browser: Browser, screenshots: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each link of the claims page, followed in the browser, lands on an element of the run page: the row of
    the unit it names (keys with a space, ``#``, ``%``, quotes, markup, ``?``/``&`` and non-ASCII), or the
    results table; the row is on screen and shows that key."""
    from structnets import experiments
    from structnets.claims import COLUMNS, REPRODUCED
    from structnets.html import write_claims_page

    monkeypatch.setitem(experiments._MODULES, "odd-keys", "odd_keys_experiment")
    run = tmp_path / "runs" / "odd run"
    assert main(["run", "odd-keys", "--out", str(run), "--jobs", "1", "-q"]) == 0
    assert _keys(run) == list(ODD_KEYS)
    base = {"paper": "paper A (000)", "claim": "c", "paper value": "1", "ours": "1", "verdict": REPRODUCED}
    used = {"one": (ODD_KEYS[2],), "several": ODD_KEYS, "unnamed": (), "no run": ()}
    rows = [
        {**base, "id": name, "test": "t", "run": "—" if name == "no run" else str(run), "experiment": "odd-keys",
         "preset": "quick", "units": len(keys) or 1, "unit keys": keys}
        for name, keys in used.items()
    ]  # fmt: skip
    (tmp_path / "docs").mkdir()
    page = write_claims_page(pd.DataFrame(rows, columns=list(COLUMNS)), tmp_path / "docs" / "claims.html")
    links = dict(browser.open(page, LINKS).value)
    assert [len(links[f"claim-{name}"]) for name in used] == [2, 1 + len(ODD_KEYS), 1, 0]
    expected: list[tuple[str, str | None]] = [(ODD_KEYS[2], None)] * 2  # (key of the row, or None: the table)
    expected += [("", "results")] + [(key, None) for key in ODD_KEYS] + [("", "results")]
    followed = [link for name in used for link in links[f"claim-{name}"]]
    assert len(followed) == len(expected)
    for (raw, href, _text), (key, element) in zip(followed, expected, strict=True):
        assert raw.startswith("../runs/odd%20run/report.html#") and href.startswith("file://"), raw
        visit = browser.open(href, TARGET)
        assert visit.errors == [], visit.errors
        target = visit.value
        assert target is not None, f"{raw} names no element of the run page"
        if element is None:
            assert (target["id"], target["tag"], target["key"]) == (unit_anchor(key), "TR", key), raw
            # scrolled to, on screen (a row scrolled to the top may sit a subpixel above it)
            assert -1 < target["top"] < target["bottom"] and target["top"] < target["height"], target
        else:
            assert target["id"] == element, raw
    shot = browser.open(f"{page.resolve().as_uri()}#claim-one", "1", full_page=True).screenshot
    (screenshots / "claims-unit-links.png").write_bytes(shot)


def test_claims_command_page_in_a_browser(tmp_path: Path, browser: Browser, screenshots: Path) -> None:
    """``structnets claims RUN --html FILE`` on a run folder made with the runner's own store (no unit run)."""
    from structnets import experiments
    from structnets.claims import CLAIMS, VERDICTS
    from structnets.runner import config_to_json
    from structnets.runner.store import ResultStore

    experiment = experiments.get("dlor-blindspot")
    run = tmp_path / "runs" / "dlor"
    run.mkdir(parents=True)
    config = config_to_json(experiment.config_class.quick())
    with ResultStore.create_or_resume(
        run / "results.db", experiment=experiment.name, experiment_ref=experiment.name, config=config
    ):
        pass
    (run / "run_info.json").write_text(json.dumps({"status": "finished", "experiment": experiment.name}))
    page = tmp_path / "claims.html"
    assert main(["claims", str(run), "--html", str(page), "-q"]) == 0
    value = _open(browser, page, screenshots, "claims-command-page")
    dlor = [c for c in CLAIMS if c.experiment == "dlor-blindspot"]
    assert value["links"] == ["runs/dlor/report.html#results"] * len(dlor) and dlor
    assert f"{len(CLAIMS)} claims" in value["text"] and "No report.html yet in" in value["text"]
    assert [b[0] for b in value["badges"]] == list(VERDICTS)
    visit = browser.open(
        page, "[...document.querySelectorAll('table.claims tbody tr')].map(r => r.cells[3].textContent)"
    )
    assert len(visit.value) == len(CLAIMS) and set(visit.value) <= set(VERDICTS)
