"""Where the annotation app's packages are mounted: their URL confs, Celery tasks and job kinds. The top of
the
app: nothing in it is imported by the packages it mounts."""
