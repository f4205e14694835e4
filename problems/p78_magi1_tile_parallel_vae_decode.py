"""78 magi1_tile_parallel_vae_decode: MAGI-1 style tile-parallel tiled VAE decode with overlap blending, the decoder
replaced by trilinear upsampling. Tiles are dealt to ranks by size, decoded by their owner from the owner's own z,
gathered to all ranks (all-gather-v through all_to_all_single), blended with their unblended neighbours by the
owner, gathered again and assembled.

Interface as PKB: ``solution(z, tile_latent_min_length, tile_latent_min_height, tile_latent_min_width,
spatial_tile_overlap_factor, temporal_tile_overlap_factor, spatial_upsample, temporal_upsample, sr_ratio=1,
first_frame_as_image=False, group=None)`` -> (1, 3, 24, 720, 720) bf16, identical on every rank. z is always bf16
(D is ignored) and rank-specific, so the output is a patchwork: tile i comes from the z of its owner, and the
size-sorted round-robin assignment is part of the semantics.

Decisions (spec Pitfalls):
- Only channels 0-2 of a decoded tile are kept, and trilinear interpolation is per channel, so the reference
  interpolates just those three (bitwise identical to decoding all 16, as the spec notes).
- Blending follows PKB's bf16 arithmetic (each weighted term rounded to bf16, then the sum); blending in fp32 and
  rounding once differs by at most one bf16 step and passes the default tolerance (outputs have std ~0.5).
- The shape exchanges use all_gather_object, as PKB; the tile exchanges use all_to_all_single with every rank
  sending its whole buffer to every rank.
- Reduced (CPU development only): z is (1, 16, 6, 30, 30) instead of (1, 16, 6, 90, 90): 8 tiles of which the
  last row/column is 6 latent rows, so the blend extent is capped by the neighbour's size; the output is
  (1, 3, 24, 240, 240). The scalar arguments follow the spec.
"""

import math

import torch
import torch.distributed as dist
import torch.nn.functional as F

from problems.base import InputContext, Problem


def make_inputs(ctx: InputContext):
    side = 30 if ctx.reduced else 90
    ctx.seed(ctx.rank)
    z = torch.randn(1, 16, 6, side, side, dtype=torch.bfloat16, device=ctx.device)
    return z, 3, 32, 32, 0.25, 0.0, 8, 4, 1, False, None


def assign_tiles(counts: list[int], W: int) -> list[list[int]]:
    """Sort tile ids by element count, descending and stable, and deal them round-robin to the W ranks."""
    order = sorted(range(len(counts)), key=lambda i: -counts[i])
    return [order[r::W] for r in range(W)]


def _blend(prev: torch.Tensor, cur: torch.Tensor, extent: int, dim: int) -> torch.Tensor:
    """cur[j] = prev[n_prev - e + j] * (1 - j/e) + cur[j] * (j/e) along ``dim`` for j < e, in bf16 steps as PKB."""
    e = min(prev.shape[dim], cur.shape[dim], extent)
    if e <= 0:
        return cur
    shape = [1] * cur.dim()
    shape[dim] = e
    up = torch.tensor([j / e for j in range(e)], dtype=torch.float32, device=cur.device).view(shape)
    down = torch.tensor([1 - j / e for j in range(e)], dtype=torch.float32, device=cur.device).view(shape)
    old = prev.narrow(dim, prev.shape[dim] - e, e).float()
    new = cur.narrow(dim, 0, e).float()
    mixed = (old * down).to(cur.dtype).float() + (new * up).to(cur.dtype).float()
    out = cur.clone()
    out.narrow(dim, 0, e).copy_(mixed.to(cur.dtype))
    return out


def _all_gather_v(local: list[torch.Tensor], group, W: int, device) -> list[torch.Tensor]:
    """Every rank's list of tiles, in rank order: shapes by all_gather_object, data by a variable all-to-all."""
    shapes = [None] * W
    dist.all_gather_object(shapes, [tuple(t.shape) for t in local], group=group)
    send = torch.cat([t.reshape(-1) for t in local]) if local else torch.empty(0, dtype=torch.bfloat16, device=device)
    sizes = [sum(math.prod(s) for s in rank_shapes) for rank_shapes in shapes]
    recv = torch.empty(sum(sizes), dtype=send.dtype, device=send.device)
    dist.all_to_all_single(recv, send.repeat(W), sizes, [send.numel()] * W, group=group)
    tiles, offset = [], 0
    for rank_shapes in shapes:
        for s in rank_shapes:
            tiles.append(recv[offset : offset + math.prod(s)].view(s))
            offset += math.prod(s)
    return tiles


