"""The annotation app's models, by what they hold: studies, their items, participants, assignments and
annotations (studies.py); calibration rounds (calibration.py); the step-types kind's rows (step_types.py);
Prolific's events, statuses and bonuses (prolific.py); adjudicated gold (gold.py). Every model is imported
here, so `annotation.models` names them all, as Django and the rest of the code expect."""

from annotation.models.calibration import CalibrationDesign, CalibrationDraw, CalibrationRound
from annotation.models.gold import GoldEvent
from annotation.models.prolific import BonusState, ParticipantStatus, ProlificBonus, ProlificEvent
from annotation.models.step_types import (
    StepCandidate,
    StepTypeChoice,
    StepTypeClassifier,
    StepTypeLabel,
    StepTypeLabelSet,
    StepTypePrediction,
)
from annotation.models.studies import (
    PROLIFIC_STUDY_ID,
    STUDY_PAGES,
    AnnotatedFailure,
    AnnotatedFailureQuerySet,
    Annotation,
    AnnotationQuerySet,
    Assignment,
    AssignmentStatus,
    Participant,
    ParticipantQuerySet,
    Stage,
    Study,
    StudyItem,
    StudyItemQuerySet,
    StudyKind,
    study_slug_free,
)

__all__ = [
    "PROLIFIC_STUDY_ID",
    "STUDY_PAGES",
    "AnnotatedFailure",
    "AnnotatedFailureQuerySet",
    "Annotation",
    "AnnotationQuerySet",
    "Assignment",
    "AssignmentStatus",
    "BonusState",
    "CalibrationDesign",
    "CalibrationDraw",
    "CalibrationRound",
    "GoldEvent",
    "Participant",
    "ParticipantQuerySet",
    "ParticipantStatus",
    "ProlificBonus",
    "ProlificEvent",
    "Stage",
    "StepCandidate",
    "StepTypeChoice",
    "StepTypeClassifier",
    "StepTypeLabel",
    "StepTypeLabelSet",
    "StepTypePrediction",
    "Study",
    "StudyItem",
    "StudyItemQuerySet",
    "StudyKind",
    "study_slug_free",
]
