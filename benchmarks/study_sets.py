"""The classification sets of ../shared/data small enough for every configuration of issue 67's
study (``defaults_study.py``), which issue 73's panel (``defaults_panel.py``) runs too: their
list in a module of its own, which both import (the panel imported it from the study, and the
study the panel's loader: a circle)."""

SETS = ["glass", "new_thyroid", "wine", "crabs", "sonar", "ionosphere", "svmguide2", "breast_cancer", "australian",
        "pima", "vehicle", "vowel", "banknote", "waveform_21", "satimage"]
