"""The kind's name: Study.kind of its studies and its key in the registry (its spec's `kind`); the URL
name of its agreement endpoint (api.py), which the kinds it covers register as theirs."""

KIND = "critical_failures"
AGREEMENT_API = "agreement-api"
