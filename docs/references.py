"""The papers dpconvex implements, and the rewriting of internal paper names in docstrings.

The source code calls the papers it implements "seed 000" ... "seed 004" and points at
implementation notes that are not part of the repository. The documentation names
them by title and arXiv number instead (see ``references.md``).
"""

from __future__ import annotations

import re

#: internal name -> (short citation for running text, full reference)
PAPERS = {
    "000": (
        "Redberg, Koskela & Wang (arXiv 2401.00583)",
        "Rachel Redberg, Antti Koskela, Yu-Xiang Wang. *Improving the Privacy and "
        "Practicality of Objective Perturbation for Differentially Private Linear "
        "Learners*. NeurIPS 2023. arXiv 2401.00583.",
    ),
    "001": (
        "Wang's lecture notes on objective perturbation (CS291A, UCSB, 2021)",
        "Yu-Xiang Wang (lecturer), Rachel Redberg (scribe). *CS291A Introduction to "
        "Differential Privacy, Lecture 10: Objective Perturbation*. UC Santa Barbara, "
        "Fall 2021 (lecture notes).",
    ),
    "002": (
        "Su, Zhao & Wang (arXiv 2303.18047)",
        "Jinyan Su, Changhong Zhao, Di Wang. *Differentially Private Stochastic Convex "
        "Optimization in (Non)-Euclidean Space Revisited*. UAI 2023. arXiv 2303.18047.",
    ),
    "003": (
        "Chen & Liu (arXiv 2407.08233)",
        "Ding Chen, Chen Liu. *Hidden State Differential Private Mini-Batch Block "
        "Coordinate Descent for Multi-convexity Optimization*. arXiv 2407.08233.",
    ),
    "004": (
        "Ganesh's thesis (UC Berkeley EECS-2022-53)",
        "Arun Ganesh. *Improved Algorithms and Upper Bounds in Differential Privacy*. "
        "PhD thesis, UC Berkeley, Technical Report UCB/EECS-2022-53, 2022.",
    ),
}

_SEED = re.compile(r"\b[Ss]eed (00[0-4])\b")
_SEED_FILE = re.compile(r"(?:``?)?(?:\.\./shared/)?(?:seeds/)?\d{3}_[0-9a-f]{16}\.txt(?:``?)?,?\s*")
_SPEC_FILE = re.compile(r"(?:``?)?(?:\.\./shared/)?spec/[\w.-]+\.md(?:``?)?")


def replace_seed_mentions(text: str) -> str:
    """"seed 000" -> "Redberg, Koskela & Wang (arXiv 2401.00583)"; file paths a clone
    does not have are dropped (paper texts) or named for what they are (digests)."""
    new = _SEED_FILE.sub("", text)
    new = _SPEC_FILE.sub("the implementation notes", new)
    new = _SEED.sub(lambda m: PAPERS[m.group(1)][0], new)
    if new == text:
        return text
    for old, repl in [
        ("implementation digest the implementation notes", "implementation notes"),
        ("digest the implementation notes", "implementation notes"),
        ("(, ", "("),
        (", )", ")"),
        ("; )", ")"),
        ("()", ""),
        ("( ", "("),
    ]:
        new = new.replace(old, repl)
    return re.sub(r"(?<=\S) +(?=[,;])", "", new)
