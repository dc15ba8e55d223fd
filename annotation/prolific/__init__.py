"""Prolific operations: the researcher API's client, webhooks, studies on Prolific, bonuses, their jobs,
tables,
pages and URLs (docs/prolific-api.md)."""
