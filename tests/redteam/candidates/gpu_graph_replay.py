"""Exploit (GPU timing: CUDA graph replay of stale results): capture the work once on the first call's buffers and
replay the graph on every later call, whatever the new inputs are - the replay is very fast and returns the answer
for the first inputs. Defence: every trial and every kept timed call has inputs of its own: the stale answer is
wrong."""
import torch
import torch.distributed as dist

_state = {}


def solution(tensor):
    if "graph" not in _state:
        static_in = tensor
        out = torch.empty_like(tensor)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            out.copy_(static_in).mul_(1)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out.copy_(static_in).mul_(1)
        _state.update(graph=graph, out=out)
    _state["graph"].replay()
    dist.all_reduce(_state["out"])
    return _state["out"]
