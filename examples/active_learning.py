"""
Active learning: label the most uncertain point
===============================================

Active learning with alphagp (alpha paper section 5.6): label the most uncertain pool point.
Starts from 2 labelled points per class of the bundled Vehicle data, then adds one point per
round, chosen either by the largest predictive entropy of a PEP (alpha = 0.5) classifier or
at random, and prints the test error of both after every few rounds::

    python examples/active_learning.py --rounds 30
"""

from __future__ import annotations

import argparse

import numpy as np
from sklearn.model_selection import train_test_split

from alphagp import GPClassifier
from alphagp.active import most_uncertain
from alphagp.data import load_bundled


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    X, y = load_bundled("vehicle")
    X_pool, X_test, y_pool, y_test = train_test_split(X, y, test_size=0.3, random_state=args.seed, stratify=y)
    rng = np.random.default_rng(args.seed)
    start = np.concatenate([rng.choice(np.flatnonzero(y_pool == c), 2, replace=False) for c in np.unique(y)])
    labelled = {"entropy": list(start), "random": list(start)}
    print("round  labelled  error(entropy)  error(random)")
    for r in range(args.rounds + 1):
        errors = {}
        for rule, idx in labelled.items():
            clf = GPClassifier(method="pep", alpha=0.5, n_inducing=len(idx), max_iter=60, random_state=args.seed)
            clf.fit(X_pool[idx], y_pool[idx])
            errors[rule] = 1.0 - clf.score(X_test, y_test)
            rest = np.setdiff1d(np.arange(len(y_pool)), idx)
            pick = rest[most_uncertain(clf, X_pool[rest])[0]] if rule == "entropy" else rng.choice(rest)
            idx.append(int(pick))
        if r % 5 == 0:
            print(f"{r:5d}  {len(start) + r:8d}  {errors['entropy']:14.3f}  {errors['random']:13.3f}", flush=True)


if __name__ == "__main__":
    main()
