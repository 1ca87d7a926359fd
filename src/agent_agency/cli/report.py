"""`agency report`: one self-contained HTML file of plots about the loop."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agent_agency.cli.options import (
    ConfigOption,
    DbOption,
    console,
    fail,
    load_settings,
    open_store,
)


def report(
    out: Annotated[
        Path, typer.Option("--out", metavar="FILE", help="the HTML file to write")
    ] = Path("agency-report.html"),
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Write one HTML file (no server, nothing loaded from the network) with plots: held-out
    quality per version with intervals, routing share per version over time, reward
    distributions, rollout and rollback history, data health and the latest trends."""
    from agent_agency.pool.engine import shown_url
    from agent_agency.report.data import gather
    from agent_agency.report.render import render

    settings = load_settings(config, db)
    with open_store(settings, create=False, writes=False) as store:
        page = render(gather(store, shown_url(settings.storage.url)))
    try:
        out.write_text(page, encoding="utf-8")
    except OSError as error:
        raise fail(f"--out: cannot write {out}: {error.strerror or error}") from None
    console.print(f"report written to {out} ({len(page):,} bytes)", highlight=False)
