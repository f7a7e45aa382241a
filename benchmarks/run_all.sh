#!/usr/bin/env bash
# Every benchmark of BENCHMARKS.md, one process at a time, 2 threads each.
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
python mnist.py --method sep --threads 2 --max-minutes "${MNIST_MINUTES:-75}" --learning-rate-decay 0.96 --eval-every 2
python uci.py --threads 2 --splits 3 --datasets satimage --fractions 0.20
