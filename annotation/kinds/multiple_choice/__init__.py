"""Goal-step inference and step ordering (the wikiHow goal-step paper), on the annotation side: the
`multiple_choice` study kind's texts (guidelines.py) and the crowd validation of a task set's test examples
(validation.py: yield, human accuracy, Krippendorff's alpha, the examples kept). The examples themselves are
built in the goal_step app."""

from annotation.base.registry import register
from annotation.kinds.multiple_choice.name import KIND
from goal_step.human_labels import human_labels_update

register(
    KIND,
    label="Multiple choice",
    description="Multiple choice (goal-step inference and step ordering examples)",
    spec=f"{__name__}.spec.MultipleChoice",
)
# The goal-step app reads which test examples the crowd validated from this kind's studies.
human_labels_update(validated=f"{__name__}.validation.task_set_validated_pks")
