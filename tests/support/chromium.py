"""Headless Chromium for the tests that check what a person would see on a page (`make chromium` installs it)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# The machine's network is closed: without the background-networking flags Chromium keeps trying to reach Google.
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run headless Chromium with a fresh profile under `tmp_path`; fails the test, with the fix, if it is missing."""
    if not Path(CHROMIUM).exists():
        pytest.fail("headless Chromium is missing: `make chromium` (apt-get install chromium) installs it")
    return subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )


def rendered_dom(tmp_path: Path, page: Path) -> str:
    """The DOM after Chromium rendered the page."""
    return chromium(tmp_path, "--dump-dom", page.as_uri()).stdout
