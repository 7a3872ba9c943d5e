"""Train a small CTR model with DistributedDataParallel (gloo, CPU) for one epoch.

Launch with torchrun; every rank reads its own share of the rows through ``TorchAsyncItr``
(rank and world size come from ``torch.distributed``) and the script checks that all ranks ran
the same number of steps over disjoint rows::

    python -m torch.distributed.run --standalone --nproc_per_node=2 scripts/ddp_train.py \
        --data /path/to/parquet --cats c1,c2 --conts x2 --label label
"""

from __future__ import annotations

import argparse
import os
import time

import torch
import torch.distributed as dist

# Imported before init_process_group on purpose. DDP imports it on first use (through
# torch.distributed._shard), and its functions' default argument `group=group.WORLD`,
# evaluated then, would hold the world process group, and with it gloo's worker threads,
# for the rest of the process: destroy_process_group() could not stop them (see main).
import torch.distributed.nn  # noqa: F401
from torch.nn.parallel import DistributedDataParallel

import tabflow as nvt
from tabflow.loader.torch import DLDataLoader, TorchAsyncItr


class TinyCTR(torch.nn.Module):
    """Hashed embeddings of the categorical columns plus the continuous ones, then an MLP."""

    def __init__(self, n_cats: int, n_conts: int, buckets: int = 64, width: int = 4) -> None:
        super().__init__()
        self.buckets = buckets
        self.embedding = torch.nn.Embedding(buckets, width)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(n_cats * width + n_conts, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))

    def forward(self, x_cat: torch.Tensor, x_cont: torch.Tensor) -> torch.Tensor:
        embedded = self.embedding(x_cat % self.buckets).flatten(1)
        return self.mlp(torch.cat([embedded, torch.nan_to_num(x_cont)], dim=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="parquet file or directory")
    parser.add_argument("--cats", default="c1,c2")
    parser.add_argument("--conts", default="x2")
    parser.add_argument("--label", default="label")
    parser.add_argument("--id-column", default="row_id", help="row id column used to check disjointness ('' to skip)")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--part-size", default="1", help="partition size, e.g. 64MB (1 = one row group each)")
    args = parser.parse_args()

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    cats, conts = args.cats.split(","), [c for c in args.conts.split(",") if c]
    extra = [args.id_column] if args.id_column else []
    part_size = int(args.part_size) if args.part_size.isdigit() else args.part_size
    dataset = nvt.Dataset(args.data, engine="parquet", part_size=part_size, cpu=True)
    itr = TorchAsyncItr(dataset, batch_size=args.batch_size, cats=[*cats, *extra], conts=conts,
                        labels=[args.label], shuffle=True, parts_per_chunk=2)
    loader = DLDataLoader(itr, collate_fn=lambda b: (b[0], b[1], b[2].long()), batch_size=None)

    model = DistributedDataParallel(TinyCTR(len(cats), len(conts)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    loss_fn = torch.nn.CrossEntropyLoss()
    steps, ids = 0, []
    with loader:
        for x_cat, x_cont, y in loader:
            if extra:
                ids.append(x_cat[:, -1].clone())
                x_cat = x_cat[:, :-1]
            optimizer.zero_grad()
            loss = loss_fn(model(x_cat, x_cont), y)
            loss.backward()
            optimizer.step()
            steps += 1

    counts = [torch.zeros(2, dtype=torch.int64) for _ in range(world)]
    dist.all_gather(counts, torch.tensor([steps, itr.num_rows_processed]))
    step_counts = [int(c[0]) for c in counts]
    assert len(set(step_counts)) == 1, f"ranks ran different numbers of steps: {step_counts}"
    assert steps == len(loader), (steps, len(loader))
    if extra:
        mine = torch.cat(ids) if ids else torch.zeros(0, dtype=torch.int64)
        gathered = [None] * world
        dist.all_gather_object(gathered, mine.tolist())
        every = [i for part in gathered for i in part]
        assert len(every) == len(set(every)) == (dataset.num_rows // world) * world, "rank shares overlap"
    if rank == 0:
        print(f"ddp ok: world={world} steps_per_rank={steps} rows={sum(int(c[1]) for c in counts)} loss={loss.item():.4f}")

    # Stop gloo's worker threads before returning. A worker drops each collective's tensors
    # after the collective completes, which takes the GIL; if the interpreter has begun
    # shutting down by then, CPython ends the thread inside a C++ destructor and the process
    # aborts ("terminate called without an active exception"). The process group joins its
    # workers when its last reference goes: DDP holds one, the registry the others.
    del model, optimizer
    dist.destroy_process_group()
    _check_gloo_workers_stopped()


def _gloo_worker_threads() -> int:
    """Live threads named by gloo's process group workers (Linux names threads; else 0)."""
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return 0
    count = 0
    for task in tasks:
        try:
            with open(f"/proc/self/task/{task}/comm") as f:
                count += f.read().strip() == "pt_gloo_runloop"
        except OSError:  # ended meanwhile
            pass
    return count


def _check_gloo_workers_stopped(timeout_s: float = 5.0) -> None:
    """Fail plainly, rather than by a rare abort at exit, if the process group outlives us."""
    deadline = time.monotonic() + timeout_s
    # A joined thread can stay listed for an instant while the kernel reaps it.
    while _gloo_worker_threads():
        if time.monotonic() > deadline:
            raise RuntimeError(
                "gloo worker threads are still running after destroy_process_group(): something "
                "still references the process group, and a worker that releases a tensor once "
                "interpreter shutdown has begun aborts the process"
            )
        time.sleep(0.01)


if __name__ == "__main__":
    main()
