"""Jobs: long-running work run by Celery workers, each a Job row that is the source of truth for its progress.

models.py  the Job row (kind, status, progress counters, parameters)
locks.py   the advisory lock that keeps one runner per job
registry.py  what each app registers for its kinds of job (its task, how to retry, how to resume)
loop.py    the one run loop every kind of LLM work plugs into (claim, lock, stream, buffer, cancel, finish)
services.py  cancel, retry, resume at worker start, ETA
configured_models.py  the columns every configured model's table shares (an abstract base)
answer_kinds.py  a job that answers items from a config, declared once per kind of answer
answering_tasks.py, answer_command.py  the Celery task and the command of such a kind, made once
"""
