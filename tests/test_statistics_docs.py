"""docs/statistics.md stays true: its example runs and its hand-worked numbers hold."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import polars_rankeval as pr

ROOT = Path(__file__).resolve().parents[1]
GUIDE = (ROOT / "docs" / "statistics.md").read_text()


def test_example_blocks_run():
    blocks = re.findall(r"```python\n(.*?)```", GUIDE, flags=re.S)
    assert blocks, "docs/statistics.md has no python block"
    for code in blocks:
        done = subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr
        assert "topics needed:" in done.stdout
        assert "| c | rrf |" in done.stdout  # the letters table of three systems


def test_numbers_quoted_in_the_guide():
    assert "it gives 128 topics" in GUIDE
    assert pr.topic_set_size(0.05, 0.2) == 128
    assert "p = 2/256" in GUIDE  # 8 queries shifted by 0.2: checked in test_stats_many


def test_every_test_and_correction_is_documented():
    for name in pr.TESTS:
        assert f"| `{name}` |" in GUIDE, name
    for name in pr.CORRECTIONS:
        assert f"| `{name}` |" in GUIDE, name
