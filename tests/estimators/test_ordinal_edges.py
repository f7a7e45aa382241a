"""Issue 69: the edges of ordered classes and of the files that hold them. Each test failed on the
code before its fix."""

from __future__ import annotations

import numpy as np
import pytest

from alphagp import GPClassifier, GPOrdinalClassifier
from alphagp.estimators import held_out_schemes

from conftest import edited_model_file, fake_fit_result


def _problem(n: int = 150):
    """The issue's data: three grades cut from a noisy linear score of three features."""
    r = np.random.default_rng(0)
    X = r.normal(size=(n, 3))
    f = X @ [1.5, -1.0, 0.5] + 0.3 * r.normal(size=n)
    return X, np.digitize(f, [-0.7, 0.7])


@pytest.mark.parametrize("method", ["ordinal_ep", "ordinal_pep", "ordinal_vi"])
def test_an_ordinal_models_uncertainty_is_the_split_of_the_grades_entropy(method, tmp_path):
    """Item 1: the total is the entropy of the predictive over the grades (Monte Carlo against
    ``predict_proba``'s quadrature), the parts add up, and a loaded model gives the same split."""
    X, y = _problem()
    clf = GPOrdinalClassifier(method=method, n_inducing=8, max_iter=5, random_state=0).fit(X, y)
    parts = clf.predict_uncertainty(X[:20], n_samples=20_000)
    p = clf.predict_proba(X[:20])
    np.testing.assert_allclose(parts["total"], -(p * np.log(p)).sum(1), atol=0.02)
    np.testing.assert_allclose(parts["aleatoric"] + parts["epistemic"], parts["total"], rtol=1e-12)
    assert np.all(parts["epistemic"] >= 0) and np.all(parts["aleatoric"] > 0)
    clf.save(tmp_path / "m.safetensors")
    again = GPOrdinalClassifier.load(tmp_path / "m.safetensors").predict_uncertainty(X[:20], n_samples=20_000)
    np.testing.assert_allclose(again["total"], parts["total"], rtol=1e-12)
    through = GPClassifier(method=method, n_inducing=8, max_iter=5, random_state=0).fit(X, y)
    assert np.all(np.isfinite(through.predict_uncertainty(X[:5])["total"]))


@pytest.fixture(scope="module")
def ordinal_file(tmp_path_factory):
    X, y = _problem()
    path = tmp_path_factory.mktemp("ordinal") / "ordinal.safetensors"
    grades = ["low", "mid", "high"]                      # not sorted: the file marks them "ordered"
    GPOrdinalClassifier(grades=grades, n_inducing=8, max_iter=5, random_state=0).fit(
        X, np.array(grades)[y]).save(path)
    return path


def _reverse_classes(h):
    h["content"]["classes"]["values"] = h["content"]["classes"]["values"][::-1]


def test_an_edited_grade_order_is_refused(ordinal_file, tmp_path):
    """Item 2: the grades reversed against the file's own ``params.grades``, ``ordered`` added to a
    GPClassifier file with reversed classes, and an ordinal file over a method that is not ordinal."""
    from alphagp.serialization import ModelFileError
    with pytest.raises(ModelFileError, match="other than the grades"):
        GPOrdinalClassifier.load(edited_model_file(ordinal_file, tmp_path / "reversed.safetensors", _reverse_classes))
    X, y = _problem()
    plain = tmp_path / "plain.safetensors"
    GPClassifier(method="ep", n_inducing=8, max_iter=5, random_state=0).fit(X, y).save(plain)

    def ordered_and_reversed(h):
        _reverse_classes(h)
        h["content"]["classes"]["ordered"] = True
    with pytest.raises(ModelFileError, match="only an ordinal classifier's grades"):
        GPClassifier.load(edited_model_file(plain, tmp_path / "ordered.safetensors", ordered_and_reversed))

    def not_ordinal(h):
        h["content"]["method"]["name"] = "ep"
        h["content"]["fit_plan"]["method"] = "ep"
    with pytest.raises(ModelFileError):
        GPOrdinalClassifier.load(edited_model_file(ordinal_file, tmp_path / "ep.safetensors", not_ordinal))
    assert GPOrdinalClassifier.load(ordinal_file).classes_.tolist() == ["low", "mid", "high"]


@pytest.mark.parametrize("tensor, value", [("model.likelihood.log_gaps", np.inf), ("model.likelihood.first_cut", np.inf),
                                           ("model.likelihood.log_gaps", -np.inf), ("model.likelihood.log_gaps", 800.0),
                                           ("model.likelihood.first_cut", np.nan)])
