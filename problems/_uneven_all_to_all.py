"""List-form all_to_all that also works on gloo when the chunks have different sizes.

Shared by problems 59-73 (gsplat, DISCO, ...). NCCL's ``dist.all_to_all`` accepts chunks of any size; gloo's
``alltoall`` insists that every input and output chunk has the same shape. On gloo with unequal chunks we send the
flattened chunks with one ``all_to_all_single`` (variable splits), which moves exactly the same bytes.
"""

import torch
import torch.distributed as dist


def all_to_all_list(outputs: list[torch.Tensor], inputs: list[torch.Tensor], group=None) -> None:
    """``dist.all_to_all(outputs, inputs, group)``: input i goes to group rank i, output j comes from rank j."""
    shapes = {tuple(t.shape) for t in list(outputs) + list(inputs)}
    if dist.get_backend(group) != "gloo" or len(shapes) == 1:
        dist.all_to_all(outputs, inputs, group=group)
        return
    send = torch.cat([t.reshape(-1) for t in inputs])
    recv = torch.empty(sum(o.numel() for o in outputs), dtype=send.dtype, device=send.device)
    dist.all_to_all_single(recv, send, [o.numel() for o in outputs], [t.numel() for t in inputs], group=group)
    for out, piece in zip(outputs, recv.split([o.numel() for o in outputs]), strict=False):
        out.copy_(piece.view(out.shape))
