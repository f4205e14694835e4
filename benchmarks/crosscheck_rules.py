"""Re-judge the spun blocks' cross-check (timing_rules._crosscheck) on stored GPU runs with the noise term in the code
now.

    python benchmarks/crosscheck_rules.py benchmarks/calibration/run9.json

It reads the compact calibration record (benchmarks/calibration_record.py) or a raw document just written.

Every stored cross-check keeps each block's wall and reported median per call and the allowance then in force, so
the reference's own spread (timing_rules.crosscheck_noise_ms) can be tried on old runs without a GPU. The allowance
here is the larger of the stored one and that noise term. Each block's spin is taken out of the walls where the run
stored it (``blocks_spin_ms`` from GPU run 9's code on; before that a row's ``spin_us_per_block``, where the row had one
try); other tries of older runs, whose spins ratcheted from block to block (GPU run 8), read as noisier than they
were. Prints, per
file, how many honest cross-checks (A/A rows and every pair of them, sensitivity pairs, set-aside pairs) were suspect
then and would be now, and how many judged results a one-pair run would flag (every try suspect).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.calibration_record import documents
from evaluator.timing import rules as timing_rules


def rejudge(check: dict, spins_us=None) -> dict:
    skip = 1 if len(check["blocks_ms"]["reference"]["wall"]) > 2 else 0
    walls = check["blocks_ms"]["reference"]["wall"]
    spins = check.get("blocks_spin_ms") or ([s / 1e3 for s in spins_us] if spins_us else None)
    noise = timing_rules.crosscheck_noise_ms(walls[skip:], spins[skip:] if spins else None)
    allowance = max(check["allowance_ms"], noise)
    return dict(
        check, noise_ms=round(noise, 4), allowance_ms=round(allowance, 4), suspect=check["unexplained_ms"] > allowance
    )


def results_of(doc: dict):
    """(name, [cross-check of each try or pair], per-block spins or None) for every judged run in a stored file."""
    for row in doc.get("rows", []):
        # The pairs combined (or the one pair timed), then the tries set aside (a retimed one-pair run's first).
        tries = [p["crosscheck"] for p in row.get("pairs") or [] if p.get("crosscheck")]
        if not row.get("pairs") and (row.get("crosscheck") or {}).get("blocks_ms"):
            tries = [row["crosscheck"]]
        aside = [a["crosscheck"] for a in row.get("set_aside") or [] if a.get("crosscheck")]
        # A row's spins are its timed pair's: they apply when that pair is its only try.
        spins = row.get("spin_us_per_block") if len(tries) == 1 and not aside else None
        tries += aside
        if "id" not in row:
            continue
        yield f"problem {row['id']} rep {row.get('repeat')}", tries, spins
    for k, run in enumerate(doc.get("runs", [])):
        tries = [p["crosscheck"] for p in run.get("pairs") or [] if p.get("crosscheck")]
        tries += [a["crosscheck"] for a in run.get("set_aside") or [] if a.get("crosscheck")]
        yield f"{run['case']} #{k}", [c for c in tries if c.get("blocks_ms")], None


def main(paths: list[str]) -> None:
    totals = {"checks": 0, "then": 0, "now": 0}
    for path, doc in documents(paths):
        checks = then = now = 0
        flagged_now, named = [], []
        for name, tries, spins in results_of(doc):
            again = [rejudge(c, spins) for c in tries]
            checks += len(again)
            then += sum(c["suspect"] for c in tries)
            now += sum(c["suspect"] for c in again)
            named += [(name, c["unexplained_ms"], c["allowance_ms"], c["noise_ms"]) for c in again if c["suspect"]]
            if again and all(c["suspect"] for c in again) and name.startswith("problem"):
                flagged_now.append(name)
        print(f"{path}: {checks} cross-checks, suspect then {then}, now {now} {named}")
        if flagged_now:
            print(f"  one-pair results flagged now (every try suspect): {flagged_now}")
        totals = {"checks": totals["checks"] + checks, "then": totals["then"] + then, "now": totals["now"] + now}
    print(f"all: {totals}")


if __name__ == "__main__":
    main(sys.argv[1:])
