import math

import torch

from problems.tolerance import compare


def test_equal_tensors_pass_with_zero_error():
    x = torch.randn(4, 5)
    result = compare(x, x.clone(), 1e-2, 1e-2)
    assert result.ok and result.max_abs_error == 0.0


def test_value_mismatch_names_first_index_and_size():
    x = torch.zeros(3, 4)
    y = x.clone()
    y[1, 2] = 0.5
    result = compare(x, y, 1e-2, 1e-2)
    assert not result.ok
    assert result.mismatch.index == [1, 2]
    assert "1 of 12" in result.mismatch.message and "0.5" in result.mismatch.message


def test_tolerance_is_atol_plus_rtol_times_expected():
    expected = torch.tensor([100.0])
    assert compare(expected, torch.tensor([101.0]), 1e-2, 1e-2).ok  # 1.0 <= 0.01 + 1.0
    assert not compare(expected, torch.tensor([101.5]), 1e-2, 1e-2).ok


def test_nan_and_inf_in_candidate_are_mismatches():
    x = torch.ones(8)
    for bad in (float("nan"), float("inf")):
        y = x.clone()
        y[3] = bad
        result = compare(x, y, 1e-2, 1e-2)
        assert not result.ok and result.mismatch.index == [3]
        assert "non-finite" in result.mismatch.message


def test_nan_where_reference_has_nan_is_equal():
    x = torch.tensor([1.0, math.nan])
    assert compare(x, x.clone(), 1e-2, 1e-2).ok
    assert not compare(x, torch.tensor([1.0, 2.0]), 1e-2, 1e-2).ok


def test_shape_dtype_and_structure_differences():
    x = torch.ones(2, 3, dtype=torch.bfloat16)
    assert "shape" in compare(x, torch.ones(3, 2, dtype=torch.bfloat16), 1e-2, 1e-2).mismatch.message
    # Another floating dtype passes within tolerance, noted (docs/dtype.md); strict problems and other kinds fail.
    assert compare(x, torch.ones(2, 3), 1e-2, 1e-2).dtype_differs == ["output: float32 for expected bfloat16"]
    assert "dtype" in compare(x, torch.ones(2, 3), 1e-2, 1e-2, strict_dtype="fixed").mismatch.message
    assert "dtype" in compare(x, torch.ones(2, 3, dtype=torch.int64), 1e-2, 1e-2).mismatch.message
    assert "2 elements" in compare((x, x), (x,), 1e-2, 1e-2).mismatch.message
    assert "dict" in compare({"a": x}, [x], 1e-2, 1e-2).mismatch.message
    assert "keys" in compare({"a": x}, {"b": x}, 1e-2, 1e-2).mismatch.message
    nested = compare((x, {"k": x}), (x, {"k": x + 1}), 1e-2, 1e-2)
    assert not nested.ok and nested.mismatch.path == "output[1]['k']"


def test_scalars_and_integers():
    assert compare(3, 3, 0, 0).ok
    assert not compare(3.0, 3.5, 1e-2, 1e-2).ok
    ints = torch.tensor([1, 2, 3])
    assert compare(ints, ints.clone(), 0, 0).ok
    assert compare(ints, torch.tensor([1, 2, 4]), 0, 0).mismatch.index == [2]


def test_tensor_subclass_is_refused():
    class Lazy(torch.Tensor):
        pass

    x = torch.ones(3)
    assert "torch.Tensor" in compare(x, x.clone().as_subclass(Lazy), 1e-2, 1e-2).mismatch.message


def test_slack_widens_only_where_asked():
    x = torch.full((4,), 10.0)
    y = x + 0.5
    assert not compare(x, y, 1e-2, 1e-2).ok
    assert compare(x, y, 1e-2, 1e-2, slack=lambda t: 0.5).ok


def test_fast_path_still_rejects_inf_where_reference_is_inf_and_candidate_finite():
    expected = torch.tensor([1.0, math.inf, 2.0], dtype=torch.bfloat16)
    assert compare(expected, expected.clone(), 1e-2, 1e-2).ok
    result = compare(expected, torch.tensor([1.0, 5.0, 2.0], dtype=torch.bfloat16), 1e-2, 1e-2)
    assert not result.ok and result.mismatch.index == [1]


def test_small_differences_report_their_size_in_every_float_dtype():
    for dtype in (torch.bfloat16, torch.float16, torch.float32, torch.float64):
        expected = torch.full((1000,), 4.0, dtype=dtype)
        actual = expected.clone()
        actual[7] = 4.03125  # exact in every dtype here
        ok = compare(expected, actual, 1e-2, 1e-2)
        assert ok.ok and abs(ok.max_abs_error - 0.03125) < 1e-9 and abs(ok.max_rel_error - 0.03125 / 4) < 1e-9
        actual[9] = 4.25
        bad = compare(expected, actual, 1e-2, 1e-2)
        assert not bad.ok and bad.mismatch.index == [9] and "1 of 1000" in bad.mismatch.message


def test_float64_differences_below_float32_resolution_are_seen():
    expected = torch.full((4,), 1.0, dtype=torch.float64)
    actual = expected.clone()
    actual[2] = 1.0 + 1e-9
    assert not compare(expected, actual, 0.0, 1e-10).ok
    assert compare(expected, actual, 0.0, 1e-8).ok


def test_outputs_larger_than_a_slice_are_checked_everywhere_and_left_untouched(monkeypatch):
    from problems import tolerance as module

    monkeypatch.setattr(module, "CHUNK", 64)  # 1000 x 3 elements: 47 slices
    expected = torch.randn(1000, 3)
    close = expected + 1e-4
    kept = close.clone()
    result = compare(expected, close, 1e-2, 1e-2)
    assert result.ok and 0 < result.max_abs_error < 2e-4
    assert torch.equal(close, kept)  # float32 slices are views of the candidate's output: never written in place
    late = close.clone()
    late[990, 2] += 1.0  # in the last slice
    result = compare(expected, late, 1e-2, 1e-2)
    assert not result.ok and result.mismatch.index == [990, 2]
    nan_late = close.to(torch.bfloat16)
    nan_late[700, 1] = float("nan")
    assert not compare(expected.to(torch.bfloat16), nan_late, 1e-2, 1e-2).ok


def test_an_atol_dominated_boundary_fails_past_atol_and_passes_within_it():
    """Zeros against zeros: rtol * |expected| is 0, so atol alone decides."""
    atol, rtol = 1e-3, 1e-2
    zeros = torch.zeros(16)
    assert not compare(zeros, zeros + 1.5 * atol, atol, rtol).ok
    assert compare(zeros, zeros + 0.5 * atol, atol, rtol).ok
