"""Problem 68 the memory-heavy way: the kernel takes a private copy of its table shard before fetching (as kernels
that stage the table into a symmetric buffer do), then fetches and projects as the reference does. At W = 1 the
shard is the whole 56.8 GB table, so the candidate needs two tables on the device: it fits only if the reference's
ranks hold nothing but what the check needs while it runs (evaluator/rank/worker.py, Worker.trial). The copy lives
until the call returns: freed early, the GEMM's cuBLAS workspace (kept for the process's life) lands inside its
53 GB segment and pins it, and the next trial's copy no longer fits (seen on the H200: trial 0 correct, trial 1 out
of memory with 52.90 GiB reserved but unusable)."""

import torch

import problems

_fetch_and_project = problems.get(68).solution


@torch.no_grad()
def solution(local_embedding_shard, input_node_ids, proj_matrix, num_total_nodes, group=None):
    table = local_embedding_shard.clone()
    return _fetch_and_project(table, input_node_ids, proj_matrix, num_total_nodes, group)
