"""The library's version, in a module that imports nothing (the package root, the command line's
``--version`` and the model files' header read it from here). Keep it equal to pyproject.toml's."""

__version__ = "0.1.0"
