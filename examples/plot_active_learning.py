"""
Active learning: label the most uncertain point
===============================================

The alpha paper's experiment (section 5.6) in small: start from 100 labelled Waveform points,
then label one pool point per round, either the one whose predicted class is most uncertain
(largest predictive entropy, :func:`alphagp.active.most_uncertain`) or one at random, refit,
and compare the test error of the two rules over three seeds.

When it helps and when it does not: uncertainty sampling needs a model whose uncertainty already
means something. From 100 labelled points it does here; from a handful (an earlier version of
this example started Vehicle from 2 points per class) the entropy rule was worse than random in
most rounds, because a model fitted to 8 points is unsure almost everywhere and its most
uncertain points are those on the overlap of classes, whose labels stay uncertain. Start with a
random sample large enough to fit the kernel, then switch to the entropy rule.
"""

# %%
# Waveform (Breiman et al. 1984): 21 noisy features, three classes, each a random mixture of
# two of three triangular base waves.
import matplotlib.pyplot as plt
import numpy as np

from alphagp import GPClassifier
from alphagp.active import most_uncertain


def waveform(n, rng):
    i = np.arange(1, 22)
    h1, h2, h3 = (np.maximum(6 - np.abs(i - c), 0) for c in (11, 15, 7))
    pairs = [(h1, h2), (h1, h3), (h2, h3)]
    y = rng.integers(3, size=n)
    u = rng.random(n)[:, None]
    first = np.stack([pairs[k][0] for k in y])
    second = np.stack([pairs[k][1] for k in y])
    return u * first + (1 - u) * second + rng.standard_normal((n, 21)), y


# %%
# 100 labelled points, a pool of 400, 500 test points; 25 rounds per rule and seed. Each round
# refits power EP (alpha = 0.5, 20 inducing points per class) on the labelled points.
rounds, seeds = 25, (0, 1, 2)
errors = {"entropy": [], "random": []}
for seed in seeds:
    rng = np.random.default_rng(seed)
    X, y = waveform(1000, rng)
    X_test, y_test = X[500:], y[500:]
    for rule, curve in errors.items():
        labelled, pool = list(range(100)), np.arange(100, 500)
        draw = np.random.default_rng(seed + 100)
        curve.append([])
        for _ in range(rounds + 1):
            clf = GPClassifier(method="pep", alpha=0.5, n_inducing=20, max_iter=100, random_state=seed)
            clf.fit(X[labelled], y[labelled])
            curve[-1].append(1 - clf.score(X_test, y_test))
            pick = pool[most_uncertain(clf, X[pool])[0]] if rule == "entropy" else draw.choice(pool)
            labelled.append(int(pick))
            pool = pool[pool != pick]

for rule, curve in errors.items():
    print(f"{rule:8s} test error after 0, 5, ..., 25 added points:", np.round(np.mean(curve, 0)[::5], 3))

# %%
# Mean test error over the seeds (bands: the smallest and largest seed).
fig, ax = plt.subplots(figsize=(6, 3.8))
for rule, curve in errors.items():
    curve = np.array(curve)
    ax.plot(curve.mean(0), label=f"{rule} rule")
    ax.fill_between(np.arange(rounds + 1), curve.min(0), curve.max(0), alpha=0.2)
ax.set_xlabel("points added to the 100 labelled ones")
ax.set_ylabel("test error")
ax.legend()
fig.tight_layout()
