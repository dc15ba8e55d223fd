"""The demo: the paper's examples and a synthetic world of studies, annotators and runs (`manage.py
demo_setup`),
and the scripts `make demo` runs."""
