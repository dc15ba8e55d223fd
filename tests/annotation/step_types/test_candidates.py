"""The candidates of the step-type protocol (SIO paper §3): counts, exact tuples, keys, context windows."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from annotation.kinds.step_types.candidates import Candidate, StepType, candidates, context_window

SEQ, INT, OPT = StepType.SEQUENTIAL, StepType.INTERCHANGEABLE, StepType.OPTIONAL

# Table 7 (B), How to Iron on a Patch - Ironing on the Patch.
PATCH = [
    "Lay the base item on a flat, heat-resistant surface",
    "Place the patch in the position you chose",
    "Heat up an iron",
    "Place a thin towel over the patch",
    "Position the heated iron over the patch and press down",
    "Remove the iron and allow the patch to cool",
]


def of_type(n: int, step_type: StepType) -> list[Candidate]:
    return [candidate for candidate in candidates(n) if candidate.step_type is step_type]


@pytest.mark.parametrize("n", range(13))
def test_it_enumerates_n_minus_1_sequential_and_n_minus_2_anchored_candidates(n: int) -> None:
    assert len(of_type(n, SEQ)) == max(n - 1, 0)
    assert len(of_type(n, INT)) == max(n - 2, 0)
    assert len(of_type(n, OPT)) == max(n - 2, 0)
    assert len(candidates(n)) == max(n - 1, 0) + 2 * max(n - 2, 0)


def test_it_gives_no_candidates_below_two_steps_and_one_sequential_pair_for_two() -> None:
    assert candidates(0) == []
    assert candidates(1) == []
    assert candidates(2) == [Candidate(SEQ, None, (0, 1))]


def test_it_enumerates_a_four_step_procedure_exactly() -> None:
    # §3 with |t| = 4: sequential (s0,s1) (s1,s2) (s2,s3); interchangeable at s0: (s1,s2), at s1: (s2,s3);
    # optional at s0: s1, at s1: s2.
    assert [(c.step_type, c.anchor, c.steps) for c in candidates(4)] == [
        (SEQ, None, (0, 1)),
        (SEQ, None, (1, 2)),
        (SEQ, None, (2, 3)),
        (INT, 0, (1, 2)),
        (INT, 1, (2, 3)),
        (OPT, 0, (1,)),
        (OPT, 1, (2,)),
    ]
    assert [c.key for c in candidates(4)] == [
        "sequential:0-1",
        "sequential:1-2",
        "sequential:2-3",
        "interchangeable@0:1-2",
        "interchangeable@1:2-3",
        "optional@0:1",
        "optional@1:2",
    ]


def test_it_matches_the_paper_ranges_for_the_patch_task() -> None:
    # Table 7 (B) annotates sequential (0,1) (3,4) (4,5) and interchangeable (1,2) (2,3): all are candidates,
    # and the last interchangeable pair / optional step is (4, 5) / 4, i.e. [(s1,s2) .. (s|t|-2,s|t|-1)].
    keys = {c.key for c in candidates(len(PATCH))}
    assert {"sequential:0-1", "sequential:3-4", "sequential:4-5"} <= keys
    assert {"interchangeable@0:1-2", "interchangeable@1:2-3"} <= keys
    assert of_type(6, INT)[-1].steps == (4, 5)
    assert of_type(6, OPT)[-1].steps == (4,)


def test_it_refuses_a_negative_step_count() -> None:
    with pytest.raises(ValueError, match="-1 steps"):
        candidates(-1)


@pytest.mark.parametrize("n", range(13))
def test_it_round_trips_every_key(n: int) -> None:
    for candidate in candidates(n):
        assert Candidate.from_key(candidate.key) == candidate
        assert str(candidate) == candidate.key
    assert len({c.key for c in candidates(n)}) == len(candidates(n))


@pytest.mark.parametrize(
    "key",
    [
        "",
        "sequential",
        "sequential:",
        "sequential:1",
        "sequential:1-3",
        "sequential:2-1",
        "sequential:0-1-2",
        "sequential@0:1-2",
        "sequential:01-02",
        "sequential:-1-0",
        "sequential:0\u20131",  # en dash
        "sequential:\u0663-\u0664",  # Arabic-Indic digits
        " sequential:0-1",
        "sequential:0-1 ",
        "Sequential:0-1",
        "interchangeable:1-2",
        "interchangeable@1:1-2",
        "interchangeable@0:1",
        "interchangeable@0:0-1",
        "interchangeable@0:1-3",
        "optional:1",
        "optional@0:1-2",
        "optional@1:1",
        "optional@0:0",
        "optional@-1:0",
        "skip@0:1",
    ],
)
def test_it_refuses_malformed_keys_naming_them(key: str) -> None:
    with pytest.raises(ValueError, match=re.escape(repr(key))):
        Candidate.from_key(key)


@pytest.mark.parametrize(
    ("step_type", "anchor", "steps"),
    [
        (SEQ, 0, (0, 1)),
        (SEQ, None, [0, 1]),
        (SEQ, None, (True, 2)),
        (INT, None, (1, 2)),
        (INT, 0, (0, 1)),
        (OPT, 2, (2,)),
        ("sequential", None, (0, 1)),
    ],
)
def test_it_refuses_inconsistent_fields(
    step_type: StepType, anchor: int | None, steps: tuple[int, ...]
) -> None:
    with pytest.raises(ValueError, match="not a step-type candidate"):
        Candidate(step_type, anchor, steps)


def test_it_shows_the_pair_for_sequential_and_the_anchor_plus_two_otherwise() -> None:
    assert context_window(Candidate.sequential(3), PATCH) == [(3, PATCH[3]), (4, PATCH[4])]
    assert context_window(Candidate.interchangeable(0), PATCH) == [
        (0, PATCH[0]),
        (1, PATCH[1]),
        (2, PATCH[2]),
    ]
    assert context_window(Candidate.optional(3), PATCH) == [(3, PATCH[3]), (4, PATCH[4]), (5, PATCH[5])]


def test_it_refuses_a_window_past_the_last_step() -> None:
    with pytest.raises(ValueError, match="optional@4:5 needs step 6"):
        context_window(Candidate.optional(4), PATCH)
    with pytest.raises(ValueError, match="sequential:5-6"):
        context_window(Candidate.sequential(5), PATCH)


@given(st.integers(min_value=0, max_value=80))
def test_it_keeps_every_candidate_inside_the_procedure(n: int) -> None:
    steps = [f"step {i}" for i in range(n)]
    found = candidates(n)
    assert len({c.key for c in found}) == len(found)
    for candidate in found:
        assert Candidate.from_key(candidate.key) == candidate
        window = [index for index, _ in context_window(candidate, steps)]
        assert window == list(range(window[0], window[0] + len(window)))
        assert len(window) == (2 if candidate.step_type is SEQ else 3)
        assert window[-1] <= n - 1
        assert set(candidate.steps) <= set(window)
    # every window that fits is there: together they end at every step from 1 to the last one
    assert {c.last_step for c in found} == set(range(1, n))


@given(st.text(max_size=30))
def test_it_reads_a_key_back_only_when_it_is_the_canonical_key(text: str) -> None:
    try:
        candidate = Candidate.from_key(text)
    except ValueError:
        return
    assert candidate.key == text


@given(st.sampled_from(list(StepType)), st.integers(min_value=0, max_value=10_000))
def test_it_round_trips_any_built_candidate(step_type: StepType, i: int) -> None:
    build = {SEQ: Candidate.sequential, INT: Candidate.interchangeable, OPT: Candidate.optional}[step_type]
    candidate = build(i)
    assert Candidate.from_key(candidate.key) == candidate
    assert candidate in candidates(candidate.last_step + 1)
