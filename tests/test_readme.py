"""The README stays true: its quickstart runs and its main-job command works."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def test_quickstart_blocks_run():
    blocks = re.findall(r"```python\n(.*?)```", README, flags=re.S)
    assert blocks, "README has no python block"
    for code in blocks:
        done = subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr
        assert "AP" in done.stdout


def test_main_job_command_runs_on_shipped_sample_data():
    # The first fresh-machine command is "pip install . && polars-rankeval eval ...";
    # run its second half through the installed module, as the console script does.
    line = next(ln for ln in README.splitlines() if ln.startswith("python -m pip install . && "))
    args = shlex.split(line.split("&&", 1)[1])
    assert args[0] == "polars-rankeval"
    done = subprocess.run(
        [sys.executable, "-m", "polars_rankeval", *args[1:]],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    for name in ("bm25", "dense", "AP", "nDCG@10", "P@10", "RR"):
        assert name in done.stdout