@torch.no_grad()
def solution(
    z,
    tile_latent_min_length,
    tile_latent_min_height,
    tile_latent_min_width,
    spatial_tile_overlap_factor,
    temporal_tile_overlap_factor,
    spatial_upsample,
    temporal_upsample,
    sr_ratio=1,
    first_frame_as_image=False,
    group=None,
):
    distributed = dist.is_available() and dist.is_initialized()
    W = dist.get_world_size(group) if distributed else 1
    rank = dist.get_rank(group) if distributed else 0

    length = tile_latent_min_length + (1 if first_frame_as_image else 0)
    up = spatial_upsample * sr_ratio
    st_t = int(length * (1 - temporal_tile_overlap_factor))
    st_h = int(tile_latent_min_height * (1 - spatial_tile_overlap_factor))
    st_w = int(tile_latent_min_width * (1 - spatial_tile_overlap_factor))
    if min(st_t, st_h, st_w) <= 0:
        raise ValueError("tile overlap leaves a non-positive latent stride")
    dec_t, dec_h, dec_w = length * temporal_upsample, tile_latent_min_height * up, tile_latent_min_width * up
    bt = int(dec_t * temporal_tile_overlap_factor)
    bh, bw = int(dec_h * spatial_tile_overlap_factor), int(dec_w * spatial_tile_overlap_factor)
    kt, kh, kw = dec_t - bt, dec_h - bh, dec_w - bw

    T, Hgt, Wid = z.shape[2:]
    nt, nh, nw = math.ceil(T / st_t), math.ceil(Hgt / st_h), math.ceil(Wid / st_w)
    index = lambda t, h, w: (t * nh + h) * nw + w  # noqa: E731
    latent = {}
    for t in range(nt):
        for h in range(nh):
            for w in range(nw):
                latent[index(t, h, w)] = (
                    slice(st_t * t, st_t * t + length),
                    slice(st_h * h, st_h * h + tile_latent_min_height),
                    slice(st_w * w, st_w * w + tile_latent_min_width),
                )
    counts = [z[:, :, a, b, c].numel() for a, b, c in (latent[i] for i in range(len(latent)))]
    owners = assign_tiles(counts, W)
    mine = owners[rank]
    global_order = [i for rank_tiles in owners for i in rank_tiles]

    # Decode the owned tiles from this rank's z: trilinear upsampling of channels 0-2 (repeated if fewer), fp32.
    decoded_local = []
    for i in mine:
        a, b, c = latent[i]
        tile = z[:, :, a, b, c]
        if tile.shape[1] < 3:
            tile = tile.repeat(1, math.ceil(3 / tile.shape[1]), 1, 1, 1)
        tile = F.interpolate(
            tile[:, :3].float(), scale_factor=(temporal_upsample, up, up), mode="trilinear", align_corners=False
        )
        decoded_local.append(tile.to(torch.bfloat16))
    gathered = _all_gather_v(decoded_local, group, W, z.device) if W > 1 else decoded_local
    decoded = dict(zip(global_order, gathered, strict=False))

    # Blend each owned tile with its unblended neighbours (time, then height, then width) and crop.
    blended_local = []
    for i in mine:
        t, h, w = i // (nh * nw), (i // nw) % nh, i % nw
        cur = decoded[i]
        if t > 0:
            cur = _blend(decoded[index(t - 1, h, w)], cur, bt, 2)
        if h > 0:
            cur = _blend(decoded[index(t, h - 1, w)], cur, bh, 3)
        if w > 0:
            cur = _blend(decoded[index(t, h, w - 1)], cur, bw, 4)
        blended_local.append(cur[:, :, :kt, :kh, :kw].contiguous())
    gathered = _all_gather_v(blended_local, group, W, z.device) if W > 1 else blended_local
    blended = dict(zip(global_order, gathered, strict=False))

    frames = []
    for t in range(nt):
        rows = [torch.cat([blended[index(t, h, w)] for w in range(nw)], dim=4) for h in range(nh)]
        frames.append(torch.cat(rows, dim=3))
    return torch.cat(frames, dim=2)


PROBLEM = Problem(id=78, make_inputs=make_inputs, solution=solution)
