"""Multiple-choice goal-step tasks (Step Inference, Goal Inference, Step Ordering) built from procedures as in
Zhang, Lyu & Callison-Burch (2020), "Reasoning about Goals, Steps, and Temporal Ordering with WikiHow".

Pure Python and numpy (checkable on small data): build.py builds them (neighbours.py finds the negatives,
filters.py holds the appendix D filters), artifacts.py measures a candidates-only baseline, bigbench.py
reads and writes BIG-bench JSON tasks. On the database: jobs.py (the builder as a job), exports.py (JSONL,
BIG-bench, the validated test set), answer.py and results.py (models answering the examples, their
accuracy), views.py, selectors.py, admin.py and the APIs. The crowd validation is the annotation app's
`multiple_choice` study kind.
"""
