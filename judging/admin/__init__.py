"""Django admin for generators, generations (L2), judges, judgments and critical failures (the Job admin is
the core's: h2e_site/jobs/admin.py).

Run actions (the "run" permission = jobs.add_job) start generation and judging jobs through the services of
generate_jobs.py and judge_jobs.py: on generators "Generate L2..." and "Judge with...", on judges "Judge all
generators' missing generations", on judgments "Re-judge parse failures" and "Re-judge (replace)". Each one
ends on the jobs page (the job's own page when it started one job). "Import h2e files" (on the generators'
admin, linked from the Jobs pages) uploads files and starts an import job.
"""

from . import generators, judgments  # noqa: F401  (register the ModelAdmins)
