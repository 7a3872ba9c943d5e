"""The documentation: an API page for every public name, a README that fits a screen, and
examples that run.

Every ``python`` block of the README and of the getting-started page runs here, in a fresh
interpreter in an empty directory; every command of their ``bash`` blocks is checked without
being run (a ``make`` target that exists, a ``tabflow`` command whose arguments parse, a pip
install of extras that pyproject.toml defines, a file that is there).
"""

from __future__ import annotations

import configparser
import importlib
import os
import pkgutil
import re
import shlex
import subprocess
import sys
import tomllib

import pytest

import tabflow

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, "docs")
API_DIR = os.path.join(DOCS, "api")
#: The pages whose examples are tested: what a newcomer reads first.
RUNNABLE_PAGES = ["README.md", os.path.join("docs", "getting-started.md")]
README_MAX_LINES = 150


def _read(relative: str) -> str:
    with open(os.path.join(ROOT, relative), encoding="utf-8") as handle:
        return handle.read()


def _blocks(relative: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", _read(relative), flags=re.MULTILINE | re.DOTALL)


# ----------------------------------------------------------------------------- API reference
def public_modules() -> list[str]:
    """Every module of the package whose dotted path has no private part."""
    names = ["tabflow"]
    for info in pkgutil.walk_packages(tabflow.__path__, "tabflow."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return names


def api_entries() -> list[str]:
    """The objects the API pages render (``::: dotted.path`` lines)."""
    entries = []
    for name in sorted(os.listdir(API_DIR)):
        if name.endswith(".md"):
            with open(os.path.join(API_DIR, name), encoding="utf-8") as handle:
                entries += re.findall(r"^::: (\S+)\s*$", handle.read(), flags=re.MULTILINE)
    return entries


def _documented() -> set[int]:
    """Identities of what the API pages show: each module entry with the names of its
    ``__all__`` (mkdocstrings renders those), and each object entry."""
    shown: set[int] = set()
    for entry in api_entries():
        try:
            obj = importlib.import_module(entry)
        except ImportError:
            module, _, attribute = entry.rpartition(".")
            obj = getattr(importlib.import_module(module), attribute)
        shown.add(id(obj))
        for name in getattr(obj, "__all__", []) if isinstance(obj, type(os)) else []:
            shown.add(id(getattr(obj, name)))
    return shown


def test_every_public_name_is_on_an_api_page():
    shown = _documented()
    missing = {}
    for module_name in public_modules():
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", []):
            if id(getattr(module, name)) not in shown:
                missing.setdefault(module_name, []).append(name)
    assert not missing, (
        f"public names on no page of docs/api/ (add a '::: module' line for their module): {missing}"
    )


def test_api_pages_are_in_the_navigation():
    nav = _read("mkdocs.yml")
    for name in os.listdir(API_DIR):
        if name.endswith(".md"):
            assert f"api/{name}" in nav, f"docs/api/{name} is not in mkdocs.yml's nav"


def test_api_entries_exist_once():
    entries = api_entries()
    assert len(entries) == len(set(entries)), sorted({e for e in entries if entries.count(e) > 1})
    assert "tabflow" in entries and "tabflow.ops" in entries


# ----------------------------------------------------------------------------- README
def test_readme_fits_and_leads_with_the_two_commands_and_an_example():
    readme = _read("README.md")
    lines = readme.splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; move detail into docs/"
    first_screen = "\n".join(lines[:40])
    assert "make demo" in first_screen and "make test" in first_screen
    example = _blocks("README.md", "python")[0]
    assert readme.index(example) < readme.index("\n## ")
    assert len(example.strip().splitlines()) <= 12


def test_readme_and_docs_do_not_claim_a_published_package():
    # Not on PyPI yet: an install command naming the distribution is only ever a promise.
    for relative in ["README.md", *(os.path.relpath(os.path.join(d, f), ROOT) for d, _, fs in os.walk(DOCS) for f in fs if f.endswith(".md"))]:
        text = _read(relative)
        assert "is published as" not in text, relative
        for paragraph in re.split(r"\n\s*\n", text):
            if re.search(r"pip install\s+['\"]?tabflow-etl\b", paragraph) and "tabflow demo:" not in paragraph:
                assert "published" in paragraph, (relative, paragraph)


def test_readme_links_resolve():
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", _read("README.md")):
        assert os.path.exists(os.path.join(ROOT, target)), f"README.md links to {target}, which does not exist"


def test_readme_history_lives_in_the_changelog():
    changelog = _read(os.path.join("docs", "changelog.md"))
    for figure in ("6.9 GB", "23.9–26.8 s", "135 s before the blocked lookups", "0.62–0.69 ms", "5.3M"):
        assert figure in changelog
        assert figure not in _read("README.md")


# ----------------------------------------------------------------------------- migration guide
#: Rows of the migration guide's imports table that describe behaviour, not a name to import
#: (by the start of their NVTabular cell).
BEHAVIOUR_ROWS = ("`node.graph`", "`Workflow.save/load`", "`schema.pbtxt`", "ops called with positional", "fitted statistics",
                  "serving a workflow", "`dataset.to_hugectr")


def _imports_table() -> list[tuple[str, str]]:
    """The rows of docs/migrating.md's imports table: (NVTabular cell, tabflow cell)."""
    section = _read(os.path.join("docs", "migrating.md")).split("\n## Imports\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| ---")]
    cells = [[cell.strip() for cell in re.split(r"(?<!\\)\|", row)[1:-1]] for row in rows[1:]]
    assert all(len(row) == 2 for row in cells), [row for row in cells if len(row) != 2]
    return [(left, right) for left, right in cells]


def _spans(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def _from_import_names(cell: str) -> list[str]:
    names = []
    for span in _spans(cell):
        found = re.fullmatch(r"from [\w.]+ import (.+)", span)
        if found:
            names += [name.strip() for name in found.group(1).split(",") if name.strip() != "..."]
    return names


def _dotted(span: str, packages: tuple[str, ...]) -> str | None:
    """``span`` as a dotted name under one of ``packages`` (``nvt.`` meaning ``tabflow.``)."""
    found = re.fullmatch(r"@?((?:%s)(?:\.\w+)*)" % "|".join(packages), span)
    return found.group(1) if found else None


def import_targets(left: str, right: str) -> list[tuple[str, str | None]]:
    """What a row of the imports table tells a script to import: ``(module, name)`` pairs
    (``name`` None for a module, or a dotted attribute path).

    The tabflow cell's ``import`` and ``from ... import`` statements (``...`` meaning the names
    the NVTabular cell imports) and dotted names under ``tabflow``/``nvt``; where it says
    "same" and names nothing, or "same paths under", also the NVTabular cell's names with
    ``nvtabular``/``nvt`` read as ``tabflow``.
    """
    targets = _targets(right, left)
    if "same" in right and (not targets or re.search(r"same (module )?paths under", right)):
        targets += _targets(re.sub(r"\bnvtabular\b", "tabflow", left), left)
    return targets


def _targets(cell: str, left: str) -> list[tuple[str, str | None]]:
    targets: list[tuple[str, str | None]] = []
    packages = ("tabflow", "nvt")
    for span in _spans(cell):
        if span.startswith("import "):
            targets.append((span.split()[1], None))
        elif span.startswith("from "):
            module, _, names = span[len("from "):].partition(" import ")
            listed = [name.strip() for name in names.split(",")]
            if "..." in listed:
                listed = [name for name in listed if name != "..."] + _from_import_names(left)
            targets += [(module, name) for name in listed]
        elif (dotted := _dotted(span, packages)) is not None:
            targets.append((re.sub(r"^nvt\b", "tabflow", dotted), ""))
    return targets


def _resolve(module: str, name: str | None) -> object:
    if name is None:
        return importlib.import_module(module)
    if name == "":  # a dotted path: the longest importable module, then attributes
        parts = module.split(".")
        for cut in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            for attribute in parts[cut:]:
                obj = getattr(obj, attribute)
            return obj
        raise ImportError(module)
    return getattr(importlib.import_module(module), name)


IMPORT_ROWS = _imports_table()


@pytest.mark.parametrize("left, right", IMPORT_ROWS, ids=[left[:60] for left, _ in IMPORT_ROWS])
def test_every_target_of_the_migration_imports_table_imports(left, right):
    targets = import_targets(left, right)
    assert targets or left.startswith(BEHAVIOUR_ROWS), (
        f"no import in the tabflow cell of the row {left!r}: write it as `from tabflow... import ...`"
    )
    if any(module.startswith(("tabflow.loader.torch", "tabflow.framework_utils")) for module, _ in targets):
        pytest.importorskip("torch")
    failed = []
    for module, name in targets:
        try:
            _resolve(module, name)
        except (ImportError, AttributeError) as err:
            failed.append(f"{module} {name or ''}: {err}")
    assert not failed, f"row {left!r} names what does not import: {failed}"


def test_the_imports_table_reader_finds_each_form():
    assert import_targets("`from merlin.dag.ops import UDF` / `from merlin.dag.ops.subgraph import Subgraph`",
                          "`from tabflow.graph.ops import ...`") == [("tabflow.graph.ops", "UDF"), ("tabflow.graph.ops", "Subgraph")]
    assert import_targets("`nvt.ColumnGroup`", "same names") == [("tabflow.ColumnGroup", "")]
    assert import_targets("`nvtabular.ops.fill.FillMissing`", "same paths under `tabflow.ops`") == [
        ("tabflow.ops", ""), ("tabflow.ops.fill.FillMissing", "")
    ]
    assert import_targets("x", "`import tabflow.dtypes as md` (`md.int32`)") == [("tabflow.dtypes", None)]
    assert import_targets("x", "`tabflow.ops.Subgraph`, same methods") == [("tabflow.ops.Subgraph", "")]
    with pytest.raises(AttributeError):
        _resolve("tabflow.ops.Subgraph", "")
    assert len(IMPORT_ROWS) > 30


# ----------------------------------------------------------------------------- examples
PYTHON_BLOCKS = [(page, k) for page in RUNNABLE_PAGES for k in range(len(_blocks(page, "python")))]


@pytest.mark.slow
@pytest.mark.parametrize("page, index", PYTHON_BLOCKS, ids=[f"{p}-{k}" for p, k in PYTHON_BLOCKS])
def test_python_block_runs(page, index, tmp_path):
    code = _blocks(page, "python")[index]
    if "tabflow.loader.torch" in code or re.search(r"^\s*import torch", code, flags=re.MULTILINE):
        pytest.importorskip("torch")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{page}, python block {index}:\n{code}\n{done.stderr}"


def test_runnable_pages_have_examples():
    assert [page for page, _ in PYTHON_BLOCKS] == RUNNABLE_PAGES


def _makefile_targets() -> set[str]:
    return set(re.findall(r"^([A-Za-z][\w-]*):", _read("Makefile"), flags=re.MULTILINE))


def _extras() -> set[str]:
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as handle:
        return set(tomllib.load(handle)["project"]["optional-dependencies"])


def _check_install_target(target: str) -> None:
    """A pip install argument: the checkout or a wheel built from it, with defined extras,
    or a requirement of another package."""
    match = re.fullmatch(r"(\.|dist/tabflow_etl-([\w.]+)-py3-none-any\.whl)(?:\[([\w,-]+)\])?", target)
    if match is None:
        from packaging.requirements import Requirement

        requirement = Requirement(target)
        assert requirement.name not in ("tabflow", "tabflow-etl"), f"{target}: not on PyPI; install from a checkout"
        return
    if match.group(2) is not None:
        assert match.group(2) == tabflow.__version__, f"{target}: make dist builds tabflow_etl-{tabflow.__version__}"
    unknown = set((match.group(3) or "").split(",")) - {""} - _extras()
    assert not unknown, f"{target}: pyproject.toml has no extra {sorted(unknown)}"


def check_command(words: list[str]) -> None:
    """Assert that a shell command of the docs would work, without running it."""
    program, args = words[0], words[1:]
    if program == "make":
        targets = [a for a in args if "=" not in a and not a.startswith("-")]
        assert targets and set(targets) <= _makefile_targets(), f"make {targets}: no such target"
    elif program in (".", "source"):
        assert args and args[0].endswith("/bin/activate")
    elif program in ("python", "python3") and args[:2] == ["-m", "venv"]:
        assert len(args) == 3
    elif program in ("python", "python3") and args[:1] == ["-c"]:
        done = subprocess.run([sys.executable, "-c", args[1]], cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
    elif program == "pip" and args[:1] == ["install"]:
        options_with_values = {"--index-url", "--extra-index-url", "-c", "-r", "--find-links"}
        rest = args[1:]
        while rest:
            word = rest.pop(0)
            if word in options_with_values:
                rest.pop(0)
            elif not word.startswith("-"):
                _check_install_target(word)
    elif program == "tabflow":
        from tabflow.cli import build_parser

        if "--help" in args:  # safe to run
            done = subprocess.run([sys.executable, "-m", "tabflow", *args], cwd=ROOT, capture_output=True, text=True, timeout=300)
            assert done.returncode == 0 and done.stdout.startswith("usage: tabflow"), done.stderr
        else:
            build_parser().parse_args(args)  # a usage error exits here
    elif program == "jupyter":
        assert args[0] == "lab" and os.path.isdir(os.path.join(ROOT, args[1]))
        with open(os.path.join(ROOT, "pyproject.toml"), "rb") as handle:
            notebook = tomllib.load(handle)["project"]["optional-dependencies"]["notebook"]
        assert any(r.startswith("jupyterlab") for r in notebook), "the notebook extra must install JupyterLab"
    else:
        raise AssertionError(f"no check for {shlex.join(words)!r}: teach tests/test_docs.py what makes it safe")


def _commands(block: str) -> list[list[str]]:
    commands = []
    for line in block.splitlines():
        words = shlex.split(line, comments=True)
        while words:
            cut = words.index("&&") if "&&" in words else len(words)
            commands.append(words[:cut])
            words = words[cut + 1:]
    return commands


BASH_COMMANDS = [(page, words) for page in RUNNABLE_PAGES for block in _blocks(page, "bash") for words in _commands(block)]


@pytest.mark.parametrize("page, words", BASH_COMMANDS, ids=[f"{p}: {' '.join(w)}" for p, w in BASH_COMMANDS])
def test_bash_command_would_work(page, words):
    check_command(words)


def test_command_checks_refuse_what_would_fail():
    for words in (["make", "no-such-target"], ["pip", "install", "tabflow-etl[fastai]"], ["pip", "install", ".[nope]"],
                  ["pip", "install", "dist/tabflow_etl-9.9.9-py3-none-any.whl"], ["tabflow", "nosuch", "--help"],
                  ["rm", "-rf", "/"]):
        with pytest.raises(AssertionError):
            check_command(words)
    with pytest.raises(SystemExit):
        check_command(["tabflow", "demo", "--rows", "0"])


# ----------------------------------------------------------------------------- setup.cfg
def test_setup_cfg_configures_tools_and_holds_no_package_metadata():
    config = configparser.ConfigParser()
    assert config.read(os.path.join(ROOT, "setup.cfg"))
    # pyproject.toml is the one source of the metadata: setuptools would merge these sections.
    assert not {"metadata", "options"} & set(config.sections())
    assert not [s for s in config.sections() if s.startswith("options.")]
    assert config.sections()


def test_no_misspellings_with_the_settings_of_setup_cfg():
    pytest.importorskip("codespell_lib")
    paths = ["README.md", "ARCHITECTURE.md", "docs", "tabflow", "tests", "benchmarks", "scripts", "notebooks", "Makefile", "mkdocs.yml"]
    done = subprocess.run([sys.executable, "-m", "codespell_lib", *paths], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
