"""Multiple-choice goal-step tasks (Step Inference, Goal Inference, Step Ordering) built from procedures as in
Zhang, Lyu & Callison-Burch (2020), "Reasoning about Goals, Steps, and Temporal Ordering with WikiHow".

An app of its own, beside judging (docs/architecture.md): it reads procedures (mining), its examples are
answered by models (the core's answering slice) and validated by the annotation app's `multiple_choice`
studies, which reach it through one seam (human_labels.py).

Pure Python and numpy (checkable on small data): build.py builds them (corpus.py holds what it drafts,
neighbours.py finds the negatives, filters.py holds the appendix D filters), artifacts.py measures a
candidates-only baseline, bigbench.py reads and writes BIG-bench JSON tasks. On the database: models.py,
jobs.py and build_work.py (the builder as a job, selection.py the procedures it reads), exports.py (JSONL,
BIG-bench, the validated test set), answer.py and results.py (models answering the examples, their
accuracy), views.py, selectors.py, admin.py, api.py and the forms and serializers; job_kinds.py,
job_types.py and tasks.py (its two kinds of job).
"""
