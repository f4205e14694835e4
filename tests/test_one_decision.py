"""One place decides "faster", "faster at p" and "ranked": evaluator/contract/verdict.py. Its rule branch by branch, the
judge's evidence-only records (no verdict before the evaluation ends), and an ``ast`` scan that fails naming file:line
where any other module of the judge (or the benchmarks that re-judge its runs) sets one of the keys; and a scan of the
site (leaderboard/) that fails naming file:line where it compares a speedup bound with a constant (fast_p is the
judge's)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from evaluator.contract import schema, verdict

ROOT = Path(__file__).resolve().parent.parent
DECIDED = ("faster", "ranked", "faster_at")
THE_PLACE = "evaluator/contract/verdict.py"


def scanned() -> list[Path]:
    """The judge, and the benchmarks that re-judge its stored runs (those importing it; site_pages.py builds site
    rows, whose own ``faster``/``ranked`` columns are the site's)."""
    judge = list((ROOT / "evaluator").rglob("*.py"))
    rejudging = [p for p in (ROOT / "benchmarks").rglob("*.py") if "from evaluator" in p.read_text()]
    return sorted(p for p in judge + rejudging if "__pycache__" not in p.parts)


def _timing(low=1.2, high=1.4, **extra) -> dict:
    return dict({"speedup": 1.3, "speedup_ci": [low, high], "reference_blocks_spun_short": []}, **extra)


# --- the rule, each branch ---------------------------------------------------------------------------------------


def test_an_interval_wholly_above_one_unflagged_on_a_gpu_is_faster_and_ranked():
    assert verdict.decide(_timing(), [], "cuda") == dict(
        _timing(), faster=True, ranked=True, faster_at={"1.0": True, "1.5": False, "2.0": False}
    )


def test_an_interval_that_reaches_one_is_not_faster_but_still_ranks():
    for low in (1.0, 0.97):
        doc = verdict.decide(_timing(low=low), [], "cuda")
        assert doc["faster"] is False and doc["ranked"] is True


def test_the_exact_lower_bound_decides_not_the_rounded_one():
    # speedup_ci is rounded to 4 places: 1.00003 is shown as 1.0 and was always decided as above 1.0.
    doc = verdict.decide(_timing(low=1.0, **{verdict.LOW_KEY: 1.00003}), [], "cuda")
    assert doc["faster"] is True and verdict.LOW_KEY not in doc
    assert verdict.decide(_timing(low=1.0, **{verdict.LOW_KEY: 1.0}), [], "cuda")["faster"] is False


def test_any_flag_withholds_both():
    for flag in (
        schema.FLAG_TIMING_CROSSCHECK,
        schema.FLAG_FASTER_THAN_LIGHT,
        schema.FLAG_DTYPE_DIFFERS,
        schema.FLAG_UNSANDBOXED,
        schema.FLAG_UNRANKED_DEVICE,
    ):
        doc = verdict.decide(_timing(low=3.0), [flag], "cuda")
        assert (doc["faster"], doc["ranked"]) == (False, False), flag


def test_a_reference_that_timed_its_host_withholds_faster_not_ranked():
    one_pair = verdict.decide(_timing(reference_blocks_spun_short=[0, 3]), [], "cuda")
    assert one_pair["faster"] is False and one_pair["ranked"] is True
    k_pairs = verdict.decide(_timing(reference_spun_short_pairs=[2]), [], "cuda")
    assert k_pairs["faster"] is False and k_pairs["ranked"] is True


def test_cpu_timings_may_be_faster_but_never_rank():
    doc = verdict.decide(_timing(), [], "cpu")
    assert doc["faster"] is True and doc["ranked"] is False
    assert verdict.decide(_timing(), [], None)["ranked"] is False  # a device not named is not a GPU


def test_a_record_with_no_interval_is_not_faster():
    doc = verdict.decide({"faster": True, "ranked": True}, [], "cuda")
    assert doc == {"faster": False, "ranked": True, "faster_at": {"1.0": False, "1.5": False, "2.0": False}}


def test_conclude_decides_with_the_results_flags_and_leaves_a_result_without_timing_alone():
    result = {"flags": [schema.FLAG_DTYPE_DIFFERS], "timing": _timing()}
    assert verdict.conclude(result, "cuda")["timing"]["faster"] is False
    clean = verdict.conclude({"flags": [], "timing": _timing()}, "cuda")
    assert clean["timing"]["faster"] is True and clean["timing"]["ranked"] is True
    assert verdict.conclude({"flags": [], "timing": None}, "cuda") == {"flags": [], "timing": None}


# --- the judge's records carry evidence, and the one decision turns it into the documented verdict --------------


def test_a_pairs_evidence_has_no_verdict_until_decided():
    from evaluator import judge
    from evaluator.timing import rules

    blocks = [[1.0] * 20 for _ in range(6)]
    fast = [[0.5] * 20 for _ in range(6)]
    cfg = judge.Config(world_size=1, device="cuda")
    walls = {"ref": [1.2] * 6, "cand": [0.7] * 6}
    doc = rules.pair_evidence(blocks, fast, walls, cfg, calls=21)
    assert not set(DECIDED) & set(doc) and doc[verdict.LOW_KEY] > 1.0
    alone = rules._timing_document(blocks, fast, walls, cfg, calls=21)
    assert alone["faster"] is True and alone["ranked"] is True and verdict.LOW_KEY not in alone


def test_combined_evidence_drops_the_pairs_own_verdicts():
    from evaluator.timing import pairs

    def one(speedup):
        return {
            "speedup": speedup,
            "bootstrap_ci": [speedup * 0.999, speedup * 1.001],
            "reference_ms": 1.0,
            "candidate_ms": 1.0 / speedup,
            "host_bound": False,
            "samples": 60,
            "reference_samples": 60,
            "blocks": 6,
            "faster": True,
            "ranked": True,
            "method": "cuda_events",
        }

    doc = pairs.combine_evidence([one(1.3)] * 4, "cuda", 0.5)
    assert not set(DECIDED) & set(doc) and doc[verdict.LOW_KEY] == pytest.approx(doc["speedup_ci"][0], abs=1e-4)
    assert pairs.combine([one(1.3)] * 4, "cuda", 0.5)["faster"] is True


# --- nobody else sets the keys -----------------------------------------------------------------------------------


def _reads_same_key(node: ast.AST, key: str) -> bool:
    """Whether ``node`` only copies an already decided value: ``x[key]``, ``x.get(key)``, ``x.key``, maybe in bool()."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "bool" and node.args:
        node = node.args[0]
    if isinstance(node, ast.Subscript):
        return isinstance(node.slice, ast.Constant) and node.slice.value == key
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
        return bool(node.args) and isinstance(node.args[0], ast.Constant) and node.args[0].value == key
    return isinstance(node, ast.Attribute) and node.attr == key


def setters(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, what) for every place that sets ``faster`` or ``ranked``: ``x["faster"] = ...`` (plain, augmented or
    chained), ``x.faster = ...``, a dict display's ``"faster": ...``, ``dict(faster=...)``/``x.update(faster=...)``
    and ``x.setdefault("faster", ...)``. Copying a decided value under its own name (``"faster": t["faster"]``) is
    not deciding it and passes."""
    found = []
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        for target in targets:
            for t in ast.walk(target):
                if (
                    isinstance(t, ast.Subscript) and isinstance(t.slice, ast.Constant) and t.slice.value in DECIDED
                ) or (isinstance(t, ast.Attribute) and t.attr in DECIDED):
                    found.append((node.lineno, ast.unparse(t) + " = ..."))
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and key.value in DECIDED and not _reads_same_key(value, key.value):
                    found.append((node.lineno, f"{{{key.value!r}: {ast.unparse(value)}}}"))
        if isinstance(node, ast.Call):
            for kw in node.keywords:
                if kw.arg in DECIDED and not _reads_same_key(kw.value, kw.arg):
                    found.append((node.lineno, f"{kw.arg}={ast.unparse(kw.value)}"))
            if (
                isinstance(node.func, ast.Attribute)
                and node.func.attr == "setdefault"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and node.args[0].value in DECIDED
            ):
                found.append((node.lineno, ast.unparse(node)))
    return found


def test_the_scan_sees_every_way_of_setting_the_keys():
    caught = setters(
        ast.parse(
            "t['faster'] = x\nt['ranked'] = t['faster'] = False\nt.faster = 1\nd = {'faster': low > 1}\n"
            "t.update(ranked=True)\nt.setdefault('faster', True)\nt['faster'] |= y\n"
        )
    )
    assert sorted(line for line, _ in caught) == [1, 2, 2, 3, 4, 5, 6, 7]
    copies = "row = {'faster': bool(t.get('faster')), 'ranked': t['ranked']}\nf(faster=t.faster)\nx = t['faster']\n"
    assert setters(ast.parse(copies)) == []


def test_only_the_verdict_module_sets_faster_or_ranked():
    offenders = []
    for path in scanned():
        rel = path.relative_to(ROOT).as_posix()
        if rel != THE_PLACE:
            offenders += [f"{rel}:{line}: {what}" for line, what in setters(ast.parse(path.read_text(), rel))]
    assert not offenders, "only evaluator/contract/verdict.py decides faster/ranked:\n" + "\n".join(offenders)
    assert setters(ast.parse((ROOT / THE_PLACE).read_text())), "the scan must see the one place that does"


# --- "faster at p" is the judge's; the site counts it ------------------------------------------------------------


def test_faster_at_each_bar_is_faster_and_the_bound_above_the_bar():
    at = verdict.decide(_timing(low=1.7, high=2.4), [], "cuda")["faster_at"]
    assert at == {"1.0": True, "1.5": True, "2.0": False}
    withheld = verdict.decide(_timing(low=2.5, high=3.0, reference_blocks_spun_short=[1]), [], "cuda")
    assert withheld["faster"] is False and not any(withheld["faster_at"].values())
    flagged = verdict.decide(_timing(low=2.5, high=3.0), [schema.FLAG_TIMING_CROSSCHECK], "cuda")
    assert not any(flagged["faster_at"].values())


SPEEDUP_BOUND = ("speedup_lo", "speedup_hi", "speedup_ci", "low")


def bound_comparisons(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, source) of each comparison of a speedup bound (``speedup_lo``, ``speedup_ci[0]``...) with a number
    other than 0 (0 is a presence check, not a bar)."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        bound = any(
            any(
                isinstance(n, (ast.Name, ast.Attribute, ast.Constant))
                and any(
                    key in (getattr(n, "id", None) or getattr(n, "attr", None) or str(getattr(n, "value", "")))
                    for key in SPEEDUP_BOUND
                )
                for n in ast.walk(side)
            )
            for side in sides
        )
        number = any(
            isinstance(side, ast.Constant)
            and isinstance(side.value, (int, float))
            and not isinstance(side.value, bool)
            and side.value != 0
            for side in sides
        )
        if bound and number:
            found.append((node.lineno, ast.unparse(node)))
    return found


def test_the_bound_scan_sees_a_bar_compared_on_the_site():
    caught = bound_comparisons(
        ast.parse(
            "a = s.speedup_lo > 1.5\nb = (x.speedup_lo or 0) >= 2\nc = ci['speedup_ci'][0] > 1\n"
            "ok = s.speedup_lo is not None and s.speedup_lo > 0\n"
        )
    )
    assert [line for line, _ in caught] == [1, 2, 3]


def test_the_site_compares_no_speedup_bound_with_a_bar():
    offenders = []
    for path in sorted((ROOT / "leaderboard").rglob("*.py")):
        if "__pycache__" in path.parts or "migrations" in path.parts:
            continue
        rel = path.relative_to(ROOT).as_posix()
        offenders += [f"{rel}:{line}: {what}" for line, what in bound_comparisons(ast.parse(path.read_text(), rel))]
    assert not offenders, "fast_p is the judge's (schema.faster_at); the site compares no bound:\n" + "\n".join(
        offenders
    )
