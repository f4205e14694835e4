"""Problem 68 the memory-heavy way: the kernel takes a private copy of its table shard before fetching (as kernels
that stage the table into a symmetric buffer do). At W = 1 the shard is the whole 56.8 GB table, so the candidate
needs two tables on the device: it fits only if the reference's ranks hold nothing but what the check needs while
it runs (evaluator/rank_worker.py, Worker.trial). The copy lives until the call returns: freed early, the GEMM's cuBLAS
workspace (kept for the process's life) lands inside its 53 GB segment and pins it, and the next trial's copy no
longer fits (seen on the H200: trial 0 correct, trial 1 out of memory with 52.90 GiB reserved but unusable)."""
import torch
import torch.distributed as dist


@torch.no_grad()
def solution(local_embedding_shard, input_node_ids, proj_matrix, num_total_nodes, group=None):
    table = local_embedding_shard.clone()
    W, rank = dist.get_world_size(group), dist.get_rank(group)
    shard = -(-num_total_nodes // W)
    owner = torch.clamp(input_node_ids // shard, max=W - 1)
    order = torch.sort(owner, stable=True).indices
    send_counts = torch.bincount(owner, minlength=W)
    recv_counts = torch.empty_like(send_counts)
    dist.all_to_all_single(recv_counts, send_counts, group=group)
    sent, received = send_counts.tolist(), recv_counts.tolist()
    asked = input_node_ids.new_empty(sum(received))
    dist.all_to_all_single(asked, input_node_ids[order], received, sent, group=group)
    rows = table[asked - rank * shard]
    fetched = rows.new_empty(len(input_node_ids), rows.shape[1])
    dist.all_to_all_single(fetched, rows, sent, received, group=group)
    embeddings = torch.empty_like(fetched)
    embeddings[order] = fetched
    return embeddings @ proj_matrix
