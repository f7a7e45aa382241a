"""Figures of a fitted model: the reliability diagram, decision regions with the inducing points,
and held-out NLL against training time.

Each function draws with matplotlib (``pip install matplotlib``; imported only when a function is
called), returns the ``Figure``, and writes it to ``path`` at 200 dpi when one is given.
"""

from __future__ import annotations

import numpy as np

from .calibration import ReliabilityCurve
from .labels import encode_known_labels

DPI = 200


def _pyplot(path):
    """matplotlib's pyplot, with the non-interactive backend when the figure goes to a file."""
    try:
        import matplotlib
        if path is not None:
            matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
    except ImportError as err:
        raise ImportError("plots need matplotlib: pip install matplotlib") from err
    return plt


def _finish(fig, path, legend_handles=None):
    """Lay ``fig`` out with ``legend_handles`` in a row under the panels, where they cover no data, and
    write it to ``path`` if given."""
    bottom = 0.0
    if legend_handles:
        renderer = fig.canvas.get_renderer()
        for ncol in range(len(legend_handles), 0, -1):      # as many columns as fit the figure's width
            legend = fig.legend(handles=legend_handles, loc="lower center", ncol=ncol, frameon=False,
                                fontsize="small")
            box = legend.get_window_extent(renderer)
            if box.width <= 0.98 * fig.bbox.width or ncol == 1:
                break
            legend.remove()
        bottom = min(0.4, (box.height + 4) / fig.bbox.height)
    fig.tight_layout(rect=(0, bottom, 1, 1))
    if path is not None:
        fig.savefig(path, dpi=DPI)
    return fig


def plot_reliability(curves: dict[str, ReliabilityCurve] | ReliabilityCurve, path=None, title: str | None = None):
    """Reliability diagrams (top) and confidence histograms (bottom), one column per curve.

    Top: the accuracy of each confidence bin (bars), the gap to the bin's mean confidence (hatched;
    over the bar where the accuracy is the higher) and the diagonal a calibrated model follows; an
    empty bin is drawn as an empty, dotted outline, not as accuracy 0. Bottom: the share of points in each bin, with the count above the bar, on a
    vertical axis shared by every column. The horizontal axis starts at the bin holding 1 / C, the
    lowest top-label confidence C classes allow (0.5 for two classes).

    Parameters
    ----------
    curves
        one :class:`~alphagp.calibration.ReliabilityCurve` or ``{label: curve}``.
    path
        if given, the figure is written there (PNG, PDF, ... by extension).
    title
        a title over all columns.

    Returns
    -------
    the matplotlib ``Figure``.
    """
    plt = _pyplot(path)
    from matplotlib.patches import Patch
    if isinstance(curves, ReliabilityCurve):
        curves = {"": curves}
    fig, axes = plt.subplots(2, len(curves), figsize=(3.4 * len(curves), 6.2), squeeze=False,
                             sharex="col", sharey="row", gridspec_kw={"height_ratios": [3, 2]})
    for column, (label, curve) in enumerate(curves.items()):
        top, bottom = axes[0, column], axes[1, column]
        edges = curve.bin_edges
        width = np.diff(edges)
        filled = curve.counts > 0
        low = edges[max(0, np.searchsorted(edges, 1.0 / curve.n_classes, side="right") - 1)] if curve.n_classes else 0.0
        shown = edges[:-1] >= low - 1e-12
        top.bar(edges[:-1][filled], curve.accuracy[filled], width=width[filled], align="edge",
                color="C0", edgecolor="black", linewidth=0.6)
        gap = curve.confidence[filled] - curve.accuracy[filled]
        top.bar(edges[:-1][filled], gap, bottom=curve.accuracy[filled], width=width[filled], align="edge",
                facecolor="none", hatch="///", edgecolor="C3", linewidth=0.6)
        empty = shown & ~filled
        top.bar(edges[:-1][empty], np.ones(empty.sum()), width=width[empty], align="edge", fill=False,
                edgecolor="0.6", linestyle=":", linewidth=0.8)
        top.plot([low, 1], [low, 1], "k--", linewidth=1)
        top.set_ylim(0, 1)
        top.set_title(f"{label}\nECE {curve.ece:.3f}" if label else f"ECE {curve.ece:.3f}")
        share = curve.counts / curve.counts.sum()
        bars = bottom.bar(edges[:-1][shown], share[shown], width=width[shown], align="edge",
                          color="0.55", edgecolor="black", linewidth=0.6)
        bottom.bar_label(bars, labels=[str(c) if c else "" for c in curve.counts[shown]], fontsize=6,
                         rotation=90, padding=2)
        bottom.set_xlabel("confidence (largest probability)")
        bottom.set_xlim(low, 1)
        bottom.margins(y=0.25)
    axes[0, 0].set_ylabel("accuracy")
    axes[1, 0].set_ylabel("share of points (count above)")
    if title:
        fig.suptitle(title)
    handles = [Patch(facecolor="C0", edgecolor="black", label="accuracy"),
               Patch(facecolor="none", hatch="///", edgecolor="C3", label="gap to mean confidence"),
               Patch(fill=False, edgecolor="0.6", linestyle=":", label="empty bin"),
               plt.Line2D([], [], color="k", linestyle="--", label="calibrated")]
    return _finish(fig, path, handles)