def test_cut_points_a_fit_cannot_leave_are_refused_on_load(ordinal_file, tmp_path, tensor, value):
    """Item 4: infinite, NaN or overflowing cut points in a file (checksum recomputed) are an
    error, as the likelihood's constructor makes them."""
    from alphagp.serialization import ModelFileError

    def fill(values):
        key = next(k for k in values if k.endswith(tensor.split(".")[-1]))
        values[key] = values[key].fill_(value)
    with pytest.raises(ModelFileError, match="cut points|NaN or infinity"):
        GPOrdinalClassifier.load(edited_model_file(ordinal_file, tmp_path / "cuts.safetensors", tensors=fill))


@pytest.mark.parametrize("grades, rate", [(3, 50.0), (8, 50.0)])
def test_a_large_learning_rate_does_not_collapse_the_cut_points(grades, rate):
    """Item 3: the cut points' steps are bounded in their own scale, so a large legal learning rate
    fits about as well as the default (training accuracy within 0.05, gaps far from zero) instead
    of throwing the cut points together (0.41 and 0.05-0.16 before)."""
    X, _ = _problem()
    f = X @ [1.5, -1.0, 0.5] + 0.3 * np.random.default_rng(1).normal(size=len(X))
    y = np.digitize(f, np.quantile(f, np.linspace(0, 1, grades + 1)[1:-1]))
    default = GPOrdinalClassifier(n_inducing=10, max_iter=50, random_state=0).fit(X, y)
    fast = GPOrdinalClassifier(n_inducing=10, max_iter=50, random_state=0, learning_rate=rate).fit(X, y)
    assert np.mean(fast.predict(X) == y) >= np.mean(default.predict(X) == y) - 0.05
    assert np.min(np.diff(fast.cut_points_)) > 0.1


def test_a_fit_that_ends_far_below_its_best_says_so(monkeypatch):
    """Item 3's net under any method: without the step bounds (the cut points', and the
    sign-adaptive optimiser's per-element ``max_step``) the large rate collapses the fit, and the
    fit warns that its objective ended far below its best."""
    import math

    from alphagp.likelihoods.ordinal import OrdinalLikelihood
    from alphagp.training import optim
    monkeypatch.setattr(OrdinalLikelihood, "STEP_BOUNDS", {})
    bounded = optim.SignAdaptiveSGD.__init__
    monkeypatch.setattr(optim.SignAdaptiveSGD, "__init__",
                        lambda self, params, lr=1e-2, **kw: bounded(self, params, lr=lr, **{**kw, "max_step": math.inf}))
    X, y = _problem()
    with pytest.warns(UserWarning, match="far below"):
        GPOrdinalClassifier(n_inducing=10, max_iter=50, random_state=0, learning_rate=50.0).fit(X, y)


def test_a_file_with_a_large_tail_is_refused_before_it_is_read(ordinal_file, tmp_path, monkeypatch):
    """Item 5: the tensor table's declared size is compared with the file's length first, so a
    valid file with 1 GiB appended is refused without reading it (a sparse file here; reading
    its body would go through ``Path.read_bytes``, which the test forbids)."""
    from pathlib import Path

    from alphagp.serialization import ModelFileError
    tail = tmp_path / "tail.safetensors"
    tail.write_bytes(ordinal_file.read_bytes())
    with open(tail, "r+b") as f:
        f.truncate(tail.stat().st_size + 2**30)
    monkeypatch.setattr(Path, "read_bytes", lambda self: pytest.fail("the body was read"))
    with pytest.raises(ModelFileError, match="tensor table declares"):
        GPOrdinalClassifier.load(tail)


@pytest.mark.parametrize("grades, message", [
    ([0, np.nan, 1, 2], "not missing values"), ([0, None, 1, 2], "not missing values"), ("0,1,2", "not one string"),
    ({0, 1, 2}, "no order of its own"), ({0: 1, 1: 2}, "no order of its own"), ([], "at least 2 grades"),
    ([0, 1, 1], "distinct")])
def test_grades_that_are_no_order_of_labels_are_one_line_errors(grades, message):
    """Item 6: NaN or None as a grade, a string, a set, a mapping, no grades or a repeated one."""
    X, y = _problem()
    with pytest.raises(ValueError, match=message):
        GPOrdinalClassifier(grades=grades, n_inducing=5, max_iter=2).fit(X, y)


