import json

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import dump_svmlight_file

from alphagp.cli import _make_estimator, build_parser, main
from alphagp.data import load_bundled

from conftest import REPO

ARGS = ["--n-inducing", "8", "--max-iter", "10"]


@pytest.fixture
def csv_file(tmp_path):
    X, y = load_bundled("new_thyroid")
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])])
    frame["label"] = np.array(["a", "b", "c"])[y - 1]
    path = tmp_path / "data.csv"
    frame.to_csv(path, index=False)
    return path


def test_fit_predict_evaluate_on_csv(csv_file, tmp_path, capsys):
    model = tmp_path / "m.safetensors"
    assert main(["--quiet", "fit", "--data", str(csv_file), "--target", "label", "--model", str(model), *ARGS]) == 0
    out = tmp_path / "pred.csv"
    assert main(["predict", "--model", str(model), "--data", str(csv_file), "--target", "label",
                 "--output", str(out)]) == 0
    pred = pd.read_csv(out)
    assert list(pred.columns) == ["prediction", "p_a", "p_b", "p_c"]
    assert np.allclose(pred[["p_a", "p_b", "p_c"]].sum(axis=1), 1.0, atol=1e-5)
    capsys.readouterr()
    plot = tmp_path / "reliability.png"
    assert main(["evaluate", "--model", str(model), "--data", str(csv_file), "--target", "label", "--json",
                 "--plot", str(plot)]) == 0
    metrics = json.loads(capsys.readouterr().out)
    assert metrics["error"] < 0.15 and set(metrics) == {"error", "nll", "ece", "brier"}
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_fit_on_libsvm_numbered_from_one_or_from_zero(tmp_path, capsys):
    X, y = load_bundled("new_thyroid")
    one, zero = tmp_path / "one.libsvm", tmp_path / "zero.libsvm"
    dump_svmlight_file(X, y, str(one), zero_based=False)
    dump_svmlight_file(X, y, str(zero))                          # scikit-learn's default: from 0
    for path, flag in ((one, []), (zero, ["--zero-based"])):
        assert main(["--quiet", "fit", "--data", str(path), "--model", str(tmp_path / "m.safetensors"),
                     "--method", "sep", *ARGS, *flag]) == 0
    capsys.readouterr()
    assert main(["--quiet", "fit", "--data", str(zero), "--model", str(tmp_path / "m.safetensors"), *ARGS]) == 2
    assert "feature index 0" in capsys.readouterr().err        # not silently shifted by one column


def test_cli_reports_bad_input_without_a_traceback(csv_file, tmp_path, capsys):
    code = main(["--quiet", "fit", "--data", str(csv_file), "--target", "missing",
                 "--model", str(tmp_path / "m.safetensors"), *ARGS])
    assert code == 2
    assert "target column 'missing'" in capsys.readouterr().err


def test_demo_prints_metrics(capsys):
    assert main(["--quiet", "demo", "--max-iter", "5"]) == 0
    out = capsys.readouterr().out
    for key in ("test error", "test nll", "test ece", "test brier", "train time"):
        assert key in out
    assert "fitted: GPClassifier(method=" in out and "n_inducing=" in out   # what "auto" chose
    assert "held-out NLL cross-validated:" in out                            # 761 rows: k-fold's scores


def test_demo_honours_n_inducing(capsys):
    assert main(["--quiet", "demo", "--max-iter", "2", "--n-inducing", "7"]) == 0
    assert "n_inducing=7," in capsys.readouterr().out


def test_predict_on_an_unlabelled_file(csv_file, tmp_path):
    model = tmp_path / "m.safetensors"
    assert main(["--quiet", "fit", "--data", str(csv_file), "--target", "label", "--model", str(model), *ARGS]) == 0
    unlabelled = tmp_path / "x.csv"
    pd.read_csv(csv_file).drop(columns="label").to_csv(unlabelled, index=False)
    out = tmp_path / "p.csv"
    assert main(["predict", "--model", str(model), "--data", str(unlabelled), "--output", str(out)]) == 0
    assert len(pd.read_csv(out)) == 215


