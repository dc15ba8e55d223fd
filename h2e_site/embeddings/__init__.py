"""Embeddings as stored data: each text embedded once per embedding model, searched with faiss.

- models.py: EmbeddingModel (name, revision, dimension: vectors of two models never mix) and TextVector (one
  float16 vector per (model, text hash)).
- models_spec.py: which model a name means, and its identity, known without loading it.
- encoders.py: the encoders themselves (all-MiniLM-L6-v2 in numpy; sentence-transformers where installed).
- sources.py: where texts come from; apps register their sources (procedures, critical failures).
- store.py: reading and writing vectors (numpy).
- jobs.py / work.py: the `embed` job kind: embeds every text of its sources that has no vector yet.
- search.py: neighbour search with faiss (exact inner product below a size, an inverted-file index above it),
  cached per (model, set of texts).
"""
