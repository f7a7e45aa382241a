"""Model files and checkpoints hold data only, refuse what they should, and round-trip predictions."""

import json
import os
import pickle
import struct

import numpy as np
import pytest
import torch

from alphagp import GPClassifier
from alphagp.data import load_bundled
from alphagp.serialization import FORMAT_VERSION, ModelFileError
from alphagp.training import CheckpointMismatchError, CheckpointResumed

FAST = dict(n_inducing=8, max_iter=6, random_state=0)


@pytest.fixture(scope="module")
def thyroid():
    return load_bundled("new_thyroid")


class _Payload:
    """Unpickling this creates a file: proof that loading executed code."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


@pytest.mark.parametrize("writer", ["pickle", "torch.save"])
def test_a_pickle_payload_is_refused_as_model_and_as_checkpoint_without_running(thyroid, tmp_path, writer):
    X, y = thyroid
    marker = tmp_path / "executed"
    path = tmp_path / "evil.bin"
    payload = {"model": _Payload(marker)}
    if writer == "pickle":
        path.write_bytes(pickle.dumps(payload))
    else:
        torch.save(payload, path)
    with pytest.raises(ModelFileError, match="not an alphagp"):
        GPClassifier.load(path)
    with pytest.raises(ModelFileError, match="not an alphagp"):
        GPClassifier(checkpoint=str(path), **FAST).fit(X, y)
    assert not marker.exists()
    # the test is able to see execution: plain unpickling does create the marker
    pickle.loads(pickle.dumps(payload))
    assert marker.exists()


def test_damaged_foreign_and_newer_files_get_clear_errors(thyroid, tmp_path):
    X, y = thyroid
    good = tmp_path / "model.safetensors"
    GPClassifier(**FAST).fit(X, y).save(good)
    raw = good.read_bytes()
    (tmp_path / "truncated").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(ModelFileError, match="damaged or truncated"):
        GPClassifier.load(tmp_path / "truncated")
    (tmp_path / "table.csv").write_text("a,b\n1,2\n")
    with pytest.raises(ModelFileError, match="not an alphagp"):
        GPClassifier.load(tmp_path / "table.csv")
    with pytest.raises(FileNotFoundError):
        GPClassifier.load(tmp_path / "absent")
    # a newer format version: rewrite the JSON header in place
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    meta = json.loads(header["__metadata__"]["alphagp"])
    meta["format_version"] = FORMAT_VERSION + 1
    header["__metadata__"]["alphagp"] = json.dumps(meta)
    blob = json.dumps(header).encode()
    blob += b" " * (-len(blob) % 8)
    (tmp_path / "newer").write_bytes(struct.pack("<Q", len(blob)) + blob + raw[8 + n:])
    with pytest.raises(ModelFileError, match="upgrade alphagp"):
        GPClassifier.load(tmp_path / "newer")
    # a checkpoint is not a model
    ckpt = tmp_path / "fit.ckpt"
    GPClassifier(checkpoint=str(ckpt), **FAST).fit(X, y)
    with pytest.raises(ModelFileError, match="checkpoint"):
        GPClassifier.load(ckpt)


@pytest.mark.parametrize("method", ["ep", "sep"])
@pytest.mark.parametrize("labels", ["int", "str", "bool"])
def test_saved_model_predicts_the_same(thyroid, tmp_path, method, labels):
    X, y = thyroid
    y = {"int": y, "str": np.array(["hyper", "normal", "hypo"])[y - 1], "bool": y == 1}[labels]
    clf = GPClassifier(method=method, shared_hyperparameters=labels == "bool", **FAST).fit(X, y)
    clf.save(tmp_path / "m")
    again = GPClassifier.load(tmp_path / "m")
    assert np.array_equal(again.predict_proba(X), clf.predict_proba(X))
    assert np.array_equal(again.predict(X), clf.predict(X))
    assert again.get_params() == clf.get_params()
    assert again.classes_.dtype == clf.classes_.dtype


def test_model_file_does_not_grow_with_n_unless_training_state_is_kept(thyroid, tmp_path):
    X, y = thyroid
    order = np.random.default_rng(0).permutation(len(y))
    sizes = {}
    for n in (100, 200):
        clf = GPClassifier(**FAST).fit(X[order[:n]], y[order[:n]])
        for keep in (False, True):
            path = tmp_path / f"m{n}{keep}"
            clf.save(path, include_training_state=keep)
            sizes[n, keep] = os.path.getsize(path)
    assert abs(sizes[200, False] - sizes[100, False]) < 200          # the history's digits, at most
    assert sizes[200, True] - sizes[100, True] > 100 * 3 * 8 * 8      # [N, C, M] float64 per-point sites
    slim = GPClassifier.load(tmp_path / "m200False")
    assert np.array_equal(slim.predict_proba(X), clf.predict_proba(X))
    with pytest.raises(RuntimeError, match="without its training state"):
        slim.model_.local_update(torch.as_tensor(X[:5]), torch.zeros(5, dtype=torch.long), torch.arange(5))
    full = GPClassifier.load(tmp_path / "m200True")
    assert torch.equal(full.model_.factor_c1, clf.model_.factor_c1)


def test_checkpoint_refuses_other_data_of_the_same_shape(thyroid, tmp_path):
    X, y = thyroid
    path = tmp_path / "fit.ckpt"
    GPClassifier(checkpoint=str(path), **FAST).fit(X, y)
    other = X.copy()
    other[10, 0] += 1.0
    with pytest.raises(CheckpointMismatchError, match="training data differ.*same shape"):
        GPClassifier(checkpoint=str(path), **FAST).fit(other, y)
    with pytest.raises(CheckpointMismatchError, match=r"shape \[215, 5\] in the checkpoint, \[200, 5\] now"):
        GPClassifier(checkpoint=str(path), **FAST).fit(X[:200], y[:200])


def test_checkpoint_refuses_other_settings_and_names_them(thyroid, tmp_path):
    X, y = thyroid
    path = tmp_path / "fit.ckpt"
    GPClassifier(checkpoint=str(path), **FAST).fit(X, y)
    with pytest.raises(CheckpointMismatchError, match="n_inducing: 8 in the checkpoint, 9 now"):
        GPClassifier(checkpoint=str(path), **{**FAST, "n_inducing": 9}).fit(X, y)
    with pytest.raises(CheckpointMismatchError, match="method: 'ep' in the checkpoint, 'sep' now"):
        GPClassifier(checkpoint=str(path), method="sep", **FAST).fit(X, y)
    # the schedule may change: more epochs continue the stored fit, and say so
    with pytest.warns(CheckpointResumed, match="resuming the fit from epoch 6 of 9"):
        longer = GPClassifier(checkpoint=str(path), **{**FAST, "max_iter": 9}).fit(X, y)
    assert longer.n_iter_ == 9
    with pytest.warns(CheckpointResumed, match=r"returning the finished fit stored there \(epoch 9\)"):
        GPClassifier(checkpoint=str(path), **{**FAST, "max_iter": 9}).fit(X, y)


def test_checkpoint_is_a_data_only_file(thyroid, tmp_path):
    from safetensors import safe_open
    X, y = thyroid
    path = tmp_path / "fit.ckpt"
    GPClassifier(checkpoint=str(path), batch_size=50, **FAST).fit(X, y)
    with safe_open(str(path), framework="pt") as f:
        header = json.loads(f.metadata()["alphagp"])
        names = set(f.keys())
    assert header["kind"] == "alphagp.checkpoint" and header["format_version"] == FORMAT_VERSION
    assert "method.site_precision" in names and "generator" in names
    assert any(name.startswith("optimizer.state.") for name in names)   # Adam's moments