def test_global_options_work_before_and_after_the_subcommand(csv_file, tmp_path, capsys):
    model = tmp_path / "m.safetensors"
    assert main(["fit", "--data", str(csv_file), "--target", "label", "--model", str(model), *ARGS,
                 "--threads", "1", "--quiet"]) == 0
    assert capsys.readouterr().err == ""                                   # --quiet after the subcommand
    assert main(["--n-jobs", "1", "evaluate", "--model", str(model), "--data", str(csv_file),
                 "--target", "label", "--json"]) == 0
    args = build_parser().parse_args(["--threads", "2", "demo", "--quiet"])
    assert args.n_jobs == 2 and args.quiet                                 # not reset by the subcommand


def test_every_estimator_parameter_reaches_the_classifier():
    args = build_parser().parse_args([
        "fit", "--data", "x.csv", "--model", "m", "--method", "sep", "--alpha", "0.5", "--n-inducing", "7",
        "--shared-hyperparameters", "--inducing-init", "kmeans++", "--fixed-hyperparameters", "--fixed-inducing",
        "--no-standardize", "--dtype", "float32", "--batch-size", "30", "--max-iter", "3", "--damping", "0.7",
        "--learning-rate", "0.02", "--learning-rate-decay", "0.9", "--tol", "1e-4", "--n-iter-no-change", "4",
        "--checkpoint", "c.ckpt", "--seed", "5", "--n-jobs", "2"])
    params = _make_estimator(args).get_params()
    assert params == {**params, "method": "sep", "alpha": 0.5, "n_inducing": 7, "shared_hyperparameters": True,
                      "inducing_init": "kmeans++", "optimize_hyperparameters": False, "optimize_inducing": False,
                      "standardize": False, "dtype": "float32", "batch_size": 30, "max_iter": 3, "damping": 0.7,
                      "learning_rate": 0.02, "learning_rate_decay": 0.9, "tol": 1e-4, "n_iter_no_change": 4,
                      "checkpoint": "c.ckpt", "random_state": 5, "n_jobs": 2}


def test_fit_help_shows_defaults_and_help_text(capsys):
    with pytest.raises(SystemExit):
        main(["fit", "--help"])
    out = " ".join(capsys.readouterr().out.split())            # the help wraps lines with the terminal's width
    assert "(default: 250; with --layers: 200)" in out and "(default: auto;" in out
    assert "training file" in out and "initial learning rate" in out


def test_a_model_file_that_is_not_one_is_reported_without_a_traceback(csv_file, tmp_path, capsys):
    bogus = tmp_path / "m.safetensors"
    bogus.write_bytes(b"\x80\x04not a model")
    assert main(["evaluate", "--model", str(bogus), "--data", str(csv_file), "--target", "label"]) == 2
    assert "not an alphagp" in capsys.readouterr().err


