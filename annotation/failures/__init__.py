"""The failure browser's reads: every critical failure, from judges (CriticalFailure via Judgment) and from
humans (AnnotatedFailure via Annotation -> StudyItem -> Generation), in one stable order. Attention-check
items of studies are left out: their "failures" are instructed, not found.

- filters.py: the filters, as given (FailureQuery, names) and resolved (FailureFilters, row ids);
- search.py: the text search (q): full text on PostgreSQL, its matches asked of the GIN index first;
- paging.py: the order, the keyset cursor, the rows and one page of them (failure_page), parse_token;
- exports.py: the CSV (every failure the filters select, a keyset page at a time);
- counts.py: the failures per topic under the same filters.

Callers read them through reads.py (`from annotation.failures import reads as failures`, then
`failures.failure_page(...)`), not the modules. The package itself imports nothing: the app loads its tables
(meaning/models.py) at start-up without the browser's reads.
"""
