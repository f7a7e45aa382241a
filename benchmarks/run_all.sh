#!/usr/bin/env bash
# Every benchmark of BENCHMARKS.md, one process at a time, each with its thread count set.
set -euo pipefail
cd "$(dirname "$0")"
python learning_rate.py --threads 2
python learning_rate.py --threads 2 --rates 0.1 0.3 1.0 --datasets vehicle vowel wine new_thyroid satimage
python uci.py --threads 2 --splits 5 --datasets glass new_thyroid svmguide2 vehicle vowel waveform_21 wine
python uci.py --threads 2 --splits 5 --datasets satimage --fractions 0.05 0.10
python uci.py --threads 2 --splits 5 --learning-rate 0.3 --output uci_lr0.3.jsonl --datasets glass new_thyroid svmguide2 vehicle vowel waveform_21 wine
python uci.py --threads 2 --splits 5 --learning-rate 0.3 --output uci_lr0.3.jsonl --datasets satimage --fractions 0.05 0.10
python uci.py --threads 2 --splits 5 --datasets satimage --fractions 0.05 --learning-rate 0.1 --output uci_satellite_M5_timing.jsonl
python time_to_nll.py --threads 2 --rates 0.1 0.3 1.0
python speed.py --threads 2
python memory.py --threads 2
python mnist.py --method sep --threads 1 --max-minutes "${MNIST_MINUTES:-100}" --max-epochs 100 --learning-rate 0.01 \
    --learning-rate-decay 0.95 --eval-every 2 --output mnist_validated.jsonl
python fit_time.py --threads 1 --splits 5
python threads.py --n-jobs 1 2 --repeats 3
python exact_posterior.py --seeds 0 1 2 3 4
python uci.py --threads 2 --splits 3 --datasets satimage --fractions 0.20
# issue 10: every multi-class method
python uci.py --threads 1 --splits 5 --methods gfitc ep sep vi --output uci_table2.jsonl \
    --datasets glass new_thyroid svmguide2 vehicle vowel waveform_21 wine
python uci.py --threads 1 --splits 3 --methods gibbs laplace label_regression pep:0.001 pep:0.5 pep:1 \
    --output uci_baselines.jsonl --datasets glass new_thyroid svmguide2 vehicle vowel waveform_21 wine
python inducing_placement.py --threads 1 --methods gfitc ep sep pep:0.5 vi --M 1 4 16 64