def test_methods_lists_every_registered_method(capsys):
    from alphagp.methods import METHODS
    assert main(["methods"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines if not line.startswith(" ")] == list(METHODS)
    assert "method_params: n_samples=1000, burn_in=1000, thin=5, seed=0" in "\n".join(lines)


# ---------------------------------------------------------------------- columns matched by name
def _fit_csv(csv_file, tmp_path):
    model = tmp_path / "m.safetensors"
    assert main(["--quiet", "fit", "--data", str(csv_file), "--target", "label", "--model", str(model), *ARGS]) == 0
    return model


def _evaluate(model, path, capsys):
    capsys.readouterr()
    code = main(["evaluate", "--model", str(model), "--data", str(path), "--target", "label", "--json"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else None), err


def test_evaluate_realigns_reordered_columns_and_names_missing_or_unknown_ones(csv_file, tmp_path, capsys):
    model = _fit_csv(csv_file, tmp_path)
    frame = pd.read_csv(csv_file)
    _, same, _ = _evaluate(model, csv_file, capsys)
    reordered = tmp_path / "reordered.csv"
    frame[["label", *reversed([c for c in frame.columns if c != "label"])]].to_csv(reordered, index=False)
    _, metrics, _ = _evaluate(model, reordered, capsys)
    assert metrics == same                                         # realigned, not used in file order
    renamed = tmp_path / "renamed.csv"
    frame.rename(columns={"f2": "g2"}).to_csv(renamed, index=False)
    code, _, err = _evaluate(model, renamed, capsys)
    assert code == 2 and "lacks the column(s) ['f2']" in err and len(err.strip().splitlines()) == 1
    extra = tmp_path / "extra.csv"
    frame.assign(f9=1.0).to_csv(extra, index=False)
    code, _, err = _evaluate(model, extra, capsys)
    assert code == 2 and "['f9'] that the model was not fitted on" in err


def test_a_pandas_index_column_is_dropped_with_a_warning_not_used_as_a_feature(csv_file, tmp_path, capsys):
    indexed = tmp_path / "indexed.csv"
    pd.read_csv(csv_file).to_csv(indexed)                          # pandas' default: index=True
    model = tmp_path / "m.safetensors"
    assert main(["fit", "--data", str(indexed), "--target", "label", "--model", str(model), *ARGS]) == 0
    assert "dropped the unnamed first column" in capsys.readouterr().err
    from alphagp import GPClassifier
    assert list(GPClassifier.load(model).feature_names_in_) == [f"f{j}" for j in range(5)]
    _, with_index, _ = _evaluate(model, indexed, capsys)
    _, without, _ = _evaluate(model, csv_file, capsys)
    assert with_index == without


# ---------------------------------------------------------------------- no value replaced
@pytest.mark.parametrize("argv, message", [
    (["--n-inducing", "0"], "--n-inducing: must be a positive integer, got 0"),
    (["--layers", "0"], "--layers: must be a positive integer, got 0"),
    (["--layers", "2", "--learning-rate", "0"], "--learning-rate: must be positive, got 0"),
    (["--layers", "2", "--batch-size", "0"], "--batch-size: must be a positive integer, got 0"),
    (["--alpha", "1.5"], "--alpha: must be in (0, 1], got 1.5"),
    (["--method-params", "[1]"], "--method-params takes a JSON object; or none; got '[1]'"),
    (["--cv", "1"], "--cv takes an int in the range [2, inf); got '1'"),
])
def test_out_of_range_flags_are_refused_not_replaced(csv_file, tmp_path, capsys, argv, message):
    with pytest.raises(SystemExit) as stop:
        main(["fit", "--data", str(csv_file), "--target", "label", "--model", str(tmp_path / "m"), *argv])
    assert stop.value.code == 2 and message in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["--layers", "2", "--method", "sep"], "--method does not apply to a deep GP"),
    (["--layers", "2", "--damping", "0.5", "--no-standardize"], "--damping, --no-standardize do not apply"),
    (["--hidden", "3"], "--hidden applies only to a deep GP; add --layers"),
])
def test_flags_that_do_not_apply_are_errors(csv_file, tmp_path, capsys, argv, message):
    assert main(["--quiet", "fit", "--data", str(csv_file), "--target", "label", "--model", str(tmp_path / "m"),
                 *argv]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "m").exists()


def test_flags_not_given_leave_the_estimators_defaults():
    from alphagp import DeepGPClassifier, DeepGPRegressor, GPClassifier
    base = ["fit", "--data", "x.csv", "--model", "m"]
    chosen = {"n_jobs", "verbose", "random_state"}
    for argv, cls in (([], GPClassifier), (["--layers", "3"], DeepGPClassifier), (["--regression"], DeepGPRegressor)):
        params = _make_estimator(build_parser().parse_args(base + argv)).get_params()
        defaults = cls().get_params()
        assert type(_make_estimator(build_parser().parse_args(base + argv))) is cls
        changed = {k for k in params if params[k] != defaults[k]} - chosen
        assert changed == ({"n_layers"} if argv[:1] == ["--layers"] else set())


def test_demo_has_no_regression_flag(capsys):
    with pytest.raises(SystemExit):
        main(["demo", "--regression"])
    assert "unrecognized arguments: --regression" in capsys.readouterr().err


# ---------------------------------------------------------------------- paths checked before the work
def test_an_unwritable_model_path_is_reported_before_training(csv_file, tmp_path, capsys, monkeypatch):
    from alphagp import GPClassifier

    def no_fit(*args, **kwargs):
        raise AssertionError("training started")
    monkeypatch.setattr(GPClassifier, "fit", no_fit)
    for model, message in ((tmp_path / "absent" / "m.safetensors", "the folder"), (tmp_path, "is a folder")):
        assert main(["--quiet", "fit", "--data", str(csv_file), "--target", "label", "--model", str(model)]) == 2
        assert message in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.csv"]          # no stray temporary file


