"""Sphinx configuration of alphagp's documentation: the API reference from the docstrings
(autodoc + napoleon), pages in Markdown (MyST) and a gallery of examples executed at every build
(sphinx-gallery). Build with ``python -m sphinx -W -b html docs docs/_build/html``."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import alphagp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
os.environ.setdefault("MPLBACKEND", "Agg")

project = "alphagp"
author = "The alphagp developers"
copyright = "2026, The alphagp developers"
release = version = alphagp.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "sphinx_gallery.gen_gallery",
    "myst_parser",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "auto_examples/*.ipynb", "auto_examples/*.py", "auto_examples/*.zip",
                    "auto_examples/*.md5", "auto_examples/*.json", "sg_execution_times.rst"]
myst_heading_anchors = 3

autodoc_default_options = {"member-order": "bysource"}
autodoc_typehints = "description"
autodoc_class_signature = "separated"
napoleon_numpy_docstring = True
napoleon_google_docstring = True
napoleon_use_rtype = False
nitpicky = False

sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",          # plot_*.py run at every build; the others are shown
    "ignore_pattern": r"__init__\.py",
    "within_subsection_order": "FileNameSortKey",
    "download_all_examples": False,
    "remove_config_comments": True,
    "image_scrapers": ("matplotlib",),
    "matplotlib_animations": False,
    "abort_on_example_error": True,
    "capture_repr": (),
}

html_theme = "furo"
html_title = f"alphagp {release}"
html_static_path: list[str] = []


def write_method_reference(app) -> None:
    """``generated/methods.rst``: every registered method with its summary, its own parameters
    (``method_params``) and their defaults, and the docstring of the class that implements it,
    written from the registry at every build, so a new method is documented without an edit."""
    from alphagp.methods import METHODS, method_parameters

    lines = ["Methods and their parameters", "============================", "",
             "The names ``GPClassifier(method=...)`` takes, in the registry's order. Each method's own",
             "settings go in ``method_params`` (a dict); the estimator's parameters are in the",
             ":doc:`../api`. The class docstring below each method states the paper's equations it",
             "implements; its arguments before the method's own ones are built by the estimator.", ""]
    documented: set[type] = set()
    for name, spec in METHODS.items():
        lines += [f"``{name}``", "-" * (len(name) + 4), "", spec.summary[0].upper() + spec.summary[1:] + ".", ""]
        params = method_parameters(name)
        if params:
            lines += ["``method_params`` (defaults): " + ", ".join(f"``{k}={v!r}``" for k, v in params.items()), ""]
        else:
            lines += ["No ``method_params``.", ""]
        cls = spec.cls
        path = f"{cls.__module__}.{cls.__qualname__}"
        if cls in documented:
            lines += [f"Implemented by :class:`~{path}` (above).", ""]
            continue
        documented.add(cls)
        lines += [f".. autoclass:: {path}", "   :exclude-members: __init__, __new__", ""]
    target = Path(app.srcdir) / "generated" / "methods.rst"
    target.parent.mkdir(exist_ok=True)
    text = "\n".join(lines)
    if not target.exists() or target.read_text() != text:
        target.write_text(text)


def setup(app) -> None:
    app.connect("builder-inited", write_method_reference)
