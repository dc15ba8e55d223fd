"""The topic names, importable without Django set up (benchmarks and scripts use them too)."""

from __future__ import annotations

# The 14 WebOrganizer topics that How2Mine samples from (paper §3, Table 7), in the paper's order.
WEBORGANIZER_TOPICS: tuple[str, ...] = (
    "Art & Design",
    "Crime & Law",
    "Education & Jobs",
    "Electronics & Hardware",
    "Fashion & Beauty",
    "Food & Dining",
    "Health",
    "Home & Hobbies",
    "Industrial",
    "Religion",
    "Science, Math & Technology",
    "Sports & Fitness",
    "Transportation",
    "Travel & Tourism",
)
