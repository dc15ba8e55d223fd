"""Study kinds: what a study's items are and what its participants answer.

Every kind is one `StudyKindSpec` (annotation/kinds/base.py) in KINDS. A kind owns its items (which rows a
study annotates, and its selection fields on the study builder), the steps a participant must read, the item
page's form and its server-side validation, what an annotation stores, its export rows, and its agreement (its
page, its part of the overview, its API endpoint); everything else (entry, consent, training, comprehension
check, attention-check scheduling, dwell, leases, exactly-k assignment, codes, the study builder's shared
fields and the exports' shared columns) is the shared engine in services.py and views/, which asks
`kind_for(study)`.

A new kind: a module here with a StudyKindSpec subclass (its name, label and description; Study.kind's
choices are read from this registry, so no migration of the engine), an entry in KINDS, and its templates;
nothing in the engine changes. A kind that needs its own tables (the pairwise kind's pair of generations)
defines them in its module; the annotation app loads the registry with its models (apps.py).
"""

from __future__ import annotations

from annotation.models import Study, StudyKind
from annotation.study_types import KINDS_INDEX, KindEntry
from annotation.kinds.base import KindForm, StudyKindSpec
from annotation.kinds.critical_failures import CriticalFailures
from annotation.kinds.multiple_choice import MultipleChoice
from annotation.kinds.pairwise import Pairwise
from annotation.kinds.step_types import StepTypes

KINDS: dict[str, StudyKindSpec] = {
    StudyKind.CRITICAL_FAILURES: CriticalFailures(),
    StudyKind.STEP_TYPES: StepTypes(),
    StudyKind.MULTIPLE_CHOICE: MultipleChoice(),
    Pairwise.kind: Pairwise(),
}
KINDS_INDEX.update(
    {
        name: KindEntry(spec.label, spec.description, spec.noun, spec.agreement_api)
        for name, spec in KINDS.items()
    }
)


def kind_for(study: Study | str) -> StudyKindSpec:
    """The kind of a study (or of a kind's name)."""
    return KINDS[study.kind if isinstance(study, Study) else study]


__all__ = ["KINDS", "KindForm", "StudyKindSpec", "kind_for"]
