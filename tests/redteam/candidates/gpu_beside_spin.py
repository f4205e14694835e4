"""Exploit (GPU timing: work beside the judge's spin). Before each timed call the harness queues a one-thread spin
kernel ahead of the start event, so that the host can queue the call while the GPU waits (evaluator/rank/timed.py). Work
queued on another stream that does not wait for the current one runs on the idle SMs during that spin: the events on
the current stream time an empty window, and the judge's wall clock holds the spin on both sides either way. The
output is complete once the device is synchronised (the harness does that before reading it), so it is correct.
Defence: probe blocks with no spin, held to the judge's wall clock (evaluator/timing/rules.py, _probe_check); it catches
this where the hidden work exceeds the allowance (~0.5 ms a call for one pair), not on small calls
(docs/threat-model.md, "Work beside the spin")."""
import torch
import torch.distributed as dist

_side = {}


def solution(tensor):
    side = _side.setdefault("stream", torch.cuda.Stream())
    tensor.record_stream(side)
    with torch.cuda.stream(side):  # no wait_stream: the inputs were ready before the spin began
        out = tensor.clone()
        dist.all_reduce(out)
    out.record_stream(torch.cuda.current_stream())
    return out
