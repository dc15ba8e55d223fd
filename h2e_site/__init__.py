"""The project package: settings, URLs, the Celery app (h2e_site/celery.py: `celery -A h2e_site` finds it
there; a web or command process imports it when it first sends a job, h2e_site/jobs/registry.py) and the
shared core (jobs, LLM backends, embeddings, statistics, web helpers)."""
