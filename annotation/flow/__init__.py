"""The participant flow and the researcher's study pages: services (writes), the study form, the annotator's
and the researcher's views and their URL confs. Above the base; below the kinds, which it reaches only through
the registry (annotation/base/registry.py)."""
