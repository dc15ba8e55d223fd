"""How a multiple-choice example's options are named: lettered A to Z, so an example has at most
MAX_CANDIDATES candidates. The one bound the task-set builder (build.py), the BIG-bench importer
(bigbench.py), the model prompts (answer.py) and the multiple-choice study kind share. Pure: no Django, no
numpy."""

from __future__ import annotations

import string

LETTERS = string.ascii_uppercase
MAX_CANDIDATES = len(LETTERS)  # 26


def option_letter(index: int) -> str:
    """A, B, ..., Z for 0 to 25; past that AA, AB, ... as spreadsheet columns (an example stored before the
    bound, or edited by hand, still shows every option)."""
    letters = ""
    index += 1
    while index > 0:
        index, rest = divmod(index - 1, 26)
        letters = LETTERS[rest] + letters
    return letters
