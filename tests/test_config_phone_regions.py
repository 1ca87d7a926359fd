"""`pool.pii_phone_regions`: regions phonenumbers knows, any case; checking them costs start-up
nothing unless a region beyond the defaults is named."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agent_agency.config import load_config, parse_config
from agent_agency.sections import ConfigError


def test_phone_regions_are_upper_cased() -> None:
    config = parse_config({"pool": {"pii_phone_regions": ["us", "Jp", "GB"]}})
    assert config.pool.pii_phone_regions == ["US", "JP", "GB"]


def test_an_unknown_phone_region_names_the_field_and_value(tmp_path: Path) -> None:
    path = tmp_path / "agency.yaml"
    path.write_text("pool:\n  pii_phone_regions: [us, XX]\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    message = str(caught.value)
    assert f"{path}: invalid configuration" in message
    assert "pool.pii_phone_regions.1: 'XX' is not a region phonenumbers" in message


def test_default_regions_are_checked_without_importing_phonenumbers() -> None:
    code = (
        "import sys\n"
        "from agent_agency.cli.options import load_settings\n"
        "load_settings(None, 'pool.db')  # --db validates the defaults again\n"
        "assert 'phonenumbers' not in sys.modules, 'phonenumbers imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
