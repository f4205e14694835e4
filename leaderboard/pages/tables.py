"""The problem list as a table people can work with: searched, filtered by category and sorted through query
parameters (?q=, ?category=, ?order=, ?dir=), so it works without JavaScript; static/site.js sorts the rendered rows in
place on a header click and filters them as one types."""

from __future__ import annotations

from dataclasses import dataclass

# The sortable columns: the query's name -> the row's value (None sorts last whichever the direction).
PROBLEM_SORTS = {
    "id": lambda p: p.id,
    "problem": lambda p: p.stem,
    "category": lambda p: (p.category or "", p.id),
    "tried": lambda p: p.tried,
    "solved": lambda p: p.solved,
    "rate": lambda p: p.solve_rate,
    "faster": lambda p: p.faster_count,
}
COLUMNS = (
    ("id", "#", False),
    ("problem", "Problem", False),
    ("category", "Category", False),
    ("tried", "Tried", True),
    ("solved", "Solved", True),
    ("rate", "Solve rate", True),
    ("faster", "Faster", True),
)
MAX_QUERY = 100


@dataclass
class ProblemTable:
    rows: list
    total: int
    q: str
    category: str
    categories: list[str]
    sort: str
    descending: bool

    @property
    def columns(self) -> list[dict]:
        """The sortable headers: a click sorts by the column, a second click reverses it."""
        return [
            {
                "key": key,
                "title": title,
                "num": num,
                "next_dir": "desc" if key == self.sort and not self.descending else "",
                "sorted": ("descending" if self.descending else "ascending") if key == self.sort else "",
            }
            for key, title, num in COLUMNS
        ]


def problem_table(problems: list, params) -> ProblemTable:
    """The rows matching ?q= (in the id, stem or title) and ?category=, sorted by ?order= (?dir=desc reverses);
    unknown values are ignored (the whole list, by id)."""
    q = str(params.get("q") or "").strip()[:MAX_QUERY]
    categories = sorted({p.category for p in problems if p.category})
    category = params.get("category") if params.get("category") in categories else ""
    sort = params.get("order") if params.get("order") in PROBLEM_SORTS else "id"
    descending = params.get("dir") == "desc"
    rows = [
        p
        for p in problems
        if (not category or p.category == category) and (not q or q.lower() in f"{p.id} {p.stem} {p.title}".lower())
    ]
    key = PROBLEM_SORTS[sort]
    present = sorted((p for p in rows if key(p) is not None), key=key, reverse=descending)
    rows = present + [p for p in rows if key(p) is None]
    return ProblemTable(
        rows=rows, total=len(problems), q=q, category=category, categories=categories, sort=sort, descending=descending
    )
