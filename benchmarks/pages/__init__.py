"""The pages benchmarks/researcher_pages.py times, by family, and how it times one."""
