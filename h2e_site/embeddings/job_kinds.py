"""The embeddings app's kind of job, by name (stored in Job.kind)."""

EMBED = "embed"
