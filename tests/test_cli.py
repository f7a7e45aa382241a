import json

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import dump_svmlight_file

from alphagp.cli import _make_estimator, build_parser, main
from alphagp.data import load_bundled

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
    assert "M = 76 inducing points" in out  # 10% of the 761 training rows


def test_demo_honours_n_inducing(capsys):
    assert main(["--quiet", "demo", "--max-iter", "2", "--n-inducing", "7"]) == 0
    assert "M = 7 inducing points" in capsys.readouterr().out


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


def test_every_estimator_parameter_reaches_the_classifier(tmp_path):
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
    assert "(default: 250; with --layers: 200)" in out and "(default: ep;" in out
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
