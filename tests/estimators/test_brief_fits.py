"""Issue 68's guard: restructuring the estimators changes no fit. Every registered method's brief
fit (and both deep-GP estimators') predicts what the same fit predicted at the commit
``fixtures/brief_fits.json`` names (written by ``fixtures/make_brief_fits.py`` before the
restructuring). A change that is meant to move a fit rewrites the file at its own commit and says
why in its message."""

from __future__ import annotations

import importlib.util
import json
import warnings
from pathlib import Path

import numpy as np
import pytest

FIXTURES = Path(__file__).resolve().parent / "fixtures"
RECORDED = json.loads((FIXTURES / "brief_fits.json").read_text())
_spec = importlib.util.spec_from_file_location("make_brief_fits", FIXTURES / "make_brief_fits.py")
MAKER = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(MAKER)


def test_every_registered_method_is_guarded():
    from alphagp.methods import METHODS
    assert set(METHODS) <= set(RECORDED["fits"])


@pytest.mark.parametrize("name", sorted(RECORDED["fits"]))
def test_a_brief_fit_predicts_as_it_did_before_the_restructuring(name):
    X, y, X_new = MAKER.FIXTURES.rows()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                   # brief fits: too few iterations to converge
        now = MAKER.outputs(name, MAKER.brief_fit(name, X, y), X_new)
    np.testing.assert_allclose(now, np.array(RECORDED["fits"][name]), rtol=1e-10, atol=1e-13,
                               err_msg=f"{name}: the fit moved since commit {RECORDED['commit']}")
