"""Sphinx configuration for the dpconvex documentation.

Build: ``pip install ".[docs]" && python -m sphinx -W --keep-going -b html docs docs/_build/html``.
"""

from __future__ import annotations

import re
import sys
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
# Build against the working tree's sources even when dpconvex is not installed.
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(DOCS))


import dpconvex  # noqa: E402

project = "dpconvex"
author = "dpconvex developers"
copyright = "dpconvex developers, Apache-2.0"  # noqa: A001
release = dpconvex.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    # many docstrings use Google-style "Args:" sections; numpydoc reads the rest
    "sphinx.ext.napoleon",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
templates_path = ["_templates"]
exclude_patterns = [
    "_build",
    "_templates",
    "Thumbs.db",
    ".DS_Store",
    "auto_examples/*.ipynb",
    "auto_examples/*.py",
    "auto_examples/*.zip",
    "auto_examples/*.md5",
    "auto_examples/*.codeobj.json",
    "reproduction/*.json",
    "reproduction/*.csv",
]
nitpicky = False
suppress_warnings = [
    # the reports number their sections from a level-2 heading; they read fine as they are
    "myst.header",
]

# -- MyST (the markdown reports and guides) ----------------------------------
myst_enable_extensions = ["dollarmath", "colon_fence", "deflist"]
myst_heading_anchors = 3

# -- autodoc / autosummary / numpydoc ------------------------------------------
autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {"members": True, "inherited-members": False, "show-inheritance": False}
autodoc_typehints = "none"
autodoc_member_order = "bysource"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_validation_checks: set[str] = set()
numpydoc_xref_param_type = False
napoleon_google_docstring = True
napoleon_numpy_docstring = False  # numpydoc handles numpy-style sections
napoleon_use_rtype = False

# -- sphinx-gallery ---------------------------------------------------------
warnings.filterwarnings("ignore", category=DeprecationWarning, module="absl")
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": str(DOCS / "auto_examples"),
    "filename_pattern": r"/plot_",
    "within_subsection_order": "FileNameSortKey",
    "download_all_examples": False,
    "remove_config_comments": True,
    "abort_on_example_error": True,
    "matplotlib_animations": False,
    "image_scrapers": ("matplotlib",),
    "capture_repr": (),
    "show_memory": False,
}

# -- HTML --------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"dpconvex {release}"
html_static_path = ["_static"]
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "navbar_align": "left",
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
# top-level pages have no section to navigate: no empty left sidebar
_TOP_PAGES = (
    "index", "quickstart", "choosing", "concepts", "cli", "references", "reports", "theorems",
    "architecture",
)
html_sidebars = {page: [] for page in _TOP_PAGES}
html_show_sourcelink = False
html_last_updated_fmt = ""


# -- docstrings: norms written |x| and ||x|| are plain text -----------------------
def _plain_bars(app, what, name, obj, options, lines):
    """Docstrings write norms as |x| and ||x||; keep them from reading as substitutions."""
    text = "\n".join(lines)
    new = _escape_bars(text)
    if new != text:
        lines[:] = new.split("\n")


_LITERAL = re.compile(r"(``.*?``|`[^`]*`)")


def _escape_bars(text: str) -> str:
    """Docstrings write norms as |x| and ||x||: plain text, not reStructuredText
    substitutions. Escape the bars outside inline literals and roles."""
    parts = _LITERAL.split(text)
    return "".join(p if i % 2 else p.replace("|", "\\|") for i, p in enumerate(parts))


def setup(app):
    app.connect("autodoc-process-docstring", _plain_bars)
    app.add_css_file("dpconvex.css")

