"""``numba.cuda`` after ``import numba``, as merlin-core 23.08's ``from numba import cuda`` left it.

Each case runs in a fresh interpreter: whether numba and ``numba.cuda`` are imported is the
point, and the test process has imported both long ago.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

import tabflow

REPO = os.path.dirname(os.path.dirname(os.path.abspath(tabflow.__file__)))


def run_python(script: str, *site: str) -> str:
    path = os.pathsep.join([*site, REPO, os.environ.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": path},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_numba_cuda_is_an_attribute_after_import_numba_and_tabflow_does_not_import_numba():
    # NVTabular's multi-GPU-or-CPU example: ``import numba`` then ``numba.cuda.is_available()``.
    out = run_python("""
        import importlib.resources, sys
        import tabflow
        assert "numba" not in sys.modules and "numba.cuda" not in sys.modules  # import tabflow stays quick
        import numba
        assert "numba.cuda" not in sys.modules  # imported when first read
        available = numba.cuda.is_available()
        from numba import cuda
        assert numba.cuda is cuda is sys.modules["numba.cuda"]
        # numba is the module it always was: its own loader, its files, no finder left behind.
        assert type(numba.__loader__).__name__ == type(numba.__spec__.loader).__name__ == "SourceFileLoader"
        assert importlib.resources.files("numba").joinpath("__init__.py").is_file()
        assert not any(type(f).__module__ == "tabflow.compat.numba_cuda" for f in sys.meta_path)
        try:
            numba.no_such_name
        except AttributeError as err:
            assert str(err) == "module 'numba' has no attribute 'no_such_name'", err
        print(available)
    """)
    # The same answer as merlin's own import gives, in an interpreter without tabflow.
    assert out == run_python("from numba import cuda; print(cuda.is_available())")


def test_numba_imported_before_tabflow_gets_the_attribute_too():
    out = run_python("""
        import numba
        import tabflow
        print(numba.cuda.__name__, callable(numba.cuda.is_available))
    """)
    assert out == "numba.cuda True"


@pytest.fixture
def fake_numba(tmp_path):
    """A ``numba`` package without ``cuda``, with a module ``__getattr__`` of its own."""
    package = tmp_path / "site" / "numba"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(
        "def __getattr__(name):\n"
        "    if name == 'lazy':\n"
        "        return 42\n"
        "    raise AttributeError(f'no {name}')\n"
    )
    return str(tmp_path / "site")


def test_a_numba_without_cuda_says_why_and_keeps_its_own_getattr(fake_numba):
    out = run_python("""
        import tabflow
        import numba
        assert numba.lazy == 42
        try:
            numba.cuda
        except AttributeError as err:
            print(err)
        try:
            numba.other
        except AttributeError as err:
            print(err)
    """, fake_numba)
    cuda_error, other_error = out.splitlines()
    assert cuda_error.startswith("module 'numba' has no attribute 'cuda': importing numba.cuda failed")
    assert "install numba-cuda" in cuda_error
    assert other_error == "no other"
