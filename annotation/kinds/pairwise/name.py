"""The kind's name: Study.kind of its studies and its key in the registry (its spec's `kind`)."""

KIND = "pairwise"
