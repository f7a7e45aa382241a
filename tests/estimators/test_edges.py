"""The edges a user touched (issue 45): one read of a model file on the command line, no temporary
file left by a killed writer, only format versions that exist, and a non-model file refused
before it is read whole."""

import os
import struct
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest

from alphagp import DeepGPClassifier, GPClassifier, serialization
from alphagp.methods import METHODS
from alphagp.serialization import ModelFileError

from conftest import rewrite_model_header

FAST = dict(method="ep", n_inducing=6, max_iter=3, random_state=0)

_KIND_SAVER = """
import sys
from alphagp.cli import _load_model
models = [_load_model(p) for p in sys.argv[2:4]]
i = 0
while True:
    models[i % 2].save(sys.argv[1])
    i += 1
"""


def test_the_command_line_reads_a_model_once_while_another_process_replaces_it(thyroid, tmp_path):
    """A GPClassifier file and a DeepGPClassifier file are saved in turn to one path; every load of
    the command line returns one of them whole (reading the kind, then the file again, failed with
    "holds a DeepGPClassifier, not a GPClassifier" when the file changed in between)."""
    from alphagp.cli import _load_model
    X, y = thyroid
    a, b, target = tmp_path / "gp.agp", tmp_path / "deep.agp", tmp_path / "shared.agp"
    GPClassifier(**FAST).fit(X, y).save(a)
    DeepGPClassifier(n_layers=1, n_inducing=5, n_samples=2, n_predict_samples=4, max_iter=2,
                     random_state=0).fit(X, y).save(b)
    expected = {type(m).__name__: m.predict_proba(X[:10]) for m in map(_load_model, (a, b))}
    _load_model(a).save(target)
    writer = subprocess.Popen([sys.executable, "-c", _KIND_SAVER, str(target), str(a), str(b)])
    seen, loads = {}, 0
    try:
        deadline = time.monotonic() + 120.0
        while time.monotonic() < deadline and (len(seen) < 2 or loads < 600):
            model = _load_model(target)                       # a spurious ModelFileError fails here
            name = type(model).__name__
            np.testing.assert_allclose(model.predict_proba(X[:10]), expected[name], atol=1e-12)
            seen[name] = seen.get(name, 0) + 1
            loads += 1
    finally:
        writer.kill()
        writer.wait()
    assert len(seen) == 2, f"the writer never replaced the file in {loads} loads"


_HANGING_WRITER = """
import os, sys, time, torch
from alphagp import serialization
os.replace = lambda *a: time.sleep(600)       # killed after the temporary file is whole, before the move
serialization.write(sys.argv[1], "test", {"x": torch.zeros(10)})
"""


def test_the_next_write_removes_the_temporary_file_of_a_killed_writer(tmp_path):
    target = tmp_path / "fit.ckpt"
    writer = subprocess.Popen([sys.executable, "-c", _HANGING_WRITER, str(target)])
    deadline = time.monotonic() + 120.0
    while not list(tmp_path.glob(".fit.ckpt.*.tmp")) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    writer.kill()
    writer.wait()
    left = list(tmp_path.glob(".fit.ckpt.*.tmp"))
    assert len(left) == 1 and str(writer.pid) in left[0].name
    # a live writer's temporary file (this process's) is not touched
    live = tmp_path / f".fit.ckpt.{os.getpid()}.abc.tmp"
    live.write_bytes(b"in progress")
    other = tmp_path / f".other.ckpt.{writer.pid}.abc.tmp"          # another target's
    other.write_bytes(b"x")
    serialization.write(target, "test", {"x": np.zeros(3).tolist()})
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["fit.ckpt", live.name, other.name])
    assert serialization.read(target, "test")["x"] == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("version", [0, -5, 4, 1.5, True, "1"])