def test_bad_data_paths_and_files_get_one_line_errors(csv_file, tmp_path, capsys):
    import gzip
    import os
    model = _fit_csv(csv_file, tmp_path)
    raw = csv_file.read_bytes()
    (tmp_path / "plain.csv.gz").write_bytes(raw)                            # not gzip at all
    (tmp_path / "cut.csv.gz").write_bytes(gzip.compress(raw)[:200])         # truncated
    (tmp_path / "header.csv").write_text("f0,f1,f2,f3,f4,label\n")
    os.mkfifo(tmp_path / "pipe.csv")
    (tmp_path / "folder.csv").mkdir()
    cases = {"plain.csv.gz": "not a readable gzip file", "cut.csv.gz": "not a readable gzip file",
             "header.csv": "no data rows", "pipe.csv": "not a regular file", "folder.csv": "is a folder",
             "absent.csv": "no such file"}
    for name, message in cases.items():
        capsys.readouterr()
        assert main(["evaluate", "--model", str(model), "--data", str(tmp_path / name), "--target", "label"]) == 2
        err = capsys.readouterr().err
        assert message in err and err.startswith("alphagp evaluate: error:") and "Traceback" not in err, name
    assert main(["predict", "--model", str(model), "--data", str(csv_file), "--target", "label",
                 "--output", str(tmp_path)]) == 2
    assert "is a folder" in capsys.readouterr().err


def test_plot_without_matplotlib_is_a_one_line_error(csv_file, tmp_path, capsys, monkeypatch):
    import sys
    model = _fit_csv(csv_file, tmp_path)
    monkeypatch.setitem(sys.modules, "matplotlib", None)                   # import matplotlib fails
    assert main(["evaluate", "--model", str(model), "--data", str(csv_file), "--target", "label",
                 "--plot", str(tmp_path / "r.png")]) == 2
    assert "--plot needs matplotlib" in capsys.readouterr().err


def test_libsvm_test_file_without_its_last_features_and_bad_indices(tmp_path, capsys):
    X, y = load_bundled("new_thyroid")
    train, test = tmp_path / "train.libsvm", tmp_path / "test.libsvm"
    X = np.column_stack([X, np.ones(len(X))])
    dump_svmlight_file(X, y, str(train), zero_based=False)
    dump_svmlight_file(X[:30, :-1], y[:30], str(test), zero_based=False)   # its last feature is 0 in every row
    model = tmp_path / "m.safetensors"
    assert main(["--quiet", "fit", "--data", str(train), "--model", str(model), *ARGS]) == 0
    capsys.readouterr()
    assert main(["evaluate", "--model", str(model), "--data", str(test), "--json"]) == 0
    assert "error" in json.loads(capsys.readouterr().out)
    (tmp_path / "far.libsvm").write_text("1 1:0.5 1000000000:1.0\n2 2:1.0\n")
    assert main(["--quiet", "fit", "--data", str(tmp_path / "far.libsvm"), "--model", str(model)]) == 2
    assert "largest feature index is 1000000000" in capsys.readouterr().err
    assert main(["evaluate", "--model", str(model), "--data", str(tmp_path / "far.libsvm")]) == 2
    assert "beyond the model's 6 features" in capsys.readouterr().err
    zero = tmp_path / "zero.libsvm"
    dump_svmlight_file(X[:30], y[:30], str(zero))                          # numbered from 0
    assert main(["evaluate", "--model", str(model), "--data", str(zero), "--zero-based"]) == 2
    assert "lacks the column(s) ['6']" in capsys.readouterr().err            # fitted numbered from 1


# ---------------------------------------------------------------------- the command itself
def test_version_module_entry_and_plain_help(capsys):
    import subprocess
    import sys

    from alphagp import __version__
    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out.strip() == f"alphagp {__version__}"
    done = subprocess.run([sys.executable, "-m", "alphagp", "--help"], capture_output=True, text=True, check=True)
    assert "usage: alphagp" in done.stdout and "``" not in done.stdout


def test_version_is_the_packages_and_its_module_imports_nothing():
    """The version (alphagp/version.py, read by the package root, --version and the model files'
    header) equals pyproject.toml's, and its module is a leaf: it imports nothing."""
    import ast
    import re
    from pathlib import Path

    import alphagp.version
    root = Path(__file__).resolve().parents[1]
    assert re.search(r'^version = "([^"]+)"', (root / "pyproject.toml").read_text(), re.MULTILINE)[1] == alphagp.version.__version__
    tree = ast.parse(Path(alphagp.version.__file__).read_text())
    assert not [node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))]


