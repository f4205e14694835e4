"""Semantic shortcuts: zeros and constants, precision below tolerance, assuming alike inputs, hard-coded world size
and shapes, lazy tensor subclasses. See docs/threat-model.md, section D."""

from evaluator.contract import schema
from tests.redteam.harness import run


def test_zeros_are_incorrect():
    assert run("returns_zeros")["verdict"] == schema.INCORRECT


def test_pkb_constant_answer_is_incorrect():
    assert run("returns_constant")["verdict"] == schema.INCORRECT


def test_assuming_alike_inputs_across_ranks_is_incorrect():
    assert run("assumes_alike_inputs")["verdict"] == schema.INCORRECT


def test_precision_below_tolerance_is_incorrect_and_fp32_accumulation_is_not():
    low = run("low_precision_gemm", problem=13)
    assert low["verdict"] == schema.INCORRECT, low["message"]
    assert "elements outside" in low["message"]
    honest = run("honest_gemm_fp32", problem=13)
    assert honest["verdict"] == schema.CORRECT, honest["message"]


def test_hard_coded_world_size_fails_at_the_hidden_world_size():
    result = run("hardcodes_world_size", hidden_world_size=1)
    assert result["verdict"] in (schema.RUNTIME_ERROR, schema.INCORRECT), result["message"]
    assert "hidden world size W=1" in result["message"]
    assert result["hidden_world_size"]["world_size"] == 1


def test_hard_coded_shape_fails_at_the_hidden_shape():
    result = run("hardcodes_shape", hidden_shape=True)
    assert result["verdict"] == schema.INCORRECT, result["message"]
    assert "hidden shape" in result["message"]
    assert result["trials"][-1]["hidden_shape"]["M"] != 64 or result["trials"][-1]["hidden_shape"]["N"] != 32


def test_honest_candidate_passes_the_hidden_shape_and_world_size():
    result = run("honest_allreduce", hidden_shape=True, hidden_world_size=1)
    assert result["verdict"] == schema.CORRECT, result["message"]
    assert "hidden_shape" in result["trials"][-1]
    assert result["hidden_world_size"]["verdict"] == schema.CORRECT


def test_lazy_tensor_subclass_is_refused():
    result = run("lazy_subclass")
    assert result["verdict"] == schema.INCORRECT, result["message"]
    assert "not a plain torch.Tensor" in result["message"]
