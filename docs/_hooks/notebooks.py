"""An MkDocs hook: files kept elsewhere in the repository become pages of the site.

The notebooks stay in ``notebooks/`` (tests, the sdist and Jupyter users open them there) and
the architecture map stays ``ARCHITECTURE.md`` at the top; this hook adds them to the site's
files (``notebooks/<name>.ipynb``, ``architecture.md``) before mkdocs-jupyter converts the
notebooks, so the build executes and renders them with their outputs.
"""

from __future__ import annotations

import os

from mkdocs.plugins import event_priority
from mkdocs.structure.files import File, Files

# The examples run on this many synthetic rows, as in tests/test_notebooks.py, unless the
# environment asks for more.
ROWS = "20000"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NOTEBOOK_DIR = os.path.join(ROOT, "notebooks")


@event_priority(100)  # before mkdocs-jupyter's on_files, which picks the notebooks up
def on_files(files: Files, config) -> Files:
    os.environ.setdefault("TABFLOW_NOTEBOOK_ROWS", ROWS)  # the kernels inherit it
    for name in sorted(os.listdir(NOTEBOOK_DIR)):
        if name.endswith(".ipynb"):
            # A File read from the repository root (mkdocs-jupyter needs a file with a source
            # directory, which generated files lack): the page is notebooks/<name>/.
            files.append(File(f"notebooks/{name}", ROOT, config["site_dir"], config["use_directory_urls"]))
    files.append(File.generated(config, "architecture.md", abs_src_path=os.path.join(ROOT, "ARCHITECTURE.md")))
    return files