def test_the_readme_method_table_is_the_registrys(capsys):
    """One source: the method tables of the README and of "Which method when" are `alphagp methods
    --markdown`, and the estimator's docstring lists every registered method."""

    from alphagp import GPClassifier
    from alphagp.methods import METHODS
    assert main(["methods", "--markdown"]) == 0
    table = capsys.readouterr().out.strip()
    for page in (REPO / "README.md", REPO / "docs" / "which_method.md"):
        text = page.read_text()
        start = text.index("| method | what it is |")
        end = text.index("<!-- end of the registry's table -->")
        assert text[start:end].strip() == table, f"{page.name}'s method table differs: paste `alphagp methods --markdown`"
    assert all(f"``{name}``: {spec.summary}" in " ".join(GPClassifier.__doc__.split())
               for name, spec in METHODS.items())


def test_time_budget_and_early_stopping_flags_reach_the_model(csv_file, tmp_path, capsys):
    from alphagp import GPClassifier
    model = tmp_path / "m.safetensors"
    assert main(["--quiet", "fit", "--data", str(csv_file), "--target", "label", "--model", str(model), *ARGS,
                 "--max-time", "60", "--early-stopping", "TRUE", "--validation-fraction", "0.2"]) == 0
    clf = GPClassifier.load(model)
    assert clf.max_time == 60 and clf.early_stopping is True and clf.validation_fraction == 0.2
    assert len(clf.validation_scores_) == clf.n_iter_
    for flag, value in (("--early-stopping", "maybe"), ("--validation-fraction", "1"), ("--max-time", "0")):
        with pytest.raises(SystemExit):
            main(["fit", "--data", str(csv_file), "--target", "label", "--model", str(model), flag, value])
        assert flag in capsys.readouterr().err


def test_missing_labels_name_the_target_column_and_rows_and_text_labels_keep_none(csv_file, tmp_path, capsys):
    """Issue 60, item 14: empty label cells, and a label spelt "None" that pandas reads as missing,
    get one line naming the target column and the data rows; --text-labels reads "None" as a label."""
    frame = pd.read_csv(csv_file)
    frame.loc[[3, 10], "label"] = np.nan
    gaps = tmp_path / "gaps.csv"
    frame.to_csv(gaps, index=False)
    named = pd.read_csv(csv_file)
    named["label"] = named["label"].replace({"a": "None"})
    spelt = tmp_path / "spelt.csv"
    named.to_csv(spelt, index=False)
    model = tmp_path / "m.agp"
    base = ["--quiet", "fit", "--target", "label", "--model", str(model), "--method", "sep", "--max-iter", "2"]
    assert main([*base, "--data", str(gaps)]) == 2
    err = capsys.readouterr().err
    assert "the target column 'label' of gaps.csv has 2 missing labels (rows 3, 10, counted from 0, the first below the header" in err
    assert err.count("\n") == 1
    assert main([*base, "--data", str(spelt)]) == 2
    assert "--text-labels" in capsys.readouterr().err
    assert main([*base, "--data", str(spelt), "--text-labels"]) == 0
    from alphagp import GPClassifier
    assert "None" in GPClassifier.load(model).classes_.tolist()
    assert main(["--quiet", "predict", "--model", str(model), "--data", str(gaps), "--target", "label"]) == 0


def test_missing_labels_in_python_name_the_rows():
    from alphagp import GPClassifier
    X = np.random.default_rng(0).normal(size=(40, 2))
    for missing in (None, np.nan):
        y = np.array(["x", "y"] * 20, dtype=object)
        y[[3, 8]] = missing
        with pytest.raises(ValueError, match=r"y is missing 2 \(rows 3, 8, counted from 0\)"):
            GPClassifier(method="sep", max_iter=2).fit(X, y)


