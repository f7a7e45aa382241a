"""Mixed-type tables (issue 46, item 4): the encoding against scikit-learn's transformers fitted
directly, unseen categories, missing values, a column with no value, the model-file round trip,
and the command line."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.impute import SimpleImputer
from sklearn.preprocessing import OneHotEncoder

from alphagp import GPClassifier, serialization
from alphagp.data.tables import TableEncoding
from alphagp.estimators import model_file


@pytest.fixture(scope="module")
def penguins():
    """The palmerpenguins table: two text columns (one with missing values), numbers with missing values."""
    frame = pytest.importorskip("palmerpenguins").load_penguins()
    return frame.drop(columns=["species"]), frame["species"].to_numpy()


def mixed_frame(n: int, seed: int) -> tuple[pd.DataFrame, np.ndarray]:
    """Every kind of column: bool, pandas category, text with missing values, numbers with NaN, int."""
    rng = np.random.default_rng(seed)
    colour = rng.choice(["red", "green", "blue"], n)
    y = (colour == "red").astype(int) + (rng.normal(size=n) > 0.5)
    size = rng.normal(size=n) + y
    size[rng.random(n) < 0.1] = np.nan
    frame = pd.DataFrame({"flag": rng.random(n) < 0.3, "colour": pd.Categorical(colour),
                          "shape": pd.Series(rng.choice(["round", "square", None], n), dtype=object),
                          "size": size, "count": rng.integers(0, 5, n)})
    return frame, y


def test_the_encoding_is_scikit_learns_transformers_fitted_directly(penguins):
    X, _ = penguins
    text = ["island", "sex"]
    numbers = [c for c in X.columns if c not in text]
    direct = ColumnTransformer([
        ("text", OneHotEncoder(handle_unknown="ignore", sparse_output=False), text),
        ("numbers", SimpleImputer(strategy="mean", add_indicator=True), numbers)]).fit(X)
    encoding = TableEncoding.fit(X)
    ours = encoding.transform(X)
    names = encoding.feature_names()
    order = [names.index(n) for n in ["island=Biscoe", "island=Dream", "island=Torgersen", "sex=female", "sex=male",
                                      "sex=(missing)", *numbers,
                                      *[f"{c} (missing)" for c in numbers if X[c].isna().any()]]]
    np.testing.assert_allclose(ours[:, order], direct.transform(X.astype({c: object for c in text})), rtol=1e-15)


def test_every_column_kind_and_an_unseen_category(tmp_path):
    X, _ = mixed_frame(200, 0)
    encoding = TableEncoding.fit(X)
    assert encoding.feature_names() == ["flag=False", "flag=True", "colour=blue", "colour=green", "colour=red",
                                        "shape=round", "shape=square", "shape=(missing)", "size", "size (missing)",
                                        "count"]
    new = X.head(3).copy()
    new["colour"] = pd.Categorical(["purple", "red", "blue"])     # purple: not seen in fit
    new.loc[new.index[0], "count"] = np.nan                        # a missing number where fit saw none
    row = encoding.transform(new)
    assert row[0, 2:5].tolist() == [0.0, 0.0, 0.0]                 # all zeros, scikit-learn's handle_unknown="ignore"
    assert row[0, 10] == pytest.approx(X["count"].mean())          # imputed by the fit's mean
    same = TableEncoding.from_plain(json.loads(json.dumps(encoding.to_plain())))
    np.testing.assert_array_equal(same.transform(new), row)


@pytest.mark.parametrize("values", [[True, None, False], [1, None, 2], [1.5, None, 2.5]])
def test_booleans_and_integers_with_gaps_in_object_columns_are_categories(values, tmp_path):
    """Issue 60, item 1: an object column of booleans (or integers) with missing values is one-hot
    encoded with a missing category, as pandas' get_dummies(dummy_na=True) encodes it, and the
    fitted model round-trips through its file."""
    frame = pd.DataFrame({"x": np.linspace(-1, 1, 60), "b": pd.Series(values * 20, dtype=object)})
    encoding = TableEncoding.fit(frame)
    expected = pd.get_dummies(frame["b"], dummy_na=True).to_numpy(dtype=np.float64)
    np.testing.assert_array_equal(encoding.transform(frame)[:, 1:], expected)
    y = (np.arange(60) % 3 == 0).astype(int)
    clf = GPClassifier(method="sep", n_inducing=4, max_iter=3, categorical_features="from_dtype",
                       random_state=0).fit(frame, y)
    clf.save(tmp_path / "m.agp")
    np.testing.assert_array_equal(GPClassifier.load(tmp_path / "m.agp").predict_proba(frame), clf.predict_proba(frame))


def test_a_column_without_values_and_a_table_refused_without_the_option(penguins):
    X, y = penguins
    with pytest.raises(ValueError, match=r"column\(s\) \['empty'\] hold no value at all"):
        GPClassifier().fit(X.assign(empty=np.nan), y)
    with pytest.raises(ValueError, match=r"column 'island' has dtype .*categorical_features='from_dtype'"):
        GPClassifier(categorical_features=None).fit(X, y)
    with pytest.raises(ValueError, match="needs numeric features"):       # an array has no dtypes to read
        GPClassifier().fit(X.to_numpy(), y)


def test_the_default_encodes_a_table_as_it_comes_and_numbers_as_they_are(penguins):
    """Issue 79 item 1: the default reads a DataFrame's dtypes (as HistGradientBoosting's
    "from_dtype"); a column named ``self`` is a column like any other; a DataFrame of finite numbers
    fits exactly as its array does (no encoding)."""
    X, y = penguins
    X = X.rename(columns={"island": "self"})
    brief = dict(method="class_frequencies")
    default = GPClassifier(**brief).fit(X, y)
    assert default.table_encoding_.feature_names()[:3] == ["self=Biscoe", "self=Dream", "self=Torgersen"]
    given = GPClassifier(categorical_features="from_dtype", **brief).fit(X, y)
    np.testing.assert_array_equal(default.table_encoding_.transform(X), given.table_encoding_.transform(X))
    numbers = X[["bill_length_mm", "year"]].dropna()
    rows = numbers.index.to_numpy()
    frame_fit = GPClassifier(method="pep", n_inducing=5, max_iter=3, random_state=0).fit(numbers, y[rows])
    array_fit = GPClassifier(method="pep", n_inducing=5, max_iter=3, random_state=0).fit(numbers.to_numpy(), y[rows])
    assert not hasattr(frame_fit, "table_encoding_")
    np.testing.assert_allclose(frame_fit.predict_proba(numbers), array_fit.predict_proba(numbers.to_numpy()), atol=1e-12)


@pytest.mark.parametrize("method", ["auto", "pep"])
def test_a_fitted_table_model_round_trips_through_its_file(penguins, tmp_path, method):
    X, y = penguins
    brief = {} if method == "auto" else {"n_inducing": 10, "max_iter": 20}     # the default as it is
    clf = GPClassifier(method=method, categorical_features="from_dtype", random_state=0, **brief).fit(X, y)
    assert clf.n_features_in_ == 7 and list(clf.feature_names_in_) == list(X.columns)
    assert clf.evaluate(X, y)["error"] < 0.05
    clf.save(tmp_path / "m.safetensors")
    loaded = GPClassifier.load(tmp_path / "m.safetensors")
    np.testing.assert_array_equal(loaded.predict_proba(X), clf.predict_proba(X))
    assert loaded.table_encoding_ == clf.table_encoding_


def test_a_damaged_encoding_is_a_model_file_error(penguins, tmp_path):
    X, y = penguins
    clf = GPClassifier(method="pep", categorical_features="from_dtype", n_inducing=5, max_iter=5).fit(X, y)
    path = tmp_path / "m.safetensors"
    clf.save(path)
    renamed = serialization.read(path, "alphagp.GPClassifier")
    renamed["table_encoding"][0]["name"] = "archipelago"
    with pytest.raises(serialization.ModelFileError, match="table encoding's columns are not the model's input"):
        model_file.read(GPClassifier, path, renamed)
    truncated = serialization.read(path, "alphagp.GPClassifier")
    del truncated["table_encoding"][1]["mean"]
    with pytest.raises(serialization.ModelFileError, match="the table encoding is damaged"):
        model_file.read(GPClassifier, path, truncated)
    # issue 60, item 6: categories reversed (the one-hot columns would swap), duplicated or of mixed
    # types are not what fit learns, and are refused when the file is read
    column = next(j for j, c in enumerate(clf.table_encoding_.columns) if c["kind"] == "categorical")
    for edit in (lambda cats: cats.reverse(), lambda cats: cats.append(cats[0]), lambda cats: cats.insert(0, 1.5)):
        edited = serialization.read(path, "alphagp.GPClassifier")
        edit(edited["table_encoding"][column]["categories"])
        with pytest.raises(serialization.ModelFileError, match="are not the distinct, sorted values of one type"):
            model_file.read(GPClassifier, path, edited)


def test_the_command_line_fits_and_predicts_a_mixed_csv(penguins, tmp_path, capsys):
    from alphagp.cli import main
    X, y = penguins
    path, model = tmp_path / "penguins.csv", tmp_path / "m.safetensors"
    X.assign(species=y).to_csv(path, index=False)
    base = ["--quiet", "fit", "--data", str(path), "--target", "species", "--model", str(model), "--method", "pep",
            "--n-inducing", "5", "--max-iter", "10"]
    assert main([*base, "--categorical-features", "none"]) == 2
    assert "--categorical-features from_dtype" in capsys.readouterr().err
    assert main(base) == 0                                    # from_dtype, the default
    assert main(["evaluate", "--model", str(model), "--data", str(path), "--target", "species", "--json"]) == 0
    metrics = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    direct = GPClassifier(method="pep", n_inducing=5, max_iter=10, random_state=0,
                          categorical_features="from_dtype").fit(X, y)
    assert metrics["nll"] == pytest.approx(direct.evaluate(X, y)["nll"], rel=1e-9)


def test_dates_and_durations_are_numbers_and_unseen_values_are_said(tmp_path):
    """Issue 60, item 13: a datetime column is its days since 1970-01-01 and a timedelta column its
    days (one feature each, not one per distinct value; a missing one imputed and marked), and a
    column none of whose values was seen in fit warns, naming it."""
    import warnings
    frame = pd.DataFrame({"when": pd.date_range("2020-01-01", periods=150, freq="D"),
                          "took": pd.to_timedelta(np.arange(150), unit="h"), "flag": [True, False] * 75})
    frame.loc[3, "when"] = pd.NaT
    encoding = TableEncoding.fit(frame)
    assert encoding.feature_names() == ["when", "when (missing)", "took", "flag=False", "flag=True"]
    X = encoding.transform(frame)
    days = (pd.date_range("2020-01-01", periods=150, freq="D") - pd.Timestamp("1970-01-01")).days.to_numpy(float)
    np.testing.assert_allclose(np.delete(X[:, 0], 3), np.delete(days, 3))
    assert X[3, 0] == pytest.approx(np.delete(days, 3).mean()) and X[3, 1] == 1.0
    np.testing.assert_allclose(X[:, 2], np.arange(150) / 24)
    later = frame.head(4).assign(flag=["True", "False", "True", "False"])       # booleans at fit, text now
    with pytest.warns(UserWarning, match="column 'flag': none of its values was seen in fit"):
        encoding.transform(later)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        encoding.transform(frame.head(4))                                     # seen values: no warning
    with pytest.raises(ValueError, match="column 'when' held datetime values in fit"):
        encoding.transform(frame.assign(when=np.arange(150.0)))
    clf = GPClassifier(method="sep", n_inducing=4, max_iter=2, categorical_features="from_dtype",
                       random_state=0).fit(frame, np.arange(150) % 2)
    clf.save(tmp_path / "m.agp")
    np.testing.assert_array_equal(GPClassifier.load(tmp_path / "m.agp").predict_proba(frame), clf.predict_proba(frame))


def test_tables_with_mixed_columns_integer_names_or_no_rows_get_clear_messages():
    """Issue 60, item 12: an object column mixing numbers and text is named; integer column names
    work (fit keeps names as text); predicting on no rows says so."""
    r = np.random.default_rng(0)
    mixed = pd.DataFrame({"x": r.normal(size=40), "m": pd.Series([1, "a"] * 20, dtype=object)})
    with pytest.raises(ValueError, match=r"column 'm' mixes value types \['int', 'str'\]"):
        GPClassifier(method="sep", max_iter=2, categorical_features="from_dtype").fit(mixed, np.arange(40) % 2)
    numbered = pd.DataFrame({0: r.normal(size=40), 1: pd.Series(["a", "b"] * 20)})
    clf = GPClassifier(method="sep", n_inducing=4, max_iter=2, categorical_features="from_dtype",
                       random_state=0).fit(numbered, np.arange(40) % 2)
    assert clf.predict_proba(numbered).shape == (40, 2)
    with pytest.raises(ValueError, match="needs at least one row; X has none"):
        clf.predict(numbered.iloc[:0])


def test_dates_past_the_nanosecond_range_encode_as_their_days():
    """Issue 74: a date in the year 9000 (a datetime64[s] column; nanoseconds end in 2262) raised
    pandas' out-of-bounds error; its days since 1970 are 2,567,655 (365.2425-day years, the
    proleptic Gregorian calendar's mean, to a day), and NaT stays missing."""
    import datetime

    from alphagp.data.tables import _as_days
    dates = pd.Series(pd.to_datetime(["2020-01-01 00:00", "1970-01-02 12:00"])).astype("datetime64[s]")
    dates = pd.concat([dates, pd.Series([pd.Timestamp("9000-01-01").as_unit("s"), pd.NaT], dtype="datetime64[s]")],
                      ignore_index=True)
    days = _as_days(dates, "datetime")
    expected = [(datetime.date(2020, 1, 1) - datetime.date(1970, 1, 1)).days, 1.5,
                (datetime.date(9000, 1, 1) - datetime.date(1970, 1, 1)).days]
    np.testing.assert_allclose(days[:3], expected, rtol=0, atol=1e-9)
    assert np.isnan(days[3])
