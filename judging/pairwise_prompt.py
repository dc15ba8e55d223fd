"""What a pairwise judge is asked and how its answer is read (prompts/pairwise_judge.txt).

- The prompt: the How2Score judge prompt's definitions of a critical failure, adapted to two candidates: the
  goal, L1 and the two L2s as "Procedure 1" (shown first) and "Procedure 2", each as `1. step` lines (the
  steps cleaned as the pointwise judge sees them). The template is hashed (prompt_sha256): a job records the
  hash it was made with and refuses to run once the file says something else (PromptChanged).
- The answer: free reasoning, then one last line `Verdict: 1 | 2 | both_none | both_fail`. Read strictly: the
  last non-blank line must be exactly that (surrounding spaces aside), and no other line may start with
  "Verdict:"; anything else is a parse failure with its reason, never an exception. 1 and 2 are the verdicts
  "first" and "second" (as shown).
- The request: the embedded model (backend "local") is held by a grammar to one line "Reasoning: ..." (so
  that its reasoning cannot be a verdict line of its own) and the verdict line; other models answer freely
  (a config's json_schema is not used: the answer is a line, not JSON).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from h2e_site.llm.base import LLMRequest
from h2e_site.llm.config import ModelConfig, decoding_request
from h2e_site.llm.prompts import PROMPTS_DIR, check_prompt, prompt_sha256, read_prompt

from .models import PairwiseVerdict
from .prompting import numbered

PAIRWISE_PROMPT = "pairwise_judge.txt"
VERDICTS = {
    "1": PairwiseVerdict.FIRST.value,
    "2": PairwiseVerdict.SECOND.value,
    "both_none": PairwiseVerdict.BOTH_NONE.value,
    "both_fail": PairwiseVerdict.BOTH_FAIL.value,
}
_VERDICT_LINE = re.compile(r"Verdict: (1|2|both_none|both_fail)")
_REASONING_CHARS = 400  # the embedded model's one line of reasoning, at most
VERDICT_GRAMMAR = (
    'root ::= "Reasoning: " reasoning "\\nVerdict: " verdict\n'
    f"reasoning ::= [^\\n\\r] [^\\n\\r]{{0,{_REASONING_CHARS - 1}}}\n"
    'verdict ::= "1" | "2" | "both_none" | "both_fail"\n'
)


def pairwise_template(expected_sha256: str = "", *, label: str = "pairwise judge prompt") -> str:
    """prompts/pairwise_judge.txt as it is now; PromptChanged unless it hashes to `expected_sha256`."""
    path = PROMPTS_DIR / PAIRWISE_PROMPT
    return check_prompt(
        read_prompt(path), expected_sha256=expected_sha256, label=label, path=f"prompts/{path.name}"
    )


def pairwise_template_sha256() -> str:
    return prompt_sha256(pairwise_template())


def pairwise_prompt(
    template: str, *, goal: str, reference_steps: Sequence[str], first: Sequence[str], second: Sequence[str]
) -> str:
    """The template filled: goal, L1, and the L2 shown first / second as Procedure 1 / Procedure 2."""
    return template.format(
        goal=goal.strip(),
        reference_steps=numbered(reference_steps),
        procedure_1=numbered(first),
        procedure_2=numbered(second),
    )


def pairwise_request(config: ModelConfig, *, key: str, prompt: str) -> LLMRequest:
    """One pairwise question under the judge's decoding (the embedded model under VERDICT_GRAMMAR)."""
    grammar = VERDICT_GRAMMAR if config.backend == "local" else None
    return decoding_request(config, key=key, prompt=prompt, grammar=grammar)


@dataclass(frozen=True)
class ParsedVerdict:
    verdict: str  # "first", "second", "both_none", "both_fail"; "" when it could not be read
    problem: str = ""  # why it could not be read

    @property
    def parse_failed(self) -> bool:
        return not self.verdict


def parse_pairwise_verdict(text: str | None) -> ParsedVerdict:
    """The verdict of an answer whose last non-blank line is `Verdict: <1 | 2 | both_none | both_fail>` and
    with no other line starting with "Verdict:"; else a parse failure saying why (module doc)."""
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    if not lines:
        return ParsedVerdict("", "empty answer")
    *before, last = lines
    match = _VERDICT_LINE.fullmatch(last)
    if match is None:
        shown = last if len(last) <= 60 else last[:57] + "..."
        return ParsedVerdict("", f"the last line is not 'Verdict: 1 | 2 | both_none | both_fail': {shown!r}")
    if any(line.startswith("Verdict:") for line in before):
        return ParsedVerdict("", "more than one line starts with 'Verdict:'")
    return ParsedVerdict(VERDICTS[match.group(1)])
