"""Goal-step inference and step ordering (the wikiHow goal-step paper), on the annotation side: the
`multiple_choice` study kind's texts (guidelines.py) and the crowd validation of a task set's test examples
(validation.py: yield, human accuracy, Krippendorff's alpha, the examples kept). The examples themselves are
built in the goal_step app."""

from annotation.base.registry import register
from annotation.kinds.multiple_choice.spec import MultipleChoice

register(MultipleChoice())
