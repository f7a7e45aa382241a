"""
Deep-GP regression with predictive intervals
============================================

A one-dimensional problem whose noise grows with the input (the deep-GP paper's heteroscedastic
toy, simplified): a single GP must give every input the same noise, a two-layer deep GP trained
by approximate power EP can widen its predictive distribution where the data spread. alpha = 1
(EP-like) is the paper's choice for the best predictive densities.
"""

# %%
import matplotlib.pyplot as plt
import numpy as np

from alphagp import DeepGPRegressor

rng = np.random.default_rng(0)
x = rng.uniform(-2, 2, 500)
y = np.sin(2 * x) + (0.05 + 0.25 * (x + 2)) * rng.normal(size=500)
X = x[:, None]
X_train, y_train, X_test, y_test = X[:400], y[:400], X[400:], y[400:]

# %%
# One layer (a sparse GP) and two layers, the same budget: 300 epochs of 4 mini-batches.
models = {}
for layers in (1, 2):
    models[layers] = DeepGPRegressor(n_layers=layers, n_inducing=20, alpha=1.0, max_iter=300,
                                     learning_rate=0.01, random_state=0).fit(X_train, y_train)
    print(f"{layers} layer(s):", {k: round(v, 3) for k, v in models[layers].evaluate(X_test, y_test).items()})

# %%
# Predictive mean and a 95 % interval from the predictive mixture's samples: the two-layer
# model's interval follows the growing noise.
grid = np.linspace(-2.2, 2.2, 200)[:, None]
fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
for ax, (layers, model) in zip(axes, models.items()):
    samples = model.sample_y(grid, 500, random_state=1)          # [200, 500]
    low, high = np.percentile(samples, [2.5, 97.5], axis=1)
    ax.fill_between(grid[:, 0], low, high, color="C0", alpha=0.25, label="95 % predictive interval")
    ax.plot(grid[:, 0], model.predict(grid), "C0", label="predictive mean")
    ax.plot(x, y, ".", ms=2, color="0.3", label="data")
    ax.set_title(f"{layers} layer(s), alpha = 1")
    ax.set_xlabel("x")
axes[0].set_ylabel("y")
axes[0].legend(loc="upper left", fontsize="small")
fig.tight_layout()