def test_half_step_grades_are_grades_when_listed():
    """Item 6: star ratings (0.5, 1.0, 1.5) fit when ``grades`` lists them, and without ``grades``
    the refusal says which ``grades=`` to give."""
    X, y = _problem()
    stars = np.array([0.5, 1.0, 1.5])[y]
    clf = GPOrdinalClassifier(grades=[0.5, 1.0, 1.5], n_inducing=5, max_iter=5, random_state=0).fit(X, stars)
    assert clf.classes_.tolist() == [0.5, 1.0, 1.5] and set(clf.predict(X)) <= {0.5, 1.0, 1.5}
    with pytest.raises(ValueError, match=r"grades=\[0.5, 1.0, 1.5\]"):
        GPOrdinalClassifier(n_inducing=5, max_iter=2).fit(X, stars)


def test_the_command_lines_grades_are_never_truncated_and_the_order_is_said(tmp_path, capsys):
    """Item 6: ``--grades 1.5,2.5,3.5`` on integer labels is refused as the API refuses it (not
    read as 1, 2, 3), and ``--ordinal`` without ``--grades`` says the order it fitted."""
    import pandas as pd

    from alphagp.cli import main
    X, y = _problem()
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    frame["target"] = y + 1
    data, model = tmp_path / "grades.csv", tmp_path / "grades.safetensors"
    frame.to_csv(data, index=False)
    assert main(["fit", "--data", str(data), "--model", str(model), "--ordinal", "--grades", "1.5,2.5,3.5",
                 "--max-iter", "3", "--quiet"]) == 2
    assert "not among the grades [1.5, 2.5, 3.5]" in capsys.readouterr().err
    frame["target"] = y + 1
    frame.to_csv(data, index=False)
    assert main(["fit", "--data", str(data), "--model", str(model), "--ordinal", "--max-iter", "3", "--quiet"]) == 0
    assert "grades, lowest first (sorted: no --grades was given" in capsys.readouterr().out
    # issue 74: text grades have no order of their own ('1' < '10' < '2'): said, with what to give
    with pytest.warns(UserWarning, match=r"\['1', '10', '2'\] are text, taken in the order of their characters"):
        GPOrdinalClassifier(n_inducing=5, max_iter=2).fit(X[:30], np.array(["1", "2", "10"])[y[:30]])


