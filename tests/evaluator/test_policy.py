from evaluator import policy


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


def test_allowed_profile_and_plain_code_pass():
    assert policy.scan("cuMulticastCreate", multicast_allowed=True) is None
    assert policy.scan("import torch\nout = torch.ones(3)\n# multiple memories\n", False) is None
