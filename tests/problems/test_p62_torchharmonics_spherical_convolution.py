import pytest
import torch

from tests.problems.helpers import assert_close, assert_differs
from tests.world import GroupRef, run_reference

PID = 62


def dense_partial(psi, x_slab, nlon):
    """sum_{i, lam} psi[k, l, i, lam] * x[b, c, i, (lam + m) mod nlon], in float64, from a dense psi."""
    K, nlat, _ = psi.shape
    psi = psi.to_dense().double().reshape(K, nlat, -1, nlon)
    shift = (torch.arange(nlon)[:, None] + torch.arange(nlon)[None, :]) % nlon  # [lam, m]
    return torch.einsum("kliL,bciLm->bcklm", psi, x_slab.double()[..., shift])


def expected_tiles(runs, W, local_only=None):
    """Independent computation from the global field; with local_only=r, from rank r's data alone."""
    a = 2 if W % 2 == 0 else 1
    P = W // a
    h_loc, w_loc = runs[0].inputs[0].shape[2:]
    nlon = w_loc * a
    cs = 8 // a
    tiles = []
    for r, run in enumerate(runs):
        p, q = divmod(r, a)
        Y = 0
        for pp in range(P):
            # Latitude slab pp of the global input, all longitudes: the tiles of ranks pp*a + j side by side.
            owners = [pp * a + j for j in range(a)]
            if local_only is not None:
                owners = [o if o == local_only else None for o in owners]
            slab = torch.cat(
                [runs[o].inputs[0] if o is not None else torch.zeros_like(runs[0].inputs[0]) for o in owners], dim=-1
            )
            # Channel block qc uses the psi of polar rank pp in azimuth column qc.
            parts = [
                dense_partial(
                    runs[local_only if local_only is not None else pp * a + qc].inputs[1],
                    slab[:, qc * cs : (qc + 1) * cs],
                    nlon,
                )
                for qc in range(a)
            ]
            Y = Y + torch.cat(parts, dim=1)
        Y = Y[..., p * h_loc : (p + 1) * h_loc, q * w_loc : (q + 1) * w_loc]
        weight, bias = run.inputs[2].double(), run.inputs[8].double()
        tiles.append((torch.einsum("ock,bckij->boij", weight, Y) + bias[None, :, None, None]).float())
    return tiles


@pytest.mark.parametrize("W, seed", [(1, 1), (2, 2), (4, 3), (3, 4)])
def test_reference_matches_dense_convolution(W, seed):
    runs = run_reference(PID, W, seed=seed)
    a = 2 if W % 2 == 0 else 1
    for r, run in enumerate(runs):
        p, q = divmod(r, a)
        assert run.inputs[6] == GroupRef(tuple(p * a + j for j in range(a)))
        assert run.inputs[7] == GroupRef(tuple(q + i * a for i in range(W // a)))
    expected = expected_tiles(runs, W)
    for r, run in enumerate(runs):
        assert_close(PID, run.output, expected[r], W, f"rank {r}")
        assert_differs(PID, run.output, torch.zeros_like(expected[r]), W, "zeros")
        assert_differs(PID, run.output, run.inputs[0], W, "input unchanged")
    if W > 1:
        for r, run in enumerate(runs):
            local = expected_tiles(runs, W, local_only=r)[r]
            assert_differs(PID, run.output, local, W, "no communication")
