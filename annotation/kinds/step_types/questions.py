"""A step-types study's categorical questions for Dawid-Skene (annotation/base/beyond_majority.py): per step
type,
whether each candidate holds (an item: a procedure's candidate, as for kappa and alpha), and the task-level
expert answer per procedure; the study's regular items only (agreement.study_labels)."""

from __future__ import annotations

from collections.abc import Hashable

from annotation.base.beyond_majority import CategoricalQuestion, UnitRef
from annotation.base.models import Study
from annotation.kinds.step_types.agreement import ROW_TITLES, study_labels
from annotation.kinds.step_types.candidates import StepType
from annotation.kinds.step_types.measures import TASK_EXPERT
from h2e_site.stats.dawid_skene import CrowdLabel

HOLDS = "holds"
DOES_NOT_HOLD = "does not hold"
EXPERT = "expert knowledge"
NO_EXPERT = "no expert knowledge"


def step_type_questions(study: Study) -> list[CategoricalQuestion]:
    labels, task_labels, sources = study_labels(study=study)
    questions = []
    for step_type in StepType:
        crowd: list[CrowdLabel] = []
        units: dict[Hashable, UnitRef] = {}
        for label in labels:
            if label.step_type is step_type:
                crowd.append(CrowdLabel(label.item, label.annotator, HOLDS if label.holds else DOES_NOT_HOLD))
                units[label.item] = UnitRef(f"{sources.get(label.unit, label.unit)} · {label.candidate_key}")
        questions.append(
            CategoricalQuestion(
                step_type.value, f"{ROW_TITLES[step_type.value]}: does the candidate hold?", crowd, units
            )
        )
    expert = [CrowdLabel(t.unit, t.annotator, EXPERT if t.expert else NO_EXPERT) for t in task_labels]
    refs: dict[Hashable, UnitRef] = {t.unit: UnitRef(sources.get(t.unit, t.unit)) for t in task_labels}
    questions.append(
        CategoricalQuestion(
            TASK_EXPERT, f"{ROW_TITLES[TASK_EXPERT]}: does the procedure need it?", expert, refs
        )
    )
    return questions
