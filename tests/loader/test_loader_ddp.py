"""The torchrun demo: two gloo ranks train one epoch on disjoint shares with equal step counts."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from loader_data import make_frame, write_dataset

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "ddp_train.py")


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_torchrun_two_ranks(tmp_path):
    data = write_dataset(str(tmp_path / "data"), make_frame(243, seed=3))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": os.path.abspath(os.path.join(os.path.dirname(SCRIPT), ".."))}
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
               os.path.abspath(SCRIPT), "--data", data, "--batch-size", "16"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=150, env=env)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "ddp ok: world=2 steps_per_rank=8 rows=242" in result.stdout
