"""Markdown tables from benchmarks/results/*.jsonl, beside the papers' numbers.

    python benchmarks/report.py uci      # Tables 2 and 3 of the scalable-EP paper (EP and SEP)
    python benchmarks/report.py table2   # the same, complete: GFITC, EP, SEP and VI (uci_table2.jsonl)
    python benchmarks/report.py alpharanks uci_alpha   # Figure 1 of the alpha paper: ranks over (method, alpha)
    python benchmarks/report.py select   # settings chosen on validation splits (select_validation.jsonl)
    python benchmarks/report.py sattime  # EP paper Figure 4: Satellite NLL against time, M = 4, 20, 100
    python benchmarks/report.py placement   # inducing-point placement: error / NLL per method and M or alpha
    python benchmarks/report.py mnistmethods   # MNIST: SEP, PEP alpha = 0.5, EP and VI against time
    python benchmarks/report.py mnistalpha   # alpha paper Figure 4: MNIST, each method at each alpha, and VI
    python benchmarks/report.py distributed   # distributed fits: 1 process against rows or classes split
    python benchmarks/report.py tta   # time to accuracy beside GPflow and GPyTorch
    python benchmarks/report.py profile   # where a step's time goes (profile_step.py)
    python benchmarks/report.py mnistsites   # MNIST: per-point EP/PEP learning the inducing inputs
    python benchmarks/report.py gpflow   # alphagp's VI beside GPflow's SVGP (vi_vs_gpflow.jsonl)
    python benchmarks/report.py baselines   # Appendix C of the alpha paper: MCMC, Laplace, label regression, PEP
    python benchmarks/report.py uci uci_lr0.1   # the same for another results file
    python benchmarks/report.py ucicompare uci uci_lr0.3 uci_lr0.1   # test NLL of UCI runs side by side
    python benchmarks/report.py mnist    # test error / NLL against training time (mnist.jsonl)
    python benchmarks/report.py mnist mnist_long   # the same for another results file
    python benchmarks/report.py speed    # step time against the dense floor
    python benchmarks/report.py memory   # SEP peak memory against N
    python benchmarks/report.py lr       # initial learning rate of batch training
    python benchmarks/report.py ttn      # training time to the paper's test NLL (Satellite), split-averaged curves
    python benchmarks/report.py fittime  # full fit per split beside the R code, time to target per split
    python benchmarks/report.py sattiming   # older Satellite whole-fit timings (mean ± standard error)
    python benchmarks/report.py mnistval # MNIST with a validation split: evaluations and the selected model
    python benchmarks/report.py threads  # fit time against n_jobs, idle and beside a busy process
    python benchmarks/report.py exact    # EP, SEP, power EP against the Gibbs sampler of the exact posterior
    python benchmarks/report.py likelihoods   # logistic-softmax paper Figure 4: four likelihoods on Gaussian mixtures
    python benchmarks/report.py augwine  # logistic-softmax paper Figure 5: augmented VI and VI against Gibbs
    python benchmarks/report.py auginducing   # logistic-softmax paper Figure 6: Shuttle, M, shared or not
    python benchmarks/report.py dgpsynth   # deep-GP paper Table 1 / C.6: synthetic bimodal and heteroscedastic
    python benchmarks/report.py dgpuci     # deep-GP paper Tables C.7-C.12: UCI sets, mean ± s.e. over splits
    python benchmarks/report.py dgpalphas wine_quality_red 0 2   # one set, split and L at every alpha fitted
    python benchmarks/report.py dgpdepth 0 0.5   # L = 2 beside L = 3 on each regression set, one split and alpha
    python benchmarks/report.py authorsdgp # the authors' deep-GP code beside ours on the same fits
    python benchmarks/report.py dgpgpytorch   # alphagp's deep GP beside GPyTorch's on the same problems
    python benchmarks/report.py dgpmnist   # deep-GP paper Tables C.13 / C.14: MNIST
    python benchmarks/report.py edges   # model files, the command line and augmented VI's start at the edges
    python benchmarks/report.py budgets | exactepcost   # issue 80: max_time honoured in fresh processes; exact EP against its pair factors
    python benchmarks/report.py guard guard_contracts exact_posterior_guard   # a refactor's numbers, before and after
    python benchmarks/report.py class_weights | conformal | tables | ood | streaming | quasi_newton | mnist_default | mnistheadline
    python benchmarks/report.py dgpranks | dgpranksfig   # deep-GP paper Figs. 6-8: ranks of alpha per depth
    python benchmarks/report.py ephyper | vigap | likmaps   # the papers' figures of issue 61
    python benchmarks/report.py closedform | closedformpanel | epexact | closedformlevers   # issue 67
    python benchmarks/report.py exactep | capacity | panel73   # issue 73: exact EP beside GPC, the closed form's M, the panel
    python benchmarks/report.py coverage   # the counts behind the papers' coverage rows
    python benchmarks/report.py realtables real_tables@<commit>   # issue 79: the development panel of real tables
    python benchmarks/report.py looleak | cfstarts | numeric79 | kernelterms | profile | cfpredict   # issue 79: its studies

The reports live in one module per document of benchmarks/docs/ (report_ep_paper, report_alpha_paper,
report_logistic_softmax, report_deep_gp, report_defaults with report_closed_form and report_gold_standard, report_speed,
report_methods, report_edges, report_coverage, report_real_tables; shared helpers in report_common); this module only names them.
"""

from __future__ import annotations

import sys

from report_alpha_paper import REPORTS as ALPHA_PAPER
from report_closed_form import REPORTS as CLOSED_FORM
from report_coverage import REPORTS as COVERAGE
from report_deep_gp import REPORTS as DEEP_GP
from report_defaults import REPORTS as DEFAULTS
from report_edges import REPORTS as EDGES
from report_ep_paper import REPORTS as EP_PAPER
from report_gold_standard import REPORTS as GOLD_STANDARD
from report_logistic_softmax import REPORTS as LOGISTIC_SOFTMAX
from report_methods import REPORTS as METHODS
from report_real_tables import REPORTS as REAL_TABLES
from report_speed import REPORTS as SPEED

#: the reports by name: ``python report.py NAME ARGS...`` calls ``REPORTS[NAME](*ARGS)``
REPORTS = {**EP_PAPER, **ALPHA_PAPER, **LOGISTIC_SOFTMAX, **DEEP_GP, **DEFAULTS, **CLOSED_FORM, **SPEED, **METHODS,
           **EDGES, **GOLD_STANDARD, **COVERAGE, **REAL_TABLES}


if __name__ == "__main__":
    REPORTS[sys.argv[1] if len(sys.argv) > 1 else "uci"](*sys.argv[2:])
