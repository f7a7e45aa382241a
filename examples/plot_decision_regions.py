"""
Decision regions and inducing points
====================================

On a 2-D problem the whole model fits on one figure: the predicted class over the plane, faded
where the classifier is unsure, and the inducing points that summarise the data (here one set
per class, learnt with the kernel).
"""

# %%
from sklearn.datasets import make_moons

from alphagp import GPClassifier
from alphagp.plotting import plot_decision_regions

X, y = make_moons(n_samples=300, noise=0.25, random_state=0)
clf = GPClassifier(method="ep", n_inducing=10, random_state=0).fit(X, y)
print("training error:", round(1 - clf.score(X, y), 3))
fig = plot_decision_regions(clf, X, y, title="EP, 10 inducing points per class")

if __name__ == "__main__":              # run as a script: show the figure (the gallery captures it)
    import matplotlib.pyplot as plt
    plt.show()
