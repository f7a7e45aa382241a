import json

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import dump_svmlight_file

from alphagp.cli import main
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
    model = tmp_path / "m.joblib"
    assert main(["--quiet", "fit", "--data", str(csv_file), "--target", "label", "--model", str(model), *ARGS]) == 0
    out = tmp_path / "pred.csv"
    assert main(["predict", "--model", str(model), "--data", str(csv_file), "--target", "label",
                 "--output", str(out)]) == 0
    pred = pd.read_csv(out)
    assert list(pred.columns) == ["prediction", "p_a", "p_b", "p_c"]
    assert np.allclose(pred[["p_a", "p_b", "p_c"]].sum(axis=1), 1.0, atol=1e-5)
    capsys.readouterr()
    assert main(["evaluate", "--model", str(model), "--data", str(csv_file), "--target", "label", "--json"]) == 0
    metrics = json.loads(capsys.readouterr().out)
    assert metrics["error"] < 0.15 and set(metrics) == {"error", "nll", "ece", "brier"}


def test_fit_on_libsvm(tmp_path):
    X, y = load_bundled("new_thyroid")
    path = tmp_path / "data.libsvm"
    dump_svmlight_file(X, y, str(path))
    assert main(["--quiet", "fit", "--data", str(path), "--model", str(tmp_path / "m.joblib"),
                 "--method", "sep", *ARGS]) == 0


def test_cli_reports_bad_input_without_a_traceback(csv_file, tmp_path, capsys):
    code = main(["--quiet", "fit", "--data", str(csv_file), "--target", "missing",
                 "--model", str(tmp_path / "m.joblib"), *ARGS])
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
    model = tmp_path / "m.joblib"
    assert main(["--quiet", "fit", "--data", str(csv_file), "--target", "label", "--model", str(model), *ARGS]) == 0
    unlabelled = tmp_path / "x.csv"
    pd.read_csv(csv_file).drop(columns="label").to_csv(unlabelled, index=False)
    out = tmp_path / "p.csv"
    assert main(["predict", "--model", str(model), "--data", str(unlabelled), "--output", str(out)]) == 0
    assert len(pd.read_csv(out)) == 215
