"""
SEP on several processes
========================

SEP with torch.distributed: every process ends with the same model, equal to the one-process
fit up to rounding. Each process owns a block of the classes (here 4 classes: 2 each) and does
only their M x M algebra; per mini-batch the processes exchange the batch's marginals of their
classes. With more processes than classes, the rest also split each batch's rows. Every
process holds the whole model (the blocks are copied to all at each epoch's end), so memory
per process is that of a one-process fit; the time per epoch is what divides. On one machine,
two processes with one thread each::

    torchrun --standalone --nproc-per-node=2 examples/distributed_fit.py

Across two machines (run on each, with the first machine's address; ``--node-rank`` 0 and 1)::

    torchrun --nnodes=2 --node-rank=0 --nproc-per-node=2 --master-addr=10.0.0.1 --master-port=29500 \\
        examples/distributed_fit.py

``GPClassifier(distributed=True)`` initialises the process group from torchrun's environment
(gloo on the CPU, nccl with ``device="cuda"``). Every process passes the same data (a NumPy
memory-map is read only where its rows are needed) and ends with the same model; the first
process prints the metrics. A checkpoint path must be on a file system every process sees.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
from sklearn.model_selection import train_test_split

from alphagp import GPClassifier
from alphagp.data import load_bundled


def main() -> None:
    torch.set_num_threads(1)
    X, y = load_bundled("vehicle")
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, random_state=0, stratify=y)
    clf = GPClassifier(method="sep", n_inducing=20, batch_size=100, max_iter=30, random_state=0,
                       distributed=True).fit(X_train, y_train)
    metrics = clf.evaluate(X_test, y_test)
    if dist.get_rank() == 0:
        print(f"{dist.get_world_size()} processes: test error {metrics['error']:.3f}, NLL {metrics['nll']:.3f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