def test_a_weight_column_is_checked_by_name_and_row_and_update_takes_one(csv_file, tmp_path, capsys):
    """Issue 60, item 12: --weight-column equal to the target, or holding NaN, negative or only zero
    weights, gets one line naming the column (and the first bad data row); update takes one too."""
    frame = pd.read_csv(csv_file).assign(w=1.0)
    model = tmp_path / "m.agp"
    base = ["--quiet", "fit", "--target", "label", "--model", str(model), "--method", "sep", "--max-iter", "2"]
    for values, flag, message in (
            ({4: -1.0}, "w", "--weight-column 'w' must hold finite non-negative numbers; row 4 (counted from 0, the first below the header, as every row number alphagp prints) holds -1.0"),
            ({4: np.nan}, "w", "row 4 (counted from 0, the first below the header, as every row number alphagp prints) holds nan"),
            ("zero", "w", "--weight-column 'w' is 0 in every row"),
            ({}, "label", "--weight-column 'label' is the target column")):
        data = frame.copy()
        if values == "zero":
            data["w"] = 0.0
        else:
            for row, value in values.items():
                data.loc[row, "w"] = value
        path = tmp_path / "w.csv"
        data.to_csv(path, index=False)
        assert main([*base, "--data", str(path), "--weight-column", flag]) == 2
        assert message in capsys.readouterr().err
    frame.to_csv(tmp_path / "w.csv", index=False)
    assert main([*base, "--data", str(tmp_path / "w.csv"), "--weight-column", "w"]) == 0
    heavy = frame.assign(w=3.0)
    heavy.to_csv(tmp_path / "more.csv", index=False)
    assert main(["--quiet", "update", "--model", str(model), "--data", str(tmp_path / "more.csv"), "--target", "label",
                 "--weight-column", "w"]) == 0
    from alphagp import GPClassifier
    assert GPClassifier.load(model)._stream_seen[1] == pytest.approx(3.0 * len(frame))


def test_a_libsvm_file_too_wide_to_fit_is_refused_before_it_is_made_dense(tmp_path, capsys, monkeypatch):
    """Issue 60, item 10: one feature index of 5,000,000 in a 60-row LIBSVM file: refused from the
    sparse width and the fit's plan, counting all 60 rows, before any dense array is made, with
    advice that works (a projection, not mini-batches)."""
    import scipy.sparse
    rng = np.random.default_rng(0)
    path = tmp_path / "wide.libsvm"
    with open(path, "w") as f:
        for i in range(60):
            extra = " 5000000:1.0" if i == 7 else ""
            f.write(f"{i % 2} " + " ".join(f"{j}:{v:.3f}" for j, v in enumerate(rng.random(5), 1)) + extra + "\n")
    monkeypatch.setattr(scipy.sparse.csr_matrix, "toarray", lambda self: pytest.fail("made dense"))
    assert main(["--quiet", "fit", "--data", str(path), "--model", str(tmp_path / "m.agp")]) == 2
    err = capsys.readouterr().err
    assert "a fit on 60 rows of 5000000 features" in err and "SparseRandomProjection" in err


def test_help_and_version_answer_without_importing_torch():
    """Issue 60, item 16: ``--version``, ``--help`` and a command's help other than fit's import
    neither PyTorch nor the estimators (they answered in seconds before)."""
    import subprocess
    import sys
    for flags in (["--version"], ["--help"], ["predict", "--help"]):
        code = (f"import sys\nfrom alphagp.cli import main\ntry:\n    main({flags!r})\nexcept SystemExit:\n    pass\n"
                "assert 'torch' not in sys.modules, 'torch was imported'\n")
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
        assert done.returncode == 0, (flags, done.stderr[-300:])


def test_ordinal_fit_keeps_the_grades_order_and_refuses_grades_without_it(tmp_path, capsys):
    """--ordinal fits a GPOrdinalClassifier; --grades orders text labels (alphabetical would put
    'high' first); a grade that is not a number for a numeric target, or --grades without
    --ordinal, is a one-line error."""
    from alphagp import GPOrdinalClassifier
    from alphagp.testing import contract_problem
    X, y = contract_problem()
    frame = pd.DataFrame(X, columns=["a", "b"])
    frame["target"] = np.array(["low", "mid", "high"])[y]
    data, model = tmp_path / "grades.csv", tmp_path / "grades.safetensors"
    frame.to_csv(data, index=False)
    assert main(["fit", "--data", str(data), "--model", str(model), "--ordinal", "--grades", "low,mid,high",
                 "--text-labels", "--max-iter", "20", "--quiet"]) == 0
    loaded = GPOrdinalClassifier.load(model)
    assert loaded.classes_.tolist() == ["low", "mid", "high"] and loaded.method_ == "ordinal_ep"
    assert "GPOrdinalClassifier(" in capsys.readouterr().out
    frame["target"] = y + 3
    frame.to_csv(data, index=False)
    assert main(["fit", "--data", str(data), "--model", str(model), "--grades", "3,4,5"]) == 2
    assert "add --ordinal" in capsys.readouterr().err
    assert main(["fit", "--data", str(data), "--model", str(model), "--ordinal", "--grades", "3,x,5"]) == 2
    assert "must be numbers" in capsys.readouterr().err


