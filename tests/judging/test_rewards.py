"""The auxiliary RL rewards of §E.4 (judging/rewards.py; issue #32's acceptance): the length reward against
the formula computed by hand, and the step-format verifier on the lists the issue names."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from judging.rewards import final_answer, length_ratio, length_reward, step_format

# R_len(r) = 1 when |r - 1| <= 0.2, else exp(-5 (|r - 1| - 0.2) / 0.8), worked out by hand:
#   r = 0.5:  |r-1| = 0.5,  (0.5 - 0.2) / 0.8 = 0.375,   exp(-1.875)  = 0.153354...
#   r = 1.34: |r-1| = 0.34, (0.34 - 0.2) / 0.8 = 0.175,  exp(-0.875)  = 0.416862...
#   r = 1.53: |r-1| = 0.53, (0.53 - 0.2) / 0.8 = 0.4125, exp(-2.0625) = 0.127136...
#   r = 2:    |r-1| = 1,    (1 - 0.2) / 0.8 = 1,         exp(-5)      = 0.006738...
#   r = 0.8, 1.0, 1.2: inside the band (the edges included): 1.
BY_HAND = [
    (0.5, 0.1533549),
    (0.8, 1.0),
    (1.0, 1.0),
    (1.2, 1.0),
    (1.34, 0.4168620),
    (1.53, 0.1271357),
    (2.0, 0.0067379),
]


@pytest.mark.parametrize(("ratio", "expected"), BY_HAND)
def test_the_length_reward_is_the_papers_formula(ratio: float, expected: float) -> None:
    assert length_reward(ratio) == pytest.approx(expected, abs=1e-6)


def test_the_length_reward_takes_tau_and_alpha() -> None:
    assert length_reward(130 / 100, tau=0.3) == 1.0  # the band's edge, as token counts give it
    assert length_reward(1.5, tau=0.0, alpha=1.0) == pytest.approx(math.exp(-0.5))
    assert length_reward(1.5, alpha=0.0) == 1.0  # no decay


@pytest.mark.parametrize("bad", [-0.1, math.nan, math.inf])
def test_a_ratio_that_is_no_length_ratio_is_refused(bad: float) -> None:
    with pytest.raises(ValueError, match="ratio"):
        length_reward(bad)


@given(st.floats(min_value=0, max_value=50), st.floats(min_value=0, max_value=50))
def test_the_length_reward_falls_with_the_distance_from_the_reference(a: float, b: float) -> None:
    near, far = sorted((a, b), key=lambda r: abs(r - 1))
    assert 0 < length_reward(far) <= length_reward(near) <= 1


def test_the_length_ratio_needs_reference_tokens() -> None:
    assert length_ratio(134, 100) == pytest.approx(1.34)
    with pytest.raises(ValueError, match="ref > 0"):
        length_ratio(10, 0)


def test_it_passes_a_numbered_list_from_one_with_any_separator_and_prose_around() -> None:
    answer = "Here is how:\n1. Boil water.\n2) Add the pasta\n   and stir once.\n3: Drain it.\nEnjoy!"
    verdict = step_format(answer)
    assert verdict.passed and verdict.n_steps == 3 and verdict.reward == 1.0
    assert step_format(answer, expected_steps=3).passed


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("0. Boil water.\n1. Add pasta.", "step 1 is numbered 0, not 1"),
        ("2. Boil water.\n3. Add pasta.", "step 1 is numbered 2, not 1"),
        ("1. Boil water.\n3. Add pasta.", "step 2 is numbered 3, not 2"),
        ("1. Boil water.\n1. Add pasta.", "step 2 is numbered 1, not 2"),
        ("- Boil water.\n- Add pasta.", "line 1 is a bullet"),
        ("1. Boil water.\n* Add salt.\n2. Add pasta.", "line 2 is a bullet"),
        ("1. Boil water.\n1.1 Salt it.\n2. Add pasta.", "line 2 is a sub-step"),
        ("Boil water, then add pasta.", "no numbered step"),
        ("", "no numbered step"),
    ],
)
def test_it_fails_what_is_not_one_flat_list_numbered_from_one(answer: str, reason: str) -> None:
    verdict = step_format(answer)
    assert not verdict.passed and verdict.reward == 0.0 and reason in verdict.reason


def test_an_expected_count_that_differs_fails() -> None:
    verdict = step_format("1. Boil water.\n2. Add pasta.", expected_steps=3)
    assert not verdict.passed and verdict.reason == "2 steps, not the 3 expected"


def test_only_the_answer_after_the_thinking_is_read() -> None:
    text = "<think>\n- maybe bullets?\n0. or from zero\n</think>\n1. Boil water.\n2. Add pasta."
    answer = final_answer(text)
    assert answer == "1. Boil water.\n2. Add pasta."
    assert step_format(answer, expected_steps=2).passed
    assert not step_format(text).passed  # the thinking itself would fail the verifier
    # a list only inside the thinking is no answer
    assert not step_format(final_answer("<think>1. Boil water.\n2. Add pasta.</think>Done.")).passed
    assert final_answer("1. Boil water.") == "1. Boil water."  # no tag: the whole text
    assert final_answer("a</think>b</think> c") == "c"  # after the last tag
    assert final_answer("x<|end|>1. A", answer_after="<|end|>") == "1. A"