def test_only_format_versions_that_exist_are_read(thyroid, tmp_path, version):
    X, y = thyroid
    GPClassifier(**FAST).fit(X, y).save(tmp_path / "m.agp")
    raw = (tmp_path / "m.agp").read_bytes()

    def relabel(meta):
        meta["format_version"] = version
    (tmp_path / "relabelled.agp").write_bytes(rewrite_model_header(raw, relabel, keep_checksum=False))
    with pytest.raises(ModelFileError, match="format"):
        GPClassifier.load(tmp_path / "relabelled.agp")


def test_a_large_file_of_another_kind_is_refused_before_it_is_read(tmp_path):
    import tracemalloc
    table = tmp_path / "table.csv"
    row = ",".join(["0.123456789"] * 20) + "\n"
    with open(table, "w") as f:
        f.write("a" + ",a" * 19 + "\n")
        f.writelines(row * 60_000 for _ in range(8))                # 115 MB of text
    tracemalloc.start()
    try:
        with pytest.raises(ModelFileError, match="not an alphagp"):
            GPClassifier.load(table)
        peak_mib = tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()
    assert peak_mib < 10                                            # reading it whole took 110 MiB


@pytest.mark.parametrize("header", [b"", b'{"a": 1}   ', b"[1, 2, 3]   "], ids=["zeros", "json", "list"])
def test_a_file_whose_header_is_not_ours_is_refused_before_its_body_is_read(tmp_path, monkeypatch, header):
    """Issue 60, item 8: a file of zeros (its first 8 bytes declare an empty header), or one whose
    header is not an alphagp one, is refused from its first bytes: the body is never read."""
    import pathlib
    import struct
    path = tmp_path / "odd.agp"
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header)
        f.truncate(64 * 2**20)                                     # 64 MiB, zeros after the header
    monkeypatch.setattr(pathlib.Path, "read_bytes", lambda self: pytest.fail("the whole file was read"))
    with pytest.raises(ModelFileError, match="not an alphagp"):
        GPClassifier.load(path)


def test_a_file_relabelled_as_format_1_keeps_its_checksum_checked(thyroid, tmp_path):
    """Issue 60, item 7: format 1 files had no checksum; a file that carries one is checked
    whatever version it claims (a tensor changed and the old checksum left: refused)."""
    import json
    X, y = thyroid
    GPClassifier(**FAST).fit(X, y).save(tmp_path / "m.agp")
    raw = (tmp_path / "m.agp").read_bytes()
    tensors = serialization.load_tensors(raw)
    n = struct.unpack("<Q", raw[:8])[0]
    metadata = json.loads(raw[8:8 + n])["__metadata__"]
    header = json.loads(metadata["alphagp"])
    header["format_version"] = 1
    name = min(tensors)
    tensors[name] = -tensors[name]
    (tmp_path / "edited.agp").write_bytes(serialization.save_tensors(
        tensors, metadata={"alphagp": json.dumps(header), "alphagp_sha256": metadata["alphagp_sha256"]}))
    with pytest.raises(ModelFileError, match="checksum does not match"):
        GPClassifier.load(tmp_path / "edited.agp")


def test_n_inducing_reports_the_points_the_model_has(thyroid, tmp_path, capsys):
    from alphagp.cli import main
    X, y = thyroid
    rows = np.random.default_rng(0).choice(len(y), 60, replace=False)
    X, y = X[rows], y[rows]
    with pytest.warns(UserWarning, match="larger than the"):
        clf = GPClassifier(**{**FAST, "n_inducing": 10**9}).fit(X, y)
    assert clf.n_inducing_ == clf.model_.inducing_points.shape[1] == 60
    data = tmp_path / "d.csv"
    np.savetxt(data, np.column_stack([X, y]), delimiter=",", header=",".join(
        [f"f{j}" for j in range(X.shape[1])] + ["label"]), comments="")
    assert main(["--quiet", "fit", "--data", str(data), "--target", "label", "--model", str(tmp_path / "m.agp"),
                 "--method", "ep", "--n-inducing", str(10**9), "--max-iter", "2"]) == 0
    out = capsys.readouterr().out
    assert "n_inducing=60" in out and "1000000000" not in out