def test_evaluate_takes_the_weight_column_a_model_was_fitted_with_and_weights_the_metrics(csv_file, tmp_path,
                                                                                          capsys):
    """Issue 80, item 6: a model fitted with --weight-column is evaluated on a file holding that column
    (``evaluate --weight-column``); its weighted metrics equal the unweighted ones of the file with each
    row repeated as many times as its integer weight."""
    frame = pd.read_csv(csv_file)
    frame["w"] = np.random.default_rng(0).integers(1, 4, len(frame)).astype(float)
    weighted, repeated, model = tmp_path / "w.csv", tmp_path / "r.csv", tmp_path / "m.agp"
    frame.to_csv(weighted, index=False)
    frame.loc[frame.index.repeat(frame["w"].astype(int))].drop(columns="w").to_csv(repeated, index=False)
    assert main(["--quiet", "fit", "--data", str(weighted), "--target", "label", "--model", str(model),
                 "--method", "sep", "--max-iter", "3", "--weight-column", "w"]) == 0
    capsys.readouterr()
    assert main(["--quiet", "evaluate", "--model", str(model), "--data", str(weighted), "--target", "label",
                 "--weight-column", "w", "--json"]) == 0
    ours = json.loads(capsys.readouterr().out)
    assert main(["--quiet", "evaluate", "--model", str(model), "--data", str(repeated), "--target", "label",
                 "--json"]) == 0
    reference = json.loads(capsys.readouterr().out)
    assert ours == pytest.approx(reference, rel=1e-10, abs=1e-12)


def test_a_new_option_of_the_classifier_is_a_flag_without_an_edit_of_the_command_line(monkeypatch, capsys):
    """Issue 81 item 5: a toy option added to GPClassifier as DESIGN.md's "Adding an option" says (its
    __init__, its constraint, its docstring entry) gets its flag: the values its constraint allows
    (here an integer in [1, 10], or none), a one-line refusal of others, its help from the
    docstring with the estimator's default, and its value on the estimator; the deep GPs refuse it."""
    import inspect
    from numbers import Integral

    from alphagp import GPClassifier, cli
    from alphagp.constraints import Interval
    original = GPClassifier.__init__
    signature = inspect.signature(original)

    def init(self, *, toy_level=3, **params):
        original(self, **params)
        self.toy_level = toy_level

    init.__signature__ = signature.replace(parameters=[*signature.parameters.values(), inspect.Parameter(
        "toy_level", inspect.Parameter.KEYWORD_ONLY, default=3)])
    monkeypatch.setattr(GPClassifier, "__init__", init)
    monkeypatch.setitem(GPClassifier._parameter_constraints, "toy_level",
                        [Interval(Integral, 1, 10, closed="both"), None])
    monkeypatch.setattr(GPClassifier, "__doc__", GPClassifier.__doc__.replace(
        "    Parameters\n    ----------\n", "    Parameters\n    ----------\n    toy_level : int or None\n"
        "        How toy the fit is. Nothing reads it.\n", 1))
    parser = cli.build_parser()
    base = ["fit", "--data", "d.csv", "--model", "m.agp"]
    assert cli._make_estimator(parser.parse_args([*base, "--toy-level", "5"])).get_params()["toy_level"] == 5
    assert cli._make_estimator(parser.parse_args([*base, "--toy-level", "none"])).get_params()["toy_level"] is None
    assert cli._make_estimator(parser.parse_args(base)).get_params()["toy_level"] == 3
    with pytest.raises(SystemExit):
        parser.parse_args([*base, "--toy-level", "11"])
    assert "--toy-level takes an int in the range [1, 10]; or none; got '11'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["fit", "--help"])
    assert "--toy-level TOY_LEVEL How toy the fit is (default: 3; not with --layers)" in " ".join(
        capsys.readouterr().out.split())
    with pytest.raises(ValueError, match="--toy-level does not apply to a deep GP"):
        cli._make_estimator(parser.parse_args([*base, "--layers", "2", "--toy-level", "5"]))
