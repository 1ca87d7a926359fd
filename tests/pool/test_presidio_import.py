"""Presidio is imported without the machine-learning frameworks it would load when installed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from agent_agency.pool.pii import UNUSED_FRAMEWORKS

SCRIPT = """\
import sys
from agent_agency.pool import pii

# a national-format number that only Presidio's phone recognizer finds
assert [finding.entity for finding in pii.find_pii("call 07400 123456")] == ["PHONE_NUMBER"]
assert pii.checksum_entities("GB82 WEST 1234 5698 7654 32") == ("IBAN_CODE",)
print("imported with Presidio:", sorted(set(sys.modules) & {"torch", "transformers"}))
import torch, transformers  # still importable afterwards
print("imported afterwards:", torch.INSTALLED and transformers.INSTALLED)
"""


def test_presidio_is_imported_without_installed_frameworks(tmp_path: Path) -> None:
    """Stand-ins for torch and transformers, installed: Presidio, spaCy and thinc would import
    them (a real torch and transformers took 15 of 16 s to import); the analyzer works without,
    and they can be imported afterwards."""
    assert {"torch", "transformers"} <= UNUSED_FRAMEWORKS
    for framework in ("torch", "transformers"):
        (tmp_path / framework).mkdir()
        (tmp_path / framework / "__init__.py").write_text("INSTALLED = True\n")
    path = os.pathsep.join([str(tmp_path), *sys.path])
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": path},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "imported with Presidio: []" in done.stdout
    assert "imported afterwards: True" in done.stdout
