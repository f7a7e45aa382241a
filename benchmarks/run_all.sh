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
S="glass new_thyroid svmguide2 vehicle vowel waveform_21 wine"
for lr in 0.01 0.05; do   # settings chosen on validation splits, never on test rows
    python uci.py --threads 1 --datasets $S satimage --fractions 0.05 0.1 --splits 3 --methods vi --learning-rate $lr \
        --validation 0.2 --output select_validation.jsonl
done
for tol in 1e-3 1e-5; do
    python uci.py --threads 1 --datasets $S --fractions 0.05 --splits 3 --methods gfitc \
        --method-params "{\"ep_tol\": $tol}" --validation 0.2 --output select_validation.jsonl
done
python uci.py --threads 1 --splits 5 --methods gfitc ep sep vi --output uci_table2.jsonl --datasets $S
python uci.py --threads 1 --splits 5 --methods gfitc ep sep vi --output uci_table2.jsonl --datasets satimage
python uci.py --threads 1 --splits 3 --methods gibbs laplace label_regression pep:0.001 pep:0.5 pep:1 \
    --output uci_baselines.jsonl --datasets glass new_thyroid svmguide2 vehicle vowel waveform_21 wine
python inducing_placement.py --threads 1 --M 1 4 16 64 256
python inducing_placement.py --threads 1 --methods pep apep arpep rpapep --alphas 0.001 0.5 1 --M 128 --n-train 1000 \
    --max-iter 500 --figure inducing_placement_alpha.png
specs=""; for m in pep apep arpep rpapep; do for a in 0.001 0.2 0.4 0.5 0.6 0.8 1; do specs="$specs $m:$a"; done; done
python uci.py --threads 1 --datasets $S --fractions 0.1 --splits 3 --methods $specs --output uci_alpha.jsonl
python time_to_nll.py --threads 1 --methods gfitc sep vi --inducing 4 20 100 --rates default --splits 3 \
    --output satellite_time.jsonl
[ -x peers/.venv-gpflow/bin/python ] || bash peers/install_gpflow.sh
python vi_vs_gpflow.py --splits 3 --output vi_vs_gpflow.jsonl
for m in sep pep:0.5 vi; do
    python mnist.py --method $m --threads 1 --max-minutes 8 --eval-every 1 --output mnist_methods.jsonl
done
# deep GPs (issue 13): the synthetic problems, UCI at a tenth of the paper's iterations, beside GPyTorch
python dgp_synthetic.py --threads 2 --alphas 0.001 0.5 1.0 --plot results/dgp_synthetic.png
python dgp_synthetic.py --threads 2 --alphas 0.1 0.2 0.3 0.4 0.6 0.7 0.8 0.9
[ -x peers/.venv-gpytorch/bin/python ] || bash peers/install_gpytorch.sh
python dgp_gpytorch.py --threads 2 --problems heteroscedastic boston --alphas 0.001 1 --splits 0 --iterations 2000
python dgp_uci.py --threads 2 --datasets boston kin8nm glass waveform_21 pima --layers 2 --alphas 0.001 0.5 1 \
    --splits 0 1 --iterations 2000
python dgp_uci.py --threads 2 --datasets boston --layers 2 --alphas 0.001 0.5 1 --splits 2 3 4 --iterations 2000
python dgp_uci.py --threads 2 --datasets boston --layers 3 --alphas 0.001 0.5 1 --splits 0 --iterations 2000
python dgp_mnist.py --threads 2 --epochs 3 --alphas 0.001 0.5 1
python dgp_mnist.py --threads 2 --epochs 10 --alphas 0.5

# Trust at the edges (issue 23): model files, the command line, augmented VI's start
python edges.py --threads 1 --seconds 30 --flips 400 --splits 3

# The papers' figures first drawn, and the papers' optimiser (issue 61)
python ep_hyper_updates.py --threads 1 --splits 0 1 2
python ep_hyper_updates.py --threads 1 --splits 0 1 2 --datasets glass new_thyroid svmguide2 vowel waveform_21 wine
python likelihood_maps.py --threads 1 --plot likelihood_maps.png
python airline.py --threads 1 --minutes 20 --methods vi --skip-done
python augmented_inducing.py --threads 1 --epochs 10 --M 5 10 20 50 100 --inducing-set one
python augmented_inducing.py --threads 1 --epochs 200 --M 20 --inducing-set one
for m in arpep rpapep apep; do
    python quasi_newton.py --threads 1 --datasets vehicle wine --method $m --alpha 0.5 --lbfgs-steps 100
done
python active_learning.py --threads 1 --repetitions 5 --skip-done --methods pep:0.001 pep:0.5 pep:1 \
    apep:0.001 apep:0.5 apep:1 arpep:0.001 arpep:0.5 arpep:1 rpapep:0.001 rpapep:0.5 rpapep:1
python dgp_uci.py --threads 1 --datasets pima --layers 2 --alphas 0.001 0.5 1 --splits 2 3 \
    --iterations 2000

# Ordered classes beside their peers (issue 62)
python ordinal.py --threads 1 --splits 0 1 2 --skip-done
