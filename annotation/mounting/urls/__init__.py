"""URL confs of the annotation app, composed from each package's own route lists (annotation/flow/urls.py,
annotation/prolific/urls.py, annotation/failures/urls.py) and from every registered kind's, through its
spec's URL hooks (annotation/base/spec.py), so that nothing here names a kind. h2e_site/urls.py mounts them:
annotator.py, studies.py and agreement.py (one namespace each), api.py (the API endpoints) and site.py (the
pages at the site's root, in two groups around judging's)."""
