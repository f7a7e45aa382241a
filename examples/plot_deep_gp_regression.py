"""
Deep-GP regression: a predictive distribution with two branches
===============================================================

The deep-GP paper's bimodal toy problem: every input has two possible outputs, 10 sin(x) or
10 cos(x), with equal probability. A single GP's predictive distribution is Gaussian, one band
around the average of the two branches; a deep GP's is a mixture over the samples propagated
through its layers, which can put mass on both branches. Whether the fit uses that freedom
depends on alpha: near 0 (variational inference) the deep GP also settles on one band, at
alpha = 1 (EP) it finds both (the paper's Table 1; BENCHMARKS.md has 5 seeds of it).
"""

# %%
import matplotlib.pyplot as plt
import numpy as np

from alphagp import DeepGPRegressor

rng = np.random.default_rng(0)


def bimodal(n):
    x = np.linspace(-2, 2, n)
    y = np.where(rng.random(n) < 0.5, 10 * np.sin(x), 10 * np.cos(x)) + rng.standard_normal(n)
    return x[:, None], y


X_train, y_train = bimodal(500)
X_test, y_test = bimodal(300)

# %%
# Three models with the same budget (200 epochs of 10 mini-batches): one layer at alpha = 1, and
# two layers at alpha near 0 and at alpha = 1. The test NLL (lower is better) tells the story;
# the RMSE of the predictive mean cannot, since the mean of two branches is the same for all.
settings = {"1 layer, alpha = 1": (1, 1.0), "2 layers, alpha = 0.001": (2, 0.001),
            "2 layers, alpha = 1": (2, 1.0)}
models = {}
for name, (layers, alpha) in settings.items():
    models[name] = DeepGPRegressor(n_layers=layers, n_hidden=3, n_inducing=10, alpha=alpha, n_samples=50,
                                   batch_size=50, max_iter=200, learning_rate=0.01,
                                   random_state=0).fit(X_train, y_train)
    print(f"{name}:", {k: round(v, 3) for k, v in models[name].evaluate(X_test, y_test).items()})

# %%
# Draws from each predictive distribution over the data: only the two-layer model at alpha = 1
# follows both branches. The one-layer model's single band still narrows where the branches
# cross (x near 0.8): with alpha = 1 a sparse GP's variance depends on the input, as in FITC,
# which is why it scores better than the two-layer fit at alpha near 0.
fig, axes = plt.subplots(1, 3, figsize=(12, 3.8), sharey=True)
for ax, (name, model) in zip(axes, models.items()):
    draws = model.sample_y(X_test, 20, random_state=1)          # [300, 20]
    ax.plot(np.repeat(X_test[:, 0], 20), draws.ravel(), ".", ms=1, alpha=0.3, color="C1",
            label="predictive draws")
    ax.plot(X_train[:, 0], y_train, ".", ms=2, color="0.2", label="training data")
    ax.set_title(name)
    ax.set_xlabel("x")
axes[0].set_ylabel("y")
axes[0].legend(loc="lower left", fontsize="small", markerscale=4)
fig.tight_layout()
