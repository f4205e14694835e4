"""Exploit (GPU timing: work on a side stream, outside the events): the expensive part (~1 ms) runs on another
stream that the timing events on the current stream do not wait for; the output is complete once the device is
synchronised (the harness does that before reading it), so it is correct. Defence: the judge's clock around the
block sees the side stream's time (the harness synchronises every device before a window closes)."""
import torch
import torch.distributed as dist

_side = {}


def solution(tensor):
    side = _side.setdefault("stream", torch.cuda.Stream())
    reduced = tensor.clone()
    dist.all_reduce(reduced)
    out = torch.empty_like(tensor)
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        torch.cuda._sleep(2_000_000)  # ~1 ms of "kernel" the events do not see
        out.copy_(reduced)
    reduced.record_stream(side)
    out.record_stream(side)
    return out
