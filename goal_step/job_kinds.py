"""The names of the goal-step app's kinds of job (what Job.kind stores; the same strings as when the tasks
lived in the mining app); job_types.py registers them with the core. Names alone, so that the job modules
and the registrations, which import them, share them without a loop."""

BUILD_TASKS = "build_tasks"
ANSWER_TASKS = "answer_tasks"