def test_the_reliability_plot_names_the_chosen_method_and_keeps_its_legend_inside(thyroid, tmp_path, monkeypatch):
    import matplotlib
    matplotlib.use("Agg")
    from alphagp import cli, plotting
    from alphagp.calibration import predicted_probabilities, reliability_curve
    X, y = thyroid
    model = tmp_path / "m.agp"
    GPClassifier(**{**FAST, "method": "auto", "n_inducing": 5}).fit(X, y).save(model)
    data = tmp_path / "d.csv"
    np.savetxt(data, np.column_stack([X, y]), delimiter=",", header=",".join(
        [f"f{j}" for j in range(X.shape[1])] + ["label"]), comments="")
    titles = []
    monkeypatch.setattr(plotting, "plot_reliability", lambda curves, path, title: titles.append(title))
    assert cli.main(["evaluate", "--model", str(model), "--data", str(data), "--target", "label",
                     "--plot", str(tmp_path / "r.png")]) == 0
    assert titles and not titles[0].startswith("auto") and titles[0].split()[0] in METHODS
    monkeypatch.undo()
    clf = GPClassifier.load(model)
    fig = plotting.plot_reliability(reliability_curve(*predicted_probabilities(clf, X, y)))
    legend = fig.legends[0].get_window_extent(fig.canvas.get_renderer())
    assert legend.x0 >= 0 and legend.x1 <= fig.bbox.width and legend.y0 >= 0


_CAPPED_PREDICTION = """
import resource, sys
import numpy as np
from alphagp import GPClassifier
r = np.random.default_rng(0)
y = np.arange(300) % 100
X = r.normal(size=(100, 5))[y] * 3 + r.normal(size=(300, 5))
m = GPClassifier(method="pep", max_iter=2, random_state=0).fit(X, y)
with open("/proc/self/status") as f:                               # what RLIMIT_DATA counts
    used = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmData:"))
resource.setrlimit(resource.RLIMIT_DATA, (used + 2**30, resource.RLIM_INFINITY))
p = m.predict_proba(r.normal(size=(512, 5)))
print(p.shape, float(np.abs(p.sum(1) - 1).max()))
"""


