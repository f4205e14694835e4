"""evaluator/nulls.py: the ``nocomm`` null's local-only collectives. all_to_all_single with uneven split sizes (the
count exchange, then the data, as problems 64, 68, 70 and 78 do) must give an output of the size its caller allocated
from the split sizes, with this rank's own chunk in place and zeros where other ranks' chunks would land, so that the
local-only reference runs to a wrong answer (``incorrect``) instead of crashing (``runtime_error``)."""

import pytest
import torch
import torch.distributed as dist

from evaluator import judge, nulls
from evaluator.contract import schema


@pytest.fixture
def rank_1_of_3(monkeypatch):
    """The stand-ins only ask torch.distributed for the rank and the world size: no process group needed."""
    monkeypatch.setattr(dist, "get_rank", lambda group=None: 1)
    monkeypatch.setattr(dist, "get_world_size", lambda group=None: 3)


def test_uneven_all_to_all_single_keeps_the_own_chunk_in_place(rank_1_of_3):
    data = torch.arange(1, 10, dtype=torch.float32).reshape(9, 1).repeat(1, 2)  # rows 1..9
    sent = [2, 4, 3]  # to ranks 0, 1, 2: rows 1-2, 3-6, 7-9
    received = [5, 4, 1]  # from ranks 0, 1, 2: 10 rows in all
    out = torch.full((sum(received), 2), -1.0)
    with nulls.no_communication():
        assert dist.all_to_all_single(out, data, received, sent) is None
        work = dist.all_to_all_single(out, data, received, sent, async_op=True)
    assert work.wait() and out.shape == (10, 2)
    assert torch.equal(out[5:9], data[2:6])  # own chunk: input rows 2..5 -> output rows 5..8
    assert not out[:5].any() and not out[9:].any()  # nothing arrived from ranks 0 and 2


def test_even_all_to_all_single_and_all_to_all_are_local_only(rank_1_of_3):
    original = dist.all_to_all_single
    send_counts = torch.tensor([7, 8, 9])
    recv_counts = torch.empty_like(send_counts)
    inputs = [torch.full((2,), float(i + 1)) for i in range(3)]
    outputs = [torch.full((2,), -1.0) for _ in range(3)]
    with nulls.no_communication():
        dist.all_to_all_single(recv_counts, send_counts)
        dist.all_to_all(outputs, inputs)
    assert recv_counts.tolist() == [0, 8, 0]
    assert [o.tolist() for o in outputs] == [[0.0, 0.0], [2.0, 2.0], [0.0, 0.0]]
    assert dist.all_to_all_single is original  # the real collective is back after the block


def test_split_sizes_that_leave_the_own_chunk_empty_or_alias_the_input(rank_1_of_3):
    data = torch.arange(6.0)
    out = torch.full((4,), -1.0)
    with nulls.no_communication():
        dist.all_to_all_single(out, data, [2, 0, 2], [3, 0, 3])
    assert out.tolist() == [0.0] * 4
    same = torch.arange(6.0)
    with nulls.no_communication():
        dist.all_to_all_single(same, same)  # output is the input: the own chunk survives the zeroing
    assert same.tolist() == [0.0, 0.0, 2.0, 3.0, 0.0, 0.0]


def test_sending_back_what_an_all_to_all_delivered_returns_what_was_sent(rank_1_of_3):
    # Problem 64's requester learns how many of its requests each owner answered: the all-to-all of the received
    # counts. The real collective is its own inverse, so that is this rank's own send counts, known locally.
    send_counts = torch.tensor([4, 5, 6])
    recv_counts = torch.empty_like(send_counts)
    answered = torch.empty_like(send_counts)
    other = torch.empty_like(send_counts)
    with nulls.no_communication():
        dist.all_to_all_single(recv_counts, send_counts)
        dist.all_to_all_single(answered, recv_counts)
        dist.all_to_all_single(other, recv_counts.clone())  # not the delivered tensor itself: own chunk only
    assert recv_counts.tolist() == [0, 5, 0] and answered.tolist() == [4, 5, 6] and other.tolist() == [0, 5, 0]
    with nulls.no_communication():  # a delivered tensor changed since: no longer the round trip
        dist.all_to_all_single(recv_counts, send_counts)
        recv_counts += 1
        dist.all_to_all_single(answered, recv_counts)
    assert answered.tolist() == [0, 6, 0]


@pytest.mark.parametrize("problem", [64, 68, 70, 78])
def test_nocomm_null_is_incorrect_not_a_crash_for_uneven_all_to_alls(problem):
    result = judge.evaluate(
        problem, "null:nocomm", 3, "cpu", M=128, N=256, reduced=True, trials=1, timing=False, seed=3, timeout_s=120
    )
    assert result["verdict"] == schema.INCORRECT, result["message"]