def plot_decision_regions(estimator, X, y, path=None, resolution: int = 200, margin: float = 0.1,
                          title: str | None = None):
    """The predicted class and its probability over a grid around 2-D data, the data, and the
    inducing points of a fitted :class:`~alphagp.GPClassifier`.

    Each grid cell is coloured by its predicted class, faded where the largest probability is low
    (white at 1 / C); the data are points in their class's colour, the inducing points crosses (in
    their class's colour with one set per class, black when one set is shared).

    Parameters
    ----------
    estimator
        a fitted classifier on 2 features (any with ``predict_proba`` and ``classes_``;
        inducing points are drawn when it has ``model_.inducing_points``).
    X
        ``[N, 2]`` features; y: ``[N]`` labels, as passed to ``fit``.
    resolution
        grid cells along each axis.
    margin
        how far the grid extends beyond the data, as a fraction of its range.

    Returns
    -------
    the matplotlib ``Figure``.
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] != 2:
        raise ValueError(f"decision regions need 2 features, got X of shape {X.shape}")
    if resolution < 2:
        raise ValueError(f"resolution must be at least 2, got {resolution}")
    plt = _pyplot(path)
    from matplotlib.colors import to_rgb
    classes = np.asarray(estimator.classes_)
    y_index = encode_known_labels(np.asarray(y), classes)
    low, high = X.min(0), X.max(0)
    pad = margin * np.where(high > low, high - low, 1.0)
    g0, g1 = (np.linspace(low[j] - pad[j], high[j] + pad[j], resolution) for j in range(2))
    grid = np.stack(np.meshgrid(g0, g1), -1).reshape(-1, 2)
    proba = np.asarray(estimator.predict_proba(grid))
    winner, confidence = proba.argmax(1), proba.max(1)
    colours = np.array([to_rgb(f"C{k % 10}") for k in range(len(classes))])
    strength = ((confidence - 1.0 / len(classes)) / (1.0 - 1.0 / len(classes)))[:, None]
    image = (1.0 - 0.75 * strength) + 0.75 * strength * colours[winner]
    fig, ax = plt.subplots(figsize=(5.5, 5))
    ax.imshow(image.reshape(resolution, resolution, 3), origin="lower", aspect="auto", interpolation="nearest",
              extent=(g0[0], g0[-1], g1[0], g1[-1]))
    for k, label in enumerate(classes):
        rows = y_index == k
        ax.scatter(X[rows, 0], X[rows, 1], s=10, color=colours[k], edgecolor="black", linewidth=0.3,
                   label=str(label))
    Z = inducing_inputs(estimator)
    if Z is not None:
        for k, Z_k in enumerate(Z):
            ax.scatter(Z_k[:, 0], Z_k[:, 1], marker="x", s=30, linewidth=1.2,
                       color="black" if len(Z) == 1 else colours[k] * 0.6,
                       label=("inducing points" + (" (shared)" if len(Z) == 1 else ", per class"))
                       if k == 0 else None)
    ax.set_xlim(g0[0], g0[-1])
    ax.set_ylim(g1[0], g1[-1])
    ax.set_title(title or "predicted class (faded where uncertain)")
    handles, _ = ax.get_legend_handles_labels()
    return _finish(fig, path, handles)


def inducing_inputs(estimator) -> np.ndarray | None:
    """The inducing inputs of a fitted estimator in the units of its features, ``[C or 1, M, D]``
    (the model keeps them standardised), or ``None`` for an estimator without them."""
    Z = getattr(getattr(estimator, "model_", None), "inducing_points", None)
    if Z is None or not hasattr(estimator, "scale_"):
        return None
    return Z.detach().cpu().double().numpy() * estimator.scale_ + estimator.mean_


#: what plot_history can draw: the history key and the axis label
HISTORY_CURVES = {"test_nll": "test NLL", "validation": "held-out NLL (early stopping's split)",
                  "test_error": "test error", "objective": "training objective"}


def plot_history(estimators, metric: str = "test_nll", path=None, log_time: bool = True,
                 title: str | None = None):
    """A metric of each fit against its training seconds, from the estimators' ``history_``.

    Parameters
    ----------
    estimators
        one fitted estimator or ``{label: estimator}``.
    metric
        ``"test_nll"`` / ``"test_error"`` (recorded when ``fit`` was given an
        :class:`~alphagp.training.MetricsRecorder`), ``"validation"`` (the held-out NLL of early
        stopping) or ``"objective"`` (the training objective, e.g. log Z_q).
    log_time
        a logarithmic time axis.

    Returns
    -------
    the matplotlib ``Figure``.
    """
    if metric not in HISTORY_CURVES:
        raise ValueError(f"metric must be one of {sorted(HISTORY_CURVES)}, got {metric!r}")
    if not isinstance(estimators, dict):
        estimators = {type(estimators).__name__: estimators}
    plt = _pyplot(path)
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for label, estimator in estimators.items():
        points = [(row["train_seconds"], row[metric]) for row in getattr(estimator, "history_", [])
                  if row.get(metric) is not None]
        if not points:
            hint = (" (pass callbacks=[MetricsRecorder(X_test, y_test)] to fit)"
                    if metric.startswith("test_") else " (fit with early_stopping=True)" if metric == "validation"
                    else "")
            raise ValueError(f"{label!r} has no {metric!r} in its history_{hint}")
        seconds, values = np.array(points).T
        ax.plot(seconds, values, marker=".", label=label)
    if log_time:
        ax.set_xscale("log")
    ax.set_xlabel("training seconds")
    ax.set_ylabel(HISTORY_CURVES[metric])
    if title:
        ax.set_title(title)
    handles, _ = ax.get_legend_handles_labels()
    return _finish(fig, path, handles)