def test_prediction_over_many_classes_stays_within_a_gigabyte():
    """The issue's reproduction (100 classes of 3 rows) on 512 rows, under a 1 GiB cap on the memory
    it may add: whole, their quadrature asked for 2 GB (7.9 GB for 2,048 rows), and blocks whose
    small results stayed between them grew the heap to 7 GB."""
    out = subprocess.run([sys.executable, "-c", _CAPPED_PREDICTION], check=False, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split("(")[1].startswith("512, 100)") and float(out.stdout.split()[-1]) < 1e-9


@pytest.mark.parametrize("classes", [3, 40])
def test_the_blocked_quadrature_equals_the_whole_tensor(classes, monkeypatch):
    import torch

    from alphagp import numerics
    g = torch.Generator().manual_seed(classes)
    mean = torch.randn(50, classes, generator=g, dtype=torch.float64)
    var = torch.rand(50, classes, generator=g, dtype=torch.float64) + 0.05
    whole = numerics.log_prob_largest(mean, var)
    monkeypatch.setattr(numerics, "QUADRATURE_BLOCK_BYTES", 1)            # one row and one class per block
    np.testing.assert_allclose(numerics.log_prob_largest(mean, var), whole, rtol=0, atol=1e-13)
    picked = numerics.log_prob_largest(mean, var, torch.arange(50) % classes)
    np.testing.assert_allclose(picked, whole[torch.arange(50), torch.arange(50) % classes], atol=1e-12)


def _rewritten(path, out, edit, kind="alphagp.GPClassifier"):
    """A copy of model file ``path`` whose whole header ``edit`` changed, written with a valid checksum
    (a crafted file can have one)."""
    import json
    import struct
    raw = path.read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    table = json.loads(raw[8:8 + n])
    header = json.loads(table["__metadata__"]["alphagp"])
    edit(header)
    tensors = serialization.load_tensors(raw)
    text = json.dumps(header)
    out.write_bytes(serialization.save_tensors(tensors, metadata={"alphagp": text, "alphagp_sha256":
                                                                  serialization.checksum(text, tensors)}))
    return out


@pytest.mark.parametrize("edit, message", [
    (lambda h: h.pop("content"), "no content"),
    (lambda h: h["content"]["classes"].update(values=h["content"]["classes"]["values"][::-1]), "sorted"),
    (lambda h: h["content"]["params"].update(dtype="float32"), "dtype"),
    (lambda h: h["content"].update(n_features_in=4), "feature counts"),
    (lambda h: h["content"]["classes"].update(values=h["content"]["classes"]["values"][:2]),
     "cannot be rebuilt: inducing_points must have shape"),
    (lambda h: h["content"]["params"].update(alpha=2.0), "cannot be rebuilt: The 'alpha' parameter"),
    (lambda h: h["content"]["fit_plan"].update(n_inducing=3), "a plan of 3 inducing points"),
])
def test_a_header_edited_against_its_tensors_is_refused(thyroid, tmp_path, edit, message):
    X, y = thyroid
    GPClassifier(**FAST).fit(X, y).save(tmp_path / "m.agp")
    crafted = _rewritten(tmp_path / "m.agp", tmp_path / "crafted.agp", edit)
    with pytest.raises(ModelFileError, match=message):
        GPClassifier.load(crafted)


@pytest.mark.parametrize("edit, message", [
    (lambda h: h["content"].update(n_features_in=7), "feature counts"),
    (lambda h: h["content"]["classes"].update(values=[1, 2]), "classes over"),
    (lambda h: h["content"]["params"].update(alpha=2.0), "cannot be rebuilt: The 'alpha' parameter"),
    (lambda h: h["content"]["model"]["config"].update(alpha=0.9), "over a model of alpha=0.9"),
])
def test_a_deep_gp_header_edited_against_its_tensors_is_refused(thyroid, tmp_path, edit, message):
    X, y = thyroid
    DeepGPClassifier(n_layers=1, n_inducing=5, n_samples=2, n_predict_samples=4, max_iter=1,
                     random_state=0).fit(X, y).save(tmp_path / "m.agp")
    crafted = _rewritten(tmp_path / "m.agp", tmp_path / "crafted.agp", edit)
    with pytest.raises(ModelFileError, match=message):
        DeepGPClassifier.load(crafted)


def _frame(X):
    import pandas as pd
    return pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])])


def _with_nan(X):
    frame = _frame(X)
    frame.loc[3, "f2"] = np.nan
    return frame


def _with_pd_na(X):
    import pandas as pd
    frame = _frame(X).astype(object)
    frame.loc[3, "f1"] = pd.NA
    return frame


def _with_datetime(X):
    import pandas as pd
    return _frame(X).assign(when=pd.Timestamp("2020-01-01"))


def _with_text(X):
    return _frame(X).assign(colour="red")


@pytest.mark.parametrize("make, names", [
    (_with_nan, ["f2", "row 3", "impute"]), (_with_pd_na, ["f1", "missing"]), (_with_datetime, ["when", "datetime"]),
    (_with_text, ["colour"]),
])
def test_unusable_input_gets_one_line_naming_the_column(thyroid, make, names):
    """With ``categorical_features=None`` such a DataFrame is refused in one line; the default
    encodes it (issue 79: tables as they come) and predicts the same frame's rows."""
    X, y = thyroid
    with pytest.raises(ValueError) as err:
        GPClassifier(**FAST, categorical_features=None).fit(make(X), y)
    message = str(err.value)
    assert "\n" not in message and all(n in message for n in names), message
    clf = GPClassifier(**FAST).fit(make(X), y)
    assert hasattr(clf, "table_encoding_") and np.all(np.isfinite(clf.predict_proba(make(X))))


def test_a_nan_in_an_array_names_its_column_and_row_at_fit_and_predict(thyroid):
    X, y = thyroid
    bad = X.copy()
    bad[7, 4] = np.inf
    with pytest.raises(ValueError, match=r"column 4 \(first in row 7, counted from 0\)") as err:
        GPClassifier(**FAST).fit(bad, y)
    assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match=r"column 4 \(first in row 7, counted from 0\)"):
        GPClassifier(**FAST).fit(X, y).predict(bad)


