"""`agency report`: one self-contained HTML file whose panels plot what the pool holds, or say
"no data yet"; opened in headless Chromium, it shows the plots and loads nothing."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_agency.caws.audit import AuditLog
from agent_agency.cli.app import app
from agent_agency.deploy.registry import VersionRegistry
from agent_agency.pool.sql_store import SqlStore
from agent_agency.pool.store import Store
from agent_agency.report.svg import PALETTE
from scripted_config import TWO_SCRIPTED_AGENTS

runner = CliRunner()
PANELS = (
    "validations",
    "heldout",
    "routing",
    "rewards",
    "rollouts",
    "health",
    "trends",
    "versions",
)
CHROMIUM = shutil.which("chromium")
URL = re.compile(r"(?:https?|ftp|wss?)://", re.IGNORECASE)


def _panel(page: str, anchor: str) -> str:
    match = re.search(rf'<section class="panel" id="{anchor}">(.*?)</section>', page, re.S)
    assert match is not None, f"panel {anchor} missing"
    return match.group(1)


def _self_contained(page: str) -> None:
    assert URL.search(page) is None, URL.search(page)
    assert not re.search(r"<(?:script|link|img|iframe|object|embed)\b", page, re.I)
    assert not re.search(r"\b(?:src|href)\s*=", page, re.I)
    assert "url(" not in page and "@import" not in page


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AGENCY_CONFIG", raising=False)
    (tmp_path / "agency.yaml").write_text(TWO_SCRIPTED_AGENTS, encoding="utf-8")
    return tmp_path


def _invoke(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def test_an_empty_pool_says_no_data_yet_in_every_panel(workdir: Path) -> None:
    Store.open(str(workdir / "agency.db")).close()
    _invoke("report", "--out", "empty.html")
    page = (workdir / "empty.html").read_text(encoding="utf-8")
    for anchor in PANELS:
        assert "no data yet" in _panel(page, anchor), anchor
    assert '<svg class="plot"' not in page
    _self_contained(page)


def test_a_missing_database_is_an_error(workdir: Path) -> None:
    result = runner.invoke(app, ["report", "--out", "r.html", "--db", "absent.db"])
    assert result.exit_code == 2
    assert not (workdir / "r.html").exists()


@pytest.fixture
def filled(workdir: Path) -> Path:
    """A pool filled by scripted runs, a trained and validated version, a promotion."""
    _invoke("run", "--tasks", "40", "--seed", "1")
    _invoke("run", "--split", "heldout", "--tasks", "12", "--seed", "2")
    _invoke(
        "train", "--phase", "prompt", "--agent", "sim-good", "--minibatch", "4", "--candidates", "2"
    )
    _invoke("validate", "sim-good@2", "--tasks", "10")
    _invoke(
        "run",
        "--agent",
        "sim-good@2",
        "--agent",
        "sim-good",
        "--agent",
        "sim-poor",
        "--tasks",
        "30",
        "--seed",
        "3",
    )
    with Store.open(str(workdir / "agency.db"), create=False) as store:
        assert isinstance(store, SqlStore)
        # what a promotion by the deployment stage leaves: a status change and an audit entry
        registry = VersionRegistry(store.engine)
        registry.set_status("sim-good@2", "active", reason="validated better")
        registry.set_status("sim-good@1", "retired", reason="replaced by sim-good@2")
        AuditLog(store.engine).append(
            "deployment",
            "sim-good@2#2",
            {
                "version": "sim-good@2",
                "from": "candidate",
                "to": "active",
                "share": 1.0,
                "reason": "validated better",
                "actor": "person",
                "figures": {},
            },
        )
    _invoke("report", "--out", "report.html")
    return workdir / "report.html"


def test_a_filled_pool_plots_every_panel(filled: Path) -> None:
    page = filled.read_text(encoding="utf-8")
    _self_contained(page)
    for anchor in PANELS[:6] + ("versions",):
        panel = _panel(page, anchor)
        assert "no data yet" not in panel, anchor
    for anchor in PANELS[:6]:
        assert '<svg class="plot"' in _panel(page, anchor), anchor
    assert "sim-good@2" in _panel(page, "validations")
    rollouts = _panel(page, "rollouts")
    assert "registry, audit #" in rollouts and "(person)" in rollouts  # one row, both sources
    assert rollouts.count("validated better") == 1
    assert "SIMULATION" in page


def _chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    return subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            f"--user-data-dir={tmp_path / 'profile'}",
            *args,
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _page_requests(net_log: Path) -> set[str]:
    """The URLs Chromium's network log shows requested on behalf of a page opened from a file.
    (Chromium makes requests of its own, for updates and accounts, whatever the page holds:
    those belong to no page, their network isolation key is not file://.)"""
    text = net_log.read_text(encoding="utf-8").rstrip()
    try:
        log = json.loads(text)
    except json.JSONDecodeError:  # a log cut short at exit lacks its closing brackets
        log = json.loads(text.rstrip(",") + "]}")
    return {
        event["params"]["url"]
        for event in log["events"]
        if "url" in event.get("params", {})
        and "file://" in str(event["params"].get("network_isolation_key", ""))
    }


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (.ci/run installs it)")
def test_the_network_check_sees_a_page_request(tmp_path: Path) -> None:
    page = tmp_path / "fetches.html"
    page.write_text('<p>x</p><img src="https://example.invalid/x.png">', encoding="utf-8")
    net_log = tmp_path / "net.json"
    _chromium(tmp_path, f"--log-net-log={net_log}", "--dump-dom", page.as_uri())
    assert "https://example.invalid/x.png" in _page_requests(net_log)


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (.ci/run installs it)")
def test_headless_chromium_shows_the_plots_and_loads_nothing(filled: Path, tmp_path: Path) -> None:
    from PIL import Image, ImageChops

    url = filled.resolve().as_uri()
    net_log = tmp_path / "net.json"
    shot = tmp_path / "shot.png"
    _chromium(
        tmp_path, "--window-size=1280,5000", f"--screenshot={shot}", f"--log-net-log={net_log}", url
    )
    dom = _chromium(tmp_path, "--dump-dom", url).stdout
    # the DOM Chromium built holds the plots
    assert dom.count('<svg class="plot"') >= 8
    assert dom.count("<polyline") >= 2 and dom.count('class="interval"') >= 3
    # the screenshot is not blank: many colours, much ink, the plots' own colours in quantity
    image = Image.open(shot).convert("RGB")
    background = Image.new("RGB", image.size, (250, 250, 250))  # the page's, around the panels
    box = ImageChops.difference(image, background).getbbox()
    assert box is not None, "the screenshot is blank"
    content = image.crop(box)
    assert content.height > 1500  # eight panels, not an error page
    colours = content.getcolors(maxcolors=1 << 24)
    assert colours is not None
    counts = {rgb: n for n, rgb in colours}
    pixels = content.width * content.height
    ink = pixels - counts.get((255, 255, 255), 0) - counts.get((250, 250, 250), 0)
    assert len(counts) > 100
    assert ink > 0.03 * pixels
    for hex_colour in PALETTE[:2]:
        rgb = tuple(int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
        assert counts.get(rgb, 0) > 200, hex_colour
    # the page asked for nothing but itself
    assert {request.split("://")[0] for request in _page_requests(net_log)} <= {"file"}
