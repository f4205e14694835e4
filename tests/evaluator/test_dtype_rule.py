"""The dtype rule (docs/dtype.md): integers by value, another floating dtype within tolerance is correct but flagged
``dtype_differs`` (never faster), a problem whose spec fixes the dtype stays strict."""

import pathlib

import torch

import problems
from evaluator import judge
from evaluator.contract import schema
from problems.tolerance import compare

COMPAT = pathlib.Path(__file__).parent / "compat" / "candidates"
SMALL = dict(M=64, N=32, trials=2, seed=5, timing=False, timeout_s=60)


def test_integers_compare_by_value_whatever_their_width():
    expected = torch.tensor([0, 7, 123456], dtype=torch.int64)
    narrow = compare(expected, expected.to(torch.int32), 0, 0)
    assert narrow.ok and narrow.dtype_differs == []  # no flag: an exact integer value is the same answer
    wrong = compare(expected, torch.tensor([0, 7, 123457], dtype=torch.int32), 0, 0)
    assert not wrong.ok and "123457 != 123456" in wrong.mismatch.message
    # A value the narrower type cannot hold has wrapped: it differs, and fails.
    big = torch.tensor([2**40, 1], dtype=torch.int64)
    wrapped = compare(big, big.to(torch.int32), 0, 0)
    assert not wrapped.ok and wrapped.mismatch.index == [0]
    assert not compare(expected, expected.to(torch.int16), 0, 0, strict_dtype="the spec says int64").ok
    # Kinds do not mix: integer values returned as floats (or booleans as bytes) are not the interface.
    assert "integer output must be integer" in compare(expected, expected.float(), 0.5, 0).mismatch.message
    mask = torch.tensor([True, False])
    assert not compare(mask, mask.to(torch.uint8), 0, 0).ok


def test_floating_in_another_dtype_is_within_tolerance_and_noted():
    torch.manual_seed(0)
    expected = torch.randn(64, 32)
    within = compare(expected, expected.to(torch.bfloat16), 1e-2, 1e-2)
    assert within.ok and within.dtype_differs == ["output: bfloat16 for expected float32"]
    assert within.to_dict()["dtype_differs"] == within.dtype_differs and within.max_abs_error > 0
    outside = compare(expected, (expected * 1.05).to(torch.bfloat16), 1e-2, 1e-2)
    assert not outside.ok and "output dtype bfloat16, reference float32" in outside.mismatch.message
    assert "dtype_differs" not in outside.to_dict()
    strict = compare(expected, expected.to(torch.bfloat16), 1e-2, 1e-2, strict_dtype="fp8 payload")
    assert not strict.ok and "spec fixes the output dtype: fp8 payload" in strict.mismatch.message
    # Higher precision, fp8 and nested outputs follow the same rule; same-dtype outputs carry no note.
    assert compare(expected, expected.double(), 1e-2, 1e-2).dtype_differs == ["output: float64 for expected float32"]
    small = torch.tensor([0.5, 1.0, -2.0])
    assert compare(small, small.to(torch.float8_e4m3fn), 1e-2, 1e-2).ok
    nested = compare((expected, {"k": expected}), (expected, {"k": expected.half()}), 1e-2, 1e-2)
    assert nested.ok and nested.dtype_differs == ["output[1]['k']: float16 for expected float32"]
    assert compare(expected, expected.clone(), 1e-2, 1e-2).dtype_differs == []


def test_strict_problems_say_why():
    assert problems.get(19).strict_dtype and "float8_e4m3fn" in problems.get(19).strict_dtype
    assert problems.get(1).strict_dtype is None


# --- through the real judge (CPU gloo ranks) --------------------------------------------------------------------------


def _run(name: str, problem, W: int = 2, **options):
    return judge.evaluate(problem, str(COMPAT / f"{name}.py"), W, "cpu", **{**SMALL, **options})


def test_int32_indices_equal_to_int64_reference_are_correct():
    result = _run("int32_splits", 26)
    assert result["verdict"] == schema.CORRECT, result["message"]
    assert schema.FLAG_DTYPE_DIFFERS not in result["flags"]


def test_bf16_for_fp32_within_tolerance_is_correct_flagged_and_not_faster():
    result = _run("bf16_for_fp32", 13, dtype="float32", timing=True, timing_budget_ms=100)
    assert result["verdict"] == schema.CORRECT, result["message"]
    assert schema.FLAG_DTYPE_DIFFERS in result["flags"]
    assert "bfloat16 for expected float32" in result["message"]
    assert result["timing"] is not None and result["timing"]["faster"] is False and result["timing"]["ranked"] is False


def test_bf16_outside_tolerance_is_incorrect():
    result = _run("bf16_outside_tolerance", 13, dtype="float32")
    assert result["verdict"] == schema.INCORRECT, result["message"]
    assert "output dtype bfloat16, reference float32" in result["message"]


def test_strict_problem_refuses_another_dtype():
    # Problem 19's product is the fp8 payload: float32 values equal to the reference's still fail.
    result = _run("fp8_quantize_as_float32", 19, M=16, N=128)
    assert result["verdict"] == schema.INCORRECT, result["message"]
    assert "dtype" in result["message"] and "float8_e4m3fn" in result["message"]