def test_evaluate_with_y_of_another_length_says_so(thyroid):
    X, y = thyroid
    clf = GPClassifier(**FAST).fit(X, y)
    with pytest.raises(ValueError, match=f"X has {len(X)} rows but y has 10 values"):
        clf.evaluate(X, y[:10])


def test_the_command_line_messages_name_the_fix(thyroid, tmp_path, capsys):
    from sklearn.model_selection import train_test_split

    from alphagp.cli import main
    X, y = thyroid
    frame = _frame(X).assign(label=np.array(["a", "b", "c"])[y - 1])
    data = tmp_path / "d.csv"
    frame.to_csv(data, index=False)
    model = tmp_path / "m.agp"
    fit_args = ["--method", "ep", "--n-inducing", "5", "--max-iter", "2"]
    assert main(["--quiet", "fit", "--data", str(data), "--target", "label", "--model", str(model), *fit_args]) == 0
    capsys.readouterr()
    # predicting a labelled file without --target: the label column is named, and the flag
    assert main(["predict", "--model", str(model), "--data", str(data)]) == 2
    assert "--target label" in capsys.readouterr().err
    # a CSV pandas wrote after train_test_split: its shuffled index column is dropped with a warning
    shuffled = tmp_path / "train.csv"
    train_test_split(frame, test_size=0.3, random_state=0)[0].to_csv(shuffled)
    assert main(["fit", "--data", str(shuffled), "--target", "label", "--model", str(model), *fit_args]) == 0
    assert "dropped the unnamed first column" in capsys.readouterr().err
    # string targets for a regression are the targets' fault, not the features'
    assert main(["--quiet", "fit", "--data", str(data), "--target", "label", "--regression", "--model", str(model),
                 "--max-iter", "1"]) == 2
    assert "numeric targets" in capsys.readouterr().err
    # a folder for the checkpoint or the predictions: named as what it should be
    assert main(["--quiet", "fit", "--data", str(data), "--target", "label", "--model", str(model),
                 "--checkpoint", str(tmp_path), *fit_args]) == 2
    assert "fit.ckpt" in capsys.readouterr().err
    assert main(["predict", "--model", str(model), "--data", str(data), "--target", "label",
                 "--output", str(tmp_path)]) == 2
    assert "predictions.csv" in capsys.readouterr().err


def test_a_checkpoint_that_is_a_folder_is_named_a_checkpoint(thyroid, tmp_path):
    X, y = thyroid
    with pytest.raises(IsADirectoryError, match="not a checkpoint file"):
        GPClassifier(**FAST, checkpoint=tmp_path).fit(X, y)


def test_every_estimator_parameter_has_a_flag():
    """The README says so; the parameters without a flag of their own name are set by --threads,
    --seed, --quiet and --no-standardize, --fixed-hyperparameters and --fixed-inducing; GPClassifier's
    others without a hand-made flag get one from their constraints (issue 81: ``cli._generated``)."""
    from alphagp import DeepGPRegressor, cli
    by_flag = {*cli._COMMON.values(), *(p for p, _ in cli._GP_ONLY.values()), *cli._DEEP_ONLY.values(),
               *cli._generated().values(), "n_jobs", "random_state", "verbose", "n_layers"}
    for estimator in (GPClassifier(), DeepGPClassifier(), DeepGPRegressor()):
        missing = set(estimator.get_params()) - by_flag
        assert not missing or missing == {"standardize"} and isinstance(estimator, (DeepGPClassifier,
                                                                                      DeepGPRegressor)), missing


