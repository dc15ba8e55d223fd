"""The kind's name: Study.kind of its studies and its key in the registry (its spec's `kind`); the URL
name of its agreement endpoint (agreement_api.py)."""

KIND = "step_types"
AGREEMENT_API = "step-types-agreement-api"
