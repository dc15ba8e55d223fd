"""Step transition types (the SIO paper: "To Skip, to Swap or to not Swap?"), the protocol of the
`step_types` study kind (annotation/kinds/step_types/spec.py): for every step pair or step of a procedure, is
it
SEQUENTIAL, INTERCHANGEABLE or OPTIONAL, and does the judgment need expert knowledge?

Pure Python (no Django, checkable by hand): candidates.py (what is asked, keys, context windows), measures.py
(majority labels, the expert flag, agreement, the SEQUENTIAL/INTERCHANGEABLE contradiction rate, F1 against
the human majority), guidelines.py (what participants read), llm.py (prompts and answer parsing).
On the database: agreement.py (a study's or label set's Table 6) and agreement_api.py, classify.py (LLM
classification jobs), evaluation.py (the model table, Table 3), exports.py and imports.py (one row per
candidate), classify_api.py.
"""

from annotation.base.registry import register
from annotation.kinds.step_types.name import AGREEMENT_API, KIND
from goal_step.human_labels import human_labels_update

register(
    KIND,
    label="Step types",
    description="Step types (sequential, interchangeable, optional steps of a procedure)",
    spec=f"{__name__}.spec.StepTypes",
    agreement_api=AGREEMENT_API,
)
# The goal-step app reads which procedures' order matters from this kind's SEQUENTIAL majorities.
human_labels_update(ordered=f"{__name__}.ordering.ordered_from_step_types")
