# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
EXTRAS ?= fastai,dev
# PyTorch is installed first, as a torch/torchvision pair that needs nothing newer. fastai asks
# for any torchvision, and left alone pip takes the newest one, which pins the newest torch (a
# CUDA build with several GB of CUDA libraries). torchvision 0.28.0 requires torch 2.13.0
# exactly. Where pip finds a CPU-only build of torch 2.13.0 it takes that one: a local wheel
# directory, or the PyTorch CPU index given with
#   make venv TORCH_PIP_ARGS="--index-url https://download.pytorch.org/whl/cpu"
TORCH_PINS ?= torch==2.13.0 torchvision==0.28.0
TORCH_PIP_ARGS ?=
DEMO_ARGS ?=
PYTEST_ARGS ?=
# The oldest versions the metadata admits: an environment with every declared floor pinned
# exactly (.ci/min_constraints.py) runs the tests (not the doctests, whose printed reprs follow
# the newest pandas), less those listed with their reason in .ci/min-deselect.txt. PyTorch is
# the exception in `make test-min`: MIN_TORCH_PINS puts the CPU pair of `make test` in place of
# torch's floor, with fastai 2.8.8 (the first fastai that accepts that torch and runs beside
# today's fastcore; 2.8.7 calls a fastcore API since removed), because PyPI's only builds of
# torch 2.8 for Linux x86-64 bring CUDA's libraries, 7.5 GB installed, more disk than CI can
# count on. `make test-min-torch` pins torch's and fastai's floors too, in a venv of its own.
MIN_VENV ?= .venv-min
MIN_TORCH_PINS ?= $(TORCH_PINS) fastai==2.8.8
MIN_EXTRAS ?= fastai
MIN_TEST_TOOLS ?= pytest pytest-timeout xxhash
MIN_TESTS ?= tests
MIN_DESELECT := $(shell grep -v '^\#' .ci/min-deselect.txt)

.PHONY: venv demo test test-strict test-min test-min-torch docs lint typecheck bench dist clean

# The pins are repeated in the second install so that no extra can move torch off the pair.
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q $(TORCH_PIP_ARGS) $(TORCH_PINS)
	$(PIP) install -q -e ".[$(EXTRAS)]" $(TORCH_PINS)
	touch $@

venv: $(VENV)/.installed

demo: venv
	$(VENV)/bin/tabflow demo $(DEMO_ARGS)

test: venv
	$(PY) -m pytest -q $(PYTEST_ARGS) tabflow tests

# The whole suite again with the strict engine on (pandas engine arrays that follow CuPy's
# rules), so that an op mixing host and device arrays fails here as it would on a GPU. The
# notebooks run in kernels of their own, which the switch does not reach: left out.
test-strict: venv
	$(PY) -m pytest -q $(PYTEST_ARGS) --strict-engine --deselect tests/test_notebooks.py tests

# The documentation site, built with --strict: a broken link, a page left out of the navigation or
# a docstring the API reference cannot render fails. The build imports tabflow and runs the
# notebooks (on small data), so the docs tools join the environment `make test` sets up.
$(VENV)/.docs-installed: $(VENV)/.installed
	$(PIP) install -q -e ".[$(EXTRAS),docs]" $(TORCH_PINS)
	touch $@

docs: $(VENV)/.docs-installed
	$(VENV)/bin/mkdocs build --strict

# Lint rules and the type checker's settings are in pyproject.toml ([tool.ruff], [tool.mypy]).
lint: venv
	$(VENV)/bin/ruff check tabflow tests benchmarks scripts conftest.py

typecheck: venv
	$(PY) -m mypy

$(MIN_VENV)/.installed: pyproject.toml .ci/min_constraints.py
	rm -rf $(MIN_VENV)
	$(PYTHON) -m venv $(MIN_VENV)
	$(MIN_VENV)/bin/python -m pip install -q --upgrade pip
	$(MIN_VENV)/bin/python .ci/min_constraints.py $(MIN_EXTRAS) dev $(MIN_TORCH_PINS) > $(MIN_VENV)/constraints.txt
	$(MIN_VENV)/bin/python -m pip install -q --no-cache-dir -c $(MIN_VENV)/constraints.txt -e ".[$(MIN_EXTRAS)]" $(MIN_TEST_TOOLS)
	touch $@

test-min: $(MIN_VENV)/.installed
	$(MIN_VENV)/bin/python -m pip list --format=freeze | grep -iE '^(numpy|pandas|pyarrow|dask|distributed|numba|scipy|pyyaml|tqdm|torch|torchvision|fastai|scikit-learn|matplotlib|pytest|pytest-timeout|xxhash)=='
	$(MIN_VENV)/bin/python -m pytest -q -p no:cacheprovider $(PYTEST_ARGS) $(foreach test,$(MIN_DESELECT),--deselect '$(test)') $(MIN_TESTS)

# The floors of torch and fastai as well (a CUDA build of torch 2.8 from PyPI: about 8 GB of disk).
test-min-torch:
	$(MAKE) test-min MIN_VENV=.venv-min-torch MIN_TORCH_PINS=

bench: venv
	$(PY) benchmarks/etl.py
	$(PY) benchmarks/loader.py

dist: venv
	rm -rf dist
	$(PY) -m build --outdir dist .

clean:
	rm -rf $(VENV) $(MIN_VENV) .venv-min-torch demo_output dist site
