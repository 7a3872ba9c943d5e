"""Smoke test of ``benchmarks/loader.py`` on a small data set."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

_SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks", "loader.py")


@pytest.mark.slow
def test_loader_benchmark_prints_rates_and_ratios(tmp_path):
    pytest.importorskip("torch")
    command = [
        sys.executable, _SCRIPT, "--rows", "20000", "--batch-size", "4096", "--workdir", str(tmp_path), "--no-progress",
        "--parts-per-chunk", "2",
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    for name in ("floor", "TorchAsyncItr", "row-indexed DataLoader (pandas rows)", "row-indexed DataLoader (tensor rows)"):
        assert re.search(rf"^{re.escape(name)}.* rows/s .*peak RSS", out, flags=re.MULTILINE), out
    assert "rate extrapolated" in out
    assert re.search(r"^ratio TorchAsyncItr / floor: [\d.]+x \(target >= 0\.7x\)", out, flags=re.MULTILINE), out
    pattern = r"^ratio TorchAsyncItr / row-indexed DataLoader \(pandas rows\): [\d,.]+x \(target: hundreds"
    assert re.search(pattern, out, flags=re.MULTILINE), out
    assert re.search(r"^ratio TorchAsyncItr / row-indexed DataLoader \(tensor rows, reference\): [\d,.]+x$", out, flags=re.MULTILINE), out
    memory = r"^memory TorchAsyncItr: peak RSS [\d,]+ MB above the imports = [\d.]+ x parts_per_chunk \(2\) x the largest partition's tensors"
    assert re.search(memory, out, flags=re.MULTILINE), out
