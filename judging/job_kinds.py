"""The names of the judging app's kinds of job (what Job.kind stores); job_types.py registers them with the
core. Names alone, so that the job modules and job_types.py, which imports them, share them without a loop."""

IMPORT = "import"
GENERATE = "generate"
JUDGE = "judge"
PAIRWISE_JUDGE = "pairwise_judge"
JUDGE_PROBE = "judge_probe"
