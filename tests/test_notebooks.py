"""Every example notebook runs top to bottom on small synthetic data, and is stored clean."""

from __future__ import annotations

import os
import sys

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

NOTEBOOK_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "notebooks")
NOTEBOOKS = sorted(name for name in os.listdir(NOTEBOOK_DIR) if name.endswith(".ipynb"))
CI_ROWS = "20000"
# Modules each notebook needs beyond tabflow's own requirements.
NEEDS = {
    "02-fastai-training.ipynb": ["torch", "fastai", "matplotlib"],
    "03-pytorch-multihot.ipynb": ["torch", "sklearn", "matplotlib"],
    "05-serving.ipynb": ["torch"],
    "06-incremental-training.ipynb": ["torch", "sklearn", "matplotlib"],
}


def _python3_kernel_is_this_python() -> bool:
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        spec = KernelSpecManager().get_kernel_spec("python3")
    except NoSuchKernel:
        return False
    # jupyter_client runs a spec whose command is a bare "python" with sys.executable.
    command = spec.argv[0]
    return command in ("python", "python3") or os.path.realpath(command) == os.path.realpath(sys.executable)


@pytest.fixture(scope="session")
def kernel_ready():
    if not _python3_kernel_is_this_python():
        from ipykernel.kernelspec import install

        install(prefix=sys.prefix)
    return "python3"


def test_notebooks_are_found_and_stored_without_outputs():
    assert NOTEBOOKS == [
        "01-getting-started.ipynb",
        "02-fastai-training.ipynb",
        "03-pytorch-multihot.ipynb",
        "04-scaling-out.ipynb",
        "05-serving.ipynb",
        "06-incremental-training.ipynb",
    ]
    for name in NOTEBOOKS:
        notebook = nbformat.read(os.path.join(NOTEBOOK_DIR, name), as_version=4)
        nbformat.validate(notebook)
        for cell in notebook.cells:
            if cell.cell_type == "code":
                assert not cell.outputs and cell.execution_count is None, f"{name} holds outputs"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_runs(name, kernel_ready, tmp_path, monkeypatch):
    for module in NEEDS.get(name, []):
        pytest.importorskip(module)
    monkeypatch.setenv("TABFLOW_NOTEBOOK_ROWS", CI_ROWS)
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # the kernel writes its temp files here
    notebook = nbformat.read(os.path.join(NOTEBOOK_DIR, name), as_version=4)
    client = nbclient.NotebookClient(
        notebook, kernel_name=kernel_ready, timeout=600, resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()  # raises CellExecutionError, with the cell and traceback, if a cell fails
    leftovers = [p for p in os.listdir(tmp_path) if p.startswith("tabflow-")]
    assert not leftovers, f"{name} left {leftovers} behind"
