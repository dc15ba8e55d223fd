"""The names of the mining app's kinds of job (what Job.kind stores); job_types.py registers them with the
core. Names alone, so that the job modules and the registrations, which import them, share them without a
loop."""

MINE = "mine"
