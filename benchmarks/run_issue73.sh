#!/usr/bin/env bash
# Issue 73's panel and MNIST runs, one process at a time, one thread each, at one commit: run it from
# a worktree of that commit (git worktree add ../bench COMMIT; PYTHONPATH=../bench/src), so edits
# elsewhere change nothing mid-run (the rows record the commit). Resumable: the panel skips the
# (set, estimator) pairs it has at this commit; a finished step leaves a marker in
# results/.issue73_done. The slow peers stop at the panel's PEER_CAP (defaults_panel.py), evaluated.
set -euo pipefail
cd "$(dirname "$0")"
done_file=results/.issue73_done
touch "$done_file"
step() { local name=$1; shift; grep -qx "$name" "$done_file" || { "$@" && echo "$name" >> "$done_file"; }; }
step panel python defaults_panel.py --threads 1 --skip-done --output defaults_panel_73.jsonl \
    --datasets digits glass new_thyroid wine crabs sonar ionosphere svmguide2 breast_cancer australian pima vehicle vowel \
    banknote waveform_21 satimage shuttle mnist_5000 fashion_mnist_5000 mnist_20000 fashion_mnist_20000 \
    --estimators "alphagp GPClassifier()" "alphagp GPClassifier(method='dirichlet')" "GPyTorch Dirichlet GP" \
    "GPflow SVGP" "GPyTorch SVGP" "scikit-learn GPC" LogisticRegression HistGradientBoosting CatBoost "class frequencies"
step mnist_default python mnist_default.py --threads 1 --max-minutes 30 --output mnist_default.jsonl
