"""ParallelKernelBench-compatible helper modules available inside candidate ranks."""
