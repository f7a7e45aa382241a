"""The figures of alphagp.plotting: what each draws is checked against the numbers it was given."""

import numpy as np
import pytest

pytest.importorskip("matplotlib")
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.colors import to_rgb

from alphagp import GPClassifier
from alphagp.calibration import reliability_curve
from alphagp.plotting import inducing_inputs, plot_decision_regions, plot_history, plot_reliability
from alphagp.training import MetricsRecorder


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def blobs():
    rng = np.random.default_rng(3)
    centres = np.array([[0.0, 0.0], [4.0, 0.0], [2.0, 3.5]])
    y = np.repeat(np.array(["a", "b", "c"]), 40)
    X = centres[np.searchsorted(["a", "b", "c"], y)] * 10 + rng.normal(size=(120, 2)) * 10
    return X, y


def test_reliability_diagram_shows_accuracy_counts_and_empty_bins_as_empty(tmp_path):
    proba = np.array([[0.95, 0.05], [0.95, 0.05], [0.6, 0.4], [0.4, 0.6], [0.7, 0.3]])
    y = np.array([0, 0, 0, 0, 1])
    curve = reliability_curve(proba, y, n_bins=10)      # bins 6 (2 points), 9 (2), 7 (1)
    path = tmp_path / "reliability.png"
    figure = plot_reliability({"left": curve, "right": curve}, path)
    assert path.stat().st_size > 0
    top, bottom = figure.axes[0], figure.axes[2]
    accuracy_bars, gap_bars, empty_bars = top.containers[:3]
    filled = np.flatnonzero(curve.counts)
    assert [b.get_height() for b in accuracy_bars] == pytest.approx(curve.accuracy[filled])
    assert [b.get_x() for b in accuracy_bars] == pytest.approx(filled / 10)
    assert [b.get_y() + b.get_height() for b in gap_bars] == pytest.approx(curve.confidence[filled])
    # two classes: the axis starts at 0.5, and bins 5 and 8 are drawn empty, not as accuracy 0
    assert bottom.get_xlim()[0] == pytest.approx(0.5)
    assert sorted(round(b.get_x(), 6) for b in empty_bars) == [0.5, 0.8]
    assert not any(b.get_fill() for b in empty_bars)
    counts = [t.get_text() for t in bottom.texts]
    assert counts == ["", "2", "1", "", "2"]
    assert bottom.get_shared_y_axes().joined(bottom, figure.axes[3])
    # the legend sits under the panels, not on one of them
    assert not top.get_legend() and figure.legends


def test_decision_regions_colour_each_cell_by_the_predicted_class_and_mark_the_inducing_points(blobs):
    X, y = blobs
    Z = np.array([[0.0, 0.0], [40.0, 0.0], [20.0, 35.0], [20.0, 10.0]])
    clf = GPClassifier(method="ep", inducing_points=Z, optimize_inducing=False, max_iter=30,
                       random_state=0).fit(X, y)
    figure = plot_decision_regions(clf, X, y, resolution=25)
    ax = figure.axes[0]
    image = np.asarray(ax.images[0].get_array()).reshape(-1, 3)
    x0, x1, y0, y1 = ax.images[0].get_extent()
    g0, g1 = np.linspace(x0, x1, 25), np.linspace(y0, y1, 25)
    grid = np.stack(np.meshgrid(g0, g1), -1).reshape(-1, 2)
    proba = clf.predict_proba(grid)
    sure = proba.max(1) > 0.9
    assert sure.sum() > 50
    colours = np.array([to_rgb(f"C{k}") for k in range(3)])
    white = np.ones(3)
    # a confident cell's colour points from white towards its predicted class's colour
    direction = (image[sure] - white) / np.linalg.norm(image[sure] - white, axis=1, keepdims=True)
    towards = (colours - white) / np.linalg.norm(colours - white, axis=1, keepdims=True)
    assert np.array_equal(np.argmax(direction @ towards.T, 1), proba[sure].argmax(1))
    # the crosses are the given inducing points, back in the units of X (the model keeps them standardised)
    crosses = ax.collections[3:]
    assert crosses[0].get_label().startswith("inducing points")
    assert len(crosses) == len(inducing_inputs(clf))
    for drawn in crosses:
        np.testing.assert_allclose(drawn.get_offsets(), Z, atol=1e-9)


def test_decision_regions_need_two_features(blobs):
    X, y = blobs
    clf = GPClassifier(method="ep", n_inducing=5, max_iter=2, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="2 features"):
        plot_decision_regions(clf, np.c_[X, X[:, :1]], y)


def test_history_plot_draws_the_recorded_test_nll_against_training_time(blobs):
    X, y = blobs
    clf = GPClassifier(method="sep", n_inducing=8, batch_size=40, max_iter=4, random_state=0)
    clf.fit(X, y, callbacks=[MetricsRecorder(X, y)])
    figure = plot_history({"sep": clf})
    line = figure.axes[0].lines[0]
    np.testing.assert_allclose(line.get_xdata(), [r["train_seconds"] for r in clf.history_])
    np.testing.assert_allclose(line.get_ydata(), [r["test_nll"] for r in clf.history_])
    with pytest.raises(ValueError, match="early_stopping=True"):
        plot_history(clf, metric="validation")
    with pytest.raises(ValueError, match="metric must be one of"):
        plot_history(clf, metric="accuracy")