def test_the_new_flags_reach_the_estimator(tmp_path):
    from alphagp import cli
    Z = tmp_path / "z.npy"
    np.save(Z, np.zeros((3, 5)))
    parser = cli.build_parser()
    args = parser.parse_args(["fit", "--data", "d.csv", "--model", "m.agp", "--method", "pep", "--alpha", "auto",
                              "--alpha-grid", "0.2,1", "--cv", "4", "--kernel-params", '{"noise": 0.01}',
                              "--inducing-points", str(Z), "--device", "cpu", "--distributed", "rows"])
    params = cli._make_estimator(args).get_params()
    assert (params["alpha"], params["alpha_grid"], params["cv"], params["kernel_params"], params["device"],
            params["distributed"]) == ("auto", [0.2, 1.0], 4, {"noise": 0.01}, "cpu", "rows")
    assert params["inducing_points"].shape == (3, 5)
    args = parser.parse_args(["fit", "--data", "d.csv", "--model", "m.agp", "--layers", "2", "--predict-samples", "7",
                              "--first-layer-kernel", "polynomial", "--hidden-mean-scale", "0.5"])
    params = cli._make_estimator(args).get_params()
    assert (params["n_predict_samples"], params["first_layer_kernel"], params["hidden_mean_scale"]) == \
        (7, "polynomial", 0.5)
    np.save(tmp_path / "pickled.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(SystemExit):                                   # never unpickled
        parser.parse_args(["fit", "--data", "d.csv", "--model", "m.agp", "--inducing-points",
                           str(tmp_path / "pickled.npy")])


@pytest.mark.parametrize("method", ["vi_softmax", "laplace", "augmented"])
def test_the_blocked_monte_carlo_predictives_equal_the_whole_ones(thyroid, monkeypatch, method):
    from alphagp import numerics
    X, y = thyroid
    clf = GPClassifier(method=method, n_inducing=5, max_iter=2, random_state=0).fit(X, y)
    whole = clf.predict_proba(X[:40])
    monkeypatch.setattr(numerics, "QUADRATURE_BLOCK_BYTES", 1)              # one row per block
    np.testing.assert_allclose(clf.predict_proba(X[:40]), whole, rtol=0, atol=1e-13)


def test_a_fit_that_would_take_half_the_memory_is_refused_in_one_line_before_it_starts(monkeypatch):
    """Memory is set to 1 GiB: 60 rows of 200,000 features (96 MB) fitted in one batch would take
    about 0.5 GiB with two classes; the same with shared inducing inputs and mini-batches fits."""
    from alphagp import data
    monkeypatch.setattr(data, "physical_memory_bytes", lambda: 2**30)
    X = np.zeros((60, 200_000))
    X[:, :3] = np.random.default_rng(0).normal(size=(60, 3))
    y = np.arange(60) % 2
    with pytest.raises(ValueError, match="more than half of this machine's memory") as err:
        GPClassifier(method="ep", n_inducing=5, max_iter=1).fit(X, y)
    assert "\n" not in str(err.value) and "huge feature index" in str(err.value)
    from alphagp.estimators.checks import check_model_size
    from alphagp.estimators.fit_plan import plan_fit
    est = GPClassifier(method="sep", n_inducing=5, batch_size=10, shared_hyperparameters=True)
    check_model_size(plan_fit(est.get_params(), y), 60, 200_000, 2)     # no error


def test_deep_gp_predictions_in_one_row_chunks_equal_the_whole(thyroid, monkeypatch):
    from alphagp import numerics
    X, y = thyroid
    clf = DeepGPClassifier(n_layers=2, n_inducing=5, n_samples=2, n_predict_samples=4, max_iter=2,
                           random_state=0).fit(X, y)
    whole = clf.predict_proba(X[:25])
    monkeypatch.setattr(numerics, "QUADRATURE_BLOCK_BYTES", 1)
    np.testing.assert_allclose(clf.predict_proba(X[:25]), whole, rtol=0, atol=1e-12)


def test_the_size_check_counts_the_matrices_over_many_inducing_points(monkeypatch):
    """Issue 67: the closed form with 8,000 inducing rows over MNIST's 10 classes passed the size
    check and was killed at 23 GB of a 24 GB machine; its [C, M, M] matrices (5.1 GB each) now
    count. 4,000 inducing rows, which fitted there, still pass."""
    from alphagp import data
    monkeypatch.setattr(data, "physical_memory_bytes", lambda: 24 * 2**30)
    y = np.arange(60_000) % 10
    with pytest.raises(ValueError, match="fewer inducing points"):
        GPClassifier(method="dirichlet", n_inducing=8000).check_fit_size(60_000, 784, y)
    GPClassifier(method="dirichlet", n_inducing=4000).check_fit_size(60_000, 784, y)


def test_the_size_check_counts_what_an_exact_posterior_holds(monkeypatch):
    """Issue 73: the exact closed form on 5,000 rows of 26 classes was refused at an estimated 29.1 GiB
    (C [N, N] matrices counted) and used 0.63 GiB; it holds a few [N, N] matrices whatever C. Exact EP
    holds [P, P] matrices over its P = N (C - 1) pair factors: 3,000 rows of 26 classes are refused."""
    from alphagp import data
    monkeypatch.setattr(data, "physical_memory_bytes", lambda: 24 * 2**30)
    y = np.arange(5000) % 26
    GPClassifier(method="dirichlet").check_fit_size(5000, 16, y)
    with pytest.raises(ValueError, match="GiB"):
        GPClassifier(method="exact_ep").check_fit_size(3000, 16, y[:3000])
    GPClassifier(method="exact_ep").check_fit_size(1000, 16, np.arange(1000) % 2)


def test_the_closed_forms_auto_inducing_points_grow_with_the_rows_within_memory_and_time(monkeypatch):
    from alphagp import data
    from alphagp.methods.dirichlet import DirichletGP
    monkeypatch.setattr(data, "physical_memory_bytes", lambda: 24 * 2**30)
    sizes = [DirichletGP.auto_n_inducing(n, 10, 8, None) for n in (20_000, 40_000)]
    assert 1000 < sizes[0] and sizes[0] <= sizes[1]
    for n, m in zip((20_000, 40_000), sizes):          # within the memory the check allows the matrices
        assert DirichletGP.working_bytes(n, 10, m, 8, False) <= DirichletGP.MEMORY_SHARE * 12 * 2**30
    assert DirichletGP.auto_n_inducing(9000, 10, 8, None) == 9000        # exact where it fits
    budgeted = DirichletGP.auto_n_inducing(40_000, 10, 8, 60.0)
    assert budgeted < sizes[1]
    assert DirichletGP.SECONDS_PER_FLOP * (2 * 40_000 * budgeted**2 + 10 * budgeted**3) <= 60.0
    assert DirichletGP.auto_n_inducing(40_000, 10, 8, 30.0) < budgeted               # a smaller budget, fewer
    from alphagp.estimators.fit_plan import plan_fit
    plan = plan_fit(GPClassifier(method="dirichlet").get_params(), np.arange(40_000) % 10)
    assert plan.n_inducing == sizes[1] and not plan.exact


def test_under_a_budget_the_closed_form_is_exact_only_where_the_time_model_allows():
    """Issue 74: ``max_time=1`` on 3,000 rows planned the exact posterior (27e9 flops a solve, about
    3 s here) and ran several times past the budget; under a budget the method's own choice decides."""
    from alphagp.estimators.fit_plan import plan_fit
    from alphagp.methods.dirichlet import DirichletGP
    y = np.arange(3000) % 3
    params = GPClassifier(method="dirichlet").get_params()
    assert plan_fit(params, y).exact
    assert DirichletGP.SECONDS_PER_FLOP * 3000**3 > 1.0
    budgeted = plan_fit({**params, "max_time": 1.0}, y)
    assert not budgeted.exact and budgeted.n_inducing == DirichletGP.auto_n_inducing(3000, 3, 8, 1.0) < 3000
    assert plan_fit({**params, "max_time": 1000.0}, y).exact


@pytest.mark.parametrize("method", ["dirichlet", "exact_ep", "label_regression", "sep", "vi"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_row_at_the_largest_finite_values_predicts_as_a_row_far_away(method, dtype):
    """Issue 74: the closed form's squared distances of a row at +/-1e308 were inf - inf = NaN and its
    predict_proba raised; there, as a million standard deviations away, the kernel is 0 and the
    prediction is the prior's."""
    from alphagp.testing import contract_problem, contract_settings
    X, y = contract_problem()
    clf = GPClassifier(**contract_settings(method, dtype=dtype)).fit(X, y)
    far = clf.predict_proba(np.array([[1e6, 1e6]]))
    extreme = clf.predict_proba(np.array([[1e308, -1e308], [-1e308, 1e308], [1e308, 0.0]]))
    np.testing.assert_allclose(extreme, np.repeat(far, 3, axis=0), atol=1e-6 if dtype == "float32" else 1e-12)


def test_the_exact_closed_forms_refusals_name_what_the_user_set():
    """Issue 74: a kernel per class for the exact Dirichlet GP, and weights of 1e-300, were refused
    with internal messages (the shared inducing inputs; the noise levels' order). Weights of 1e-300
    fit in float64 since issue 80; float32 refuses them in one line."""
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((60, 2)), np.arange(60) % 3
    with pytest.raises(ValueError, match=r"a kernel per class \(shared_hyperparameters=False\) needs its sparse"):
        GPClassifier(method="dirichlet", shared_hyperparameters=False).fit(X, y)
    assert GPClassifier(method="dirichlet", shared_hyperparameters=False, n_inducing=10).fit(X, y).score(X, y) > 0
    with pytest.raises(ValueError, match="row weights down to .* past the largest number of its dtype: scale the"):
        GPClassifier(method="dirichlet", dtype="float32").fit(X, y, sample_weight=np.full(60, 1e-300))


def test_a_fit_that_ends_worse_than_the_class_frequencies_on_its_rows_says_so():
    """Issue 80: vi_softmax with learning_rate=2.3 ended at uniform probabilities, below the majority
    class's accuracy, without a word. A fit whose training NLL is above the frequencies' (computed
    here apart) warns; a fit that learnt the classes does not."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((120, 2))
    y = np.where(X[:, 0] > 0.8, 2, np.where(X[:, 0] < -0.8, 1, 0))
    frequencies = np.bincount(y) / len(y)
    floor = -np.log(frequencies[y]).mean()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        prior = GPClassifier(method="vi", max_iter=1, n_inducing=5, random_state=0).fit(X, y)
    said = [str(w.message) for w in caught if "class frequencies" in str(w.message)]
    assert -np.log(prior.predict_proba(X)[np.arange(len(y)), y]).mean() > floor
    assert len(said) == 1 and "method='vi' ended with a training NLL of" in said[0]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        learnt = GPClassifier(method="ep", max_iter=30, n_inducing=10, random_state=0).fit(X, y)
    assert -np.log(learnt.predict_proba(X)[np.arange(len(y)), y]).mean() < floor
    assert not [w for w in caught if "class frequencies" in str(w.message)]


@pytest.mark.parametrize("method", ["ep", "dirichlet", "exact_ep", "sep"])
def test_features_at_the_smallest_scales_fit_and_predict_without_numpys_warnings(method):
    """Issue 80's audit saw NumPy's overflow warning for features times 1e-300 (not reproduced at
    45c1338 or since: a guard). Standardisation brings them to unit scale, so no RuntimeWarning
    reaches the user from fit, prediction, the metrics or the weighted standardisation, and the
    probabilities are the unscaled features' (the kernel sees the same standardised rows)."""
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((60, 3)), np.arange(60) % 3
    weight = rng.uniform(0.5, 2.0, 60) if method != "exact_ep" else None
    settings = dict(method=method, max_iter=3, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        tiny = GPClassifier(**settings).fit(X * 1e-300, y, sample_weight=weight)
        proba = tiny.predict_proba(X * 1e-300)
        tiny.evaluate(X * 1e-300, y)
    plain = GPClassifier(**settings).fit(X, y, sample_weight=weight).predict_proba(X)
    np.testing.assert_allclose(proba, plain, rtol=1e-6, atol=1e-9)
