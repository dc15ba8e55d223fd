"""The name of the annotation app's kind of job (what Job.kind stores); job_types.py registers it with the
core. A name alone, so that the job modules and job_types.py, which imports them, share it without a loop."""

CLASSIFY_STEPS = "classify_steps"