def test_kernel_params_per_grade_say_the_model_has_one_latent_function(tmp_path, capsys):
    """Item 7: one value per grade for an ordinal model's kernel is a one-line error in the API and
    on the command line, not PyTorch's broadcasting error or a traceback."""
    import pandas as pd

    from alphagp.cli import main
    X, y = _problem()
    with pytest.raises(ValueError, match="an ordinal model has one latent function"):
        GPOrdinalClassifier(kernel_params={"amplitude": [1.0, 1.0, 1.0]}, n_inducing=5, max_iter=2).fit(X, y)
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    frame["target"] = y
    frame.to_csv(tmp_path / "g.csv", index=False)
    assert main(["fit", "--data", str(tmp_path / "g.csv"), "--model", str(tmp_path / "g.safetensors"), "--ordinal",
                 "--kernel-params", '{"amplitude": [1.0, 1.0, 1.0]}', "--max-iter", "2", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "one latent function" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_the_left_over_messages_name_the_right_things(ordinal_file, tmp_path, capsys):
    """Item 8: alpha suggestions stay with the ordinal likelihood, a file of another kind is named
    once ("a GPOrdinalClassifier file"), a text weight column is called a weight column, and a
    tensor of the wrong shape in a file is one line."""
    import pandas as pd
    import torch

    from alphagp.cli import main
    from alphagp.methods import resolve_alpha
    from alphagp.serialization import ModelFileError
    with pytest.raises(ValueError, match="use method='ordinal_pep'"):
        resolve_alpha("ordinal_ep", 0.5)
    with pytest.raises(ValueError, match="'ordinal_pep' takes one"):
        resolve_alpha("ordinal_vi", 0.5)
    junk = tmp_path / "junk.safetensors"
    junk.write_bytes(b"\x00" * 64)
    with pytest.raises(ModelFileError, match="not an alphagp GPOrdinalClassifier file") as err:
        GPOrdinalClassifier.load(junk)
    assert "alphagp alphagp" not in str(err.value)
    X, y = _problem()
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    frame["target"], frame["w"] = y, "heavy"
    frame.to_csv(tmp_path / "w.csv", index=False)
    assert main(["fit", "--data", str(tmp_path / "w.csv"), "--model", str(tmp_path / "w.safetensors"),
                 "--weight-column", "w", "--max-iter", "2", "--quiet"]) == 2
    assert "--weight-column 'w' must hold finite non-negative numbers" in capsys.readouterr().err

    def widen(values):
        key = next(k for k in values if k.endswith("log_gaps"))
        values[key] = torch.zeros(5, dtype=values[key].dtype)
    with pytest.raises(ModelFileError, match="do not fit the model") as err:
        GPOrdinalClassifier.load(edited_model_file(ordinal_file, tmp_path / "shape.safetensors", tensors=widen))
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("informative", [False, True])
def test_a_selection_that_no_gp_wins_against_the_class_frequencies_says_so(monkeypatch, informative):
    """Item 10: the selection scores the class-frequency model on the same held-out rows and warns,
    naming both NLLs, when no candidate beats it (every candidate here predicts uniform
    probabilities on 80/10/10 labels: worse than the frequencies); an informative candidate (the
    true labels with probability 0.9) raises no such warning."""
    import warnings

    r = np.random.default_rng(0)
    X, y = r.normal(size=(120, 2)), r.choice(3, size=120, p=[0.8, 0.1, 0.1])
    truth = {tuple(x): label for x, label in zip(X, y)}

    def fake_fit(self, params, X_, y_idx, classes, weight=None, callbacks=None, start=None, max_time=None, own=True):
        return fake_fit_result()

    def fake_proba(_predictor, X_, _n_classes):
        if not informative:
            return np.full((len(X_), 3), 1 / 3)
        p = np.full((len(X_), 3), 0.05)
        p[np.arange(len(X_)), [truth[tuple(x)] for x in np.asarray(X_)]] = 0.9
        return p

    monkeypatch.setattr(GPClassifier, "_fit_result", fake_fit)
    monkeypatch.setattr(held_out_schemes, "class_probabilities", fake_proba)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        GPClassifier(random_state=0).fit(X, y)
    said = [str(w.message) for w in caught if "class frequencies" in str(w.message)]
    assert (said == []) if informative else (len(said) == 1 and "NLL 1.0986" in said[0])


def test_partial_fit_on_a_batch_method_says_which_methods_stream():
    """Item 10: ``partial_fit`` of a ``pep`` model is an ``AttributeError`` (``hasattr`` stays
    false, as scikit-learn's ``available_if`` wants) that names the methods that stream, among them
    ``ordinal_vi``."""
    X, y = _problem()
    clf = GPClassifier(method="pep", n_inducing=5, max_iter=2).fit(X, y)
    assert not hasattr(clf, "partial_fit")
    with pytest.raises(AttributeError, match="the methods of GPClassifier that stream: .*ordinal_vi"):
        clf.partial_fit(X[:10], y[:10])
    # issue 74: an ordinal classifier names its own streaming method, and no method='auto' it refuses
    ordinal = GPOrdinalClassifier(method="ordinal_ep", n_inducing=5, max_iter=2).fit(X, y)
    with pytest.raises(AttributeError, match=r"of GPOrdinalClassifier that stream: ordinal_vi$"):
        ordinal.partial_fit(X[:10], y[:10])


def test_predict_on_the_command_line_takes_text_labels_and_gives_the_median_grade(tmp_path, capsys):
    """Item 10: ``alphagp predict`` accepts ``--text-labels`` as ``fit`` and ``evaluate`` do, and an
    ordinal model's rows carry its median and mean grade beside the probabilities."""
    import pandas as pd

    from alphagp.cli import main
    X, y = _problem()
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    frame["target"] = np.array(["low", "mid", "high"])[y]
    data, model = tmp_path / "g.csv", tmp_path / "g.safetensors"
    frame.to_csv(data, index=False)
    assert main(["fit", "--data", str(data), "--model", str(model), "--ordinal", "--grades", "low,mid,high",
                 "--text-labels", "--max-iter", "5", "--quiet"]) == 0
    capsys.readouterr()
    out = tmp_path / "p.csv"
    assert main(["predict", "--model", str(model), "--data", str(data), "--target", "target", "--text-labels",
                 "--output", str(out)]) == 0
    table = pd.read_csv(out)
    expected = GPOrdinalClassifier.load(model).predict_median(frame[["a", "b", "c"]])
    # text grades: the mean is a position among them, under a name that says so (issue 74)
    assert table.columns[:3].tolist() == ["prediction", "median_grade", "mean_grade_position"]
    assert table["median_grade"].tolist() == expected.tolist()
    np.testing.assert_allclose(table["mean_grade_position"], GPOrdinalClassifier.load(model).predict_proba(
        frame[["a", "b", "c"]]) @ [0.0, 1.0, 2.0], rtol=1e-5)


def test_the_selection_summary_shows_a_raced_out_candidates_score(capsys):
    """Item 10: a candidate scored on its first fold and then dropped by racing prints that score and
    why, not 'nan'."""
    from types import SimpleNamespace

    from alphagp.cli import _print_selection
    clf = SimpleNamespace(candidate_="sep", selection_scheme_="cv", cv_results_={
        "candidate": ["sep", "vi"], "mean_test_nll": [0.41, float("nan")], "mean_fit_time": [2.0, 1.5],
        "rank_test_nll": [1, 2], "split0_test_nll": [0.40, 0.5598], "split1_test_nll": [0.42, float("nan")],
        "split2_test_nll": [0.41, float("nan")]})
    _print_selection(clf)
    out = capsys.readouterr().out
    assert "nan" not in out and "0.5598 on 1 of 3 folds, then dropped (racing)" in out


def test_argument_errors_are_one_line(capsys):
    """Item 10: argparse's usage no longer precedes its errors: one line, with where help is."""
    from alphagp.cli import main
    with pytest.raises(SystemExit) as stop:
        main(["fit", "--data", "x.csv"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and len(err.strip().splitlines()) == 1 and "--model" in err and "--help" in err


def test_the_size_check_counts_what_mini_batches_and_one_kernel_still_allocate(monkeypatch):
    """Item 9: 60 rows of 5,000,000 features (one huge feature index) with ``batch_size=10`` and
    ``shared_hyperparameters=True`` passed the size check and were killed at 7.8 GiB; the check now
    counts the kernel start's rows and search, k-means and the column names too (a machine of
    32 GiB here, so the check's half is 16 GiB)."""
    from alphagp import data
    monkeypatch.setattr(data, "physical_memory_bytes", lambda: 32 * 2**30)
    y = np.arange(60) % 3
    clf = GPClassifier(batch_size=10, shared_hyperparameters=True)
    with pytest.raises(ValueError, match="one huge feature index"):
        clf.check_fit_size(60, 5_000_000, y)
    GPClassifier(batch_size=10, shared_hyperparameters=True).check_fit_size(60, 5_000, y)   # a narrow file passes


@pytest.mark.parametrize("as_text", [False, True])
def test_dates_as_objects_or_text_are_said_to_be_categories(as_text):
    """Item 9: a column of Python dates (or ISO date text) fits as categories only with a warning
    that says how to make it days (datetime64 columns are days already)."""
    import datetime

    import pandas as pd
    X, y = _problem(60)
    days = [datetime.date(2024, 1, 1) + datetime.timedelta(days=int(d)) for d in np.arange(60) % 17]
    frame = pd.DataFrame({"a": X[:, 0], "when": [d.isoformat() for d in days] if as_text else days})
    with pytest.warns(UserWarning, match="pd.to_datetime"):
        GPClassifier(method="ep", n_inducing=5, max_iter=2, categorical_features="from_dtype").fit(frame, y)


def test_update_on_a_batch_ordinal_model_lists_the_streaming_methods(tmp_path, capsys):
    """Item 10: ``alphagp update`` on an ``ordinal_ep`` model names the methods that stream, from the
    registry (``ordinal_vi`` among them), not a list written once."""
    import pandas as pd

    from alphagp.cli import main
    X, y = _problem()
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    frame["target"] = y
    data, model = tmp_path / "g.csv", tmp_path / "g.safetensors"
    frame.to_csv(data, index=False)
    assert main(["fit", "--data", str(data), "--model", str(model), "--ordinal", "--max-iter", "3", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["update", "--model", str(model), "--data", str(data)]) == 2
    err = capsys.readouterr().err
    assert "of method 'ordinal_ep'" in err and "ordinal_vi" in err


def test_a_stream_at_a_rate_far_above_adams_default_warns():
    """The fuzz's last collapsed fits: two-call ``ordinal_vi`` streams at learning rates 1 and 10
    ended below the majority grade's accuracy without a word; a stream planned at more than ten
    times Adam's default now warns, and one at the default does not."""
    import warnings
    X, y = _problem()
    with pytest.warns(UserWarning, match="one Adam step per batch"):
        GPOrdinalClassifier(method="ordinal_vi", n_inducing=5, learning_rate=1.0).partial_fit(X, y, classes=[0, 1, 2])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        GPOrdinalClassifier(method="ordinal_vi", n_inducing=5).partial_fit(X, y, classes=[0, 1, 2])
