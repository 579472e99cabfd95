"""The version is written once (``polars_rankeval.__version__``); the rest agrees with it."""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

import polars_rankeval as pr

ROOT = Path(__file__).resolve().parents[1]


def test_installed_metadata_carries_the_package_version() -> None:
    # pyproject.toml reads the version from the package (setuptools dynamic version).
    assert importlib.metadata.version("polars-rankeval") == pr.__version__
    assert re.fullmatch(r"\d+\.\d+\.\d+", pr.__version__)


def test_changelog_has_the_version_and_an_unreleased_section() -> None:
    headings = re.findall(r"^## \[([^\]]+)\]", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert headings[0] == "Unreleased"
    assert pr.__version__ in headings
