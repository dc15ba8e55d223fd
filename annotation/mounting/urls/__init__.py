"""URL confs of the annotation app, one per page family (included by h2e_site/urls.py)."""
