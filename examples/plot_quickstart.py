"""
Quickstart: fit, evaluate, plot, save
=====================================

Fit the default classifier on Vehicle (UCI, 846 rows, 18 features, 4 classes; bundled with
alphagp), measure its test error and calibration, draw its reliability diagram, and save and
reload the model.
"""

# %%
# Data: the bundled Vehicle set, a stratified 80/20 split.
import tempfile
from pathlib import Path

import numpy as np
from sklearn.model_selection import train_test_split

from alphagp import GPClassifier
from alphagp.calibration import predicted_probabilities, reliability_curve
from alphagp.data import load_bundled
from alphagp.plotting import plot_reliability

X, y = load_bundled("vehicle")
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, stratify=y, random_state=0)
print(X_train.shape, "classes:", np.unique(y))

# %%
# Fit. ``GPClassifier()`` (``method="auto"``) cross-validates a portfolio of methods on the
# training rows and keeps the one with the lowest held-out NLL; ``verbose=True`` prints each
# candidate's score and the final fit's progress, ``cv_results_`` keeps them.
clf = GPClassifier(random_state=0, verbose=True).fit(X_train, y_train)
print("chosen:", clf.candidate_, " inducing points per class:", clf.n_inducing_)
for name, nll, seconds in zip(clf.cv_results_["candidate"], clf.cv_results_["mean_test_nll"],
                              clf.cv_results_["mean_fit_time"]):
    print(f"  {name:8s} held-out NLL {nll:.4f} ({seconds:.1f} s a fit)")

# %%
# Evaluate: test error, negative log-likelihood (NLL), expected calibration error (ECE) and
# Brier score. Lower is better for all four.
print({name: round(value, 4) for name, value in clf.evaluate(X_test, y_test).items()})

# %%
# The reliability diagram: the accuracy of the test points in each confidence bin against
# the bin's mean confidence. A calibrated model's bars follow the diagonal; the counts under
# each bar say how much a bar can be trusted.
curve = reliability_curve(*predicted_probabilities(clf, X_test, y_test))
fig = plot_reliability({"GPClassifier on Vehicle": curve})

# %%
# Save and reload. A model file holds tensors and plain JSON with a checksum, never pickle;
# the reloaded model predicts the same probabilities.
with tempfile.TemporaryDirectory() as folder:
    path = Path(folder) / "vehicle.safetensors"
    clf.save(path)
    again = GPClassifier.load(path)
    print("same probabilities:", np.allclose(again.predict_proba(X_test), clf.predict_proba(X_test)))
