"""The names of the annotation app's kinds of job (what Job.kind stores); job_types.py registers them with the
core. Names alone, so that the job modules and job_types.py, which imports them, share them without a loop."""

CLASSIFY_STEPS = "classify_steps"
FAILURE_PATTERNS = "failure_patterns"
PROLIFIC_SYNC = "prolific_sync"
PROLIFIC_REVIEW = "prolific_review"
PROLIFIC_BONUSES = "prolific_bonuses"
PROLIFIC_KINDS = (PROLIFIC_SYNC, PROLIFIC_REVIEW, PROLIFIC_BONUSES)
CALIBRATION_ROUND = "calibration_round"
