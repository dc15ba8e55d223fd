"""Failures by meaning (issue #22 item 4): critical-failure descriptions, judges' and humans', found by the
meaning of their text through the embedding store (h2e_site.embeddings).

- space.py: the failure space (every failure description whose vector is stored under the default embedding
  model, as rows of a faiss index) and a failure's similar failures, distance = 1 - cosine.
- models.py: a topic's failure patterns as computed (FailurePatternRun, its FailurePattern clusters).
- jobs.py / work.py: the `failure_patterns` job that computes them (faiss k-means with a seed).
- forms.py / serializers.py: the job's parameters, their bounds read off the model's fields (one place).

numpy and faiss are imported by space.py and work.py only, where vectors are used.
"""
