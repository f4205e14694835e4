"""The timing rules (evaluator/timing/) are torch-free: stored runs can be re-judged, and the rules read, without torch
(benchmarks/aa_rules.py, probe_rules.py, crosscheck_rules.py)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


def test_importing_the_timing_rules_loads_no_torch():
    code = (
        "import sys\n"
        "import evaluator.timing\n"
        "from evaluator.timing import calibration, pairs, physics, rules, stats\n"
        "print(sorted(m for m in ('torch', 'numpy', 'evaluator.judge', 'evaluator.rank', 'evaluator.process')"
        " if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stdout + done.stderr
