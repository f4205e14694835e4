"""NVLink multicast is refused on hosts whose profile forbids it, statically and with the offending line."""

import pathlib

from evaluator import judge
from evaluator.contract import schema
from evaluator.judge import policy

CANDIDATES = pathlib.Path(__file__).parent / "candidates"


def test_multicast_ptx_is_refused_with_its_line():
    source = "x = 1\nasm = 'multimem.ld_reduce.relaxed.sys.global.add.f32'\n"
    violation = policy.scan(source, multicast_allowed=False)
    assert violation is not None and violation.line == 2
    assert "line 2" in violation.message()


def test_driver_multicast_api_and_env_switches_are_refused():
    assert policy.scan("cuMulticastCreate(&h, &prop)", False)
    assert policy.scan("ptr = hdl.multicast_ptr", False)
    assert policy.scan("os.environ['NCCL_NVLS_ENABLE'] = '1'", False)
    assert policy.scan("os.environ['TORCH_SYMM_MEM_DISABLE_MULTICAST'] = '0'", False)
    assert policy.scan("env = {'NVSHMEM_DISABLE_NVLS': 0}", False)


def test_allowed_profile_and_plain_code_pass():
    assert policy.scan("cuMulticastCreate", multicast_allowed=True) is None
    assert policy.scan("import torch\nout = torch.ones(3)\n# multiple memories\nNCCL_NVLS_ENABLE=0\n", False) is None


def test_judge_refuses_before_running_and_allows_where_permitted():
    path = str(CANDIDATES / "multicast_ptx_string.py")
    refused = judge.evaluate(1, path, 2, "cpu", M=32, N=16, seed=1, timing=False)
    assert refused["verdict"] == schema.POLICY_VIOLATION and "line 3" in refused["message"]
    assert refused["trials"] == []  # nothing ran
    allowed = judge.evaluate(1, path, 2, "cpu", M=32, N=16, seed=1, timing=False, multicast_allowed=True)
    assert allowed["verdict"] == schema.CORRECT
