"""The one rule for an undefined chance-corrected coefficient (h2e_site/stats): kappa, AC1 and alpha are
undefined with fewer than 2 items, or a chance agreement of 1, and say which; each case by hand."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from annotation.kinds.step_types.measures import Contradiction, contradiction_rate
from h2e_site.stats import agreement_undefined, nominal_chance_agreement
from h2e_site.stats.agreement import Confusion, ac1, kappa, nominal_alpha, rating_counts
from h2e_site.stats.verdicts import Label, binary_alpha


def confusion(tt: int = 0, tf: int = 0, ft: int = 0, ff: int = 0) -> Confusion:
    return {True: {True: tt, False: tf}, False: {True: ft, False: ff}}


ONE_ITEM = "undefined: only 1 item to compare (at least 2 needed)"


def test_it_leaves_kappa_undefined_on_one_item_whether_the_raters_agree_or_not() -> None:
    # Before the rule: agreeing on one item gave p_e = 1 ("—"), disagreeing gave p_o = p_e = 0 (0.000).
    for one in (confusion(tt=1), confusion(tf=1), confusion(ff=1), confusion(ft=1)):
        assert kappa(one).value is None and kappa(one).undefined == ONE_ITEM
        assert ac1(one).value is None and ac1(one).undefined == ONE_ITEM
    assert kappa(confusion()).undefined == "undefined: no item to compare (at least 2 needed)"


def test_it_leaves_kappa_undefined_when_every_label_is_the_same_but_not_ac1() -> None:
    # Three items, both raters "has failure" throughout: p_o = 1, p_e = 1 x 1 = 1: 0 / 0.
    same = confusion(tt=3)
    assert kappa(same).value is None
    assert (
        kappa(same).undefined
        == "undefined: all 3 items have one and the same label, so chance agreement is 1"
    )
    # AC1: pi = 1, p_e = 2 x 1 x 0 = 0, (1 - 0) / (1 - 0) = 1: defined.
    assert ac1(same).value == pytest.approx(1.0) and ac1(same).undefined == ""


def test_two_items_are_enough() -> None:
    # TT 1, FF 1: p_o = 1, p_e = .5 x .5 + .5 x .5 = .5, kappa = 1. TT 1, TF 1: p_o = .5; rater 1 says T on
    # both, rater 2 on one: p_e = 1 x .5 + 0 x .5 = .5, kappa = 0. AC1: pi = .75, p_e = .375, .2.
    assert kappa(confusion(tt=1, ff=1)).value == pytest.approx(1.0)
    assert kappa(confusion(tt=1, tf=1)).value == pytest.approx(0.0)
    assert ac1(confusion(tt=1, tf=1)).value == pytest.approx(0.2)


def test_the_chance_agreement_of_nominal_values_by_hand() -> None:
    assert nominal_chance_agreement([3, 1]) == pytest.approx((3 * 2 + 0) / (4 * 3))  # .5
    assert nominal_chance_agreement([4, 0]) == 1.0
    assert nominal_chance_agreement([1]) is None
    assert agreement_undefined(2, 1 - 1e-15).startswith("undefined: all 2 items have one and the same label")
    assert agreement_undefined(2, 0.5) == ""


def test_alpha_follows_the_same_rule() -> None:
    # One pairable unit (T, F) and a single label elsewhere: the package says 0, the rule says undefined.
    one = [Label("a", 1, True), Label("b", 1, False), Label("a", 2, True)]
    assert binary_alpha(one).value is None and binary_alpha(one).undefined == ONE_ITEM
    # Two units (T, F), (T, T): coincidences o_TF = o_FT = 1, o_TT = 2; n = 4, n_T = 3, n_F = 1.
    # D_o = 2 / 4 = .5, D_e = 2 x 3 x 1 / (4 x 3) = .5: alpha = 1 - .5 / .5 = 0 (and the package agrees).
    two = [Label("a", 1, True), Label("b", 1, False), Label("a", 2, True), Label("b", 2, True)]
    assert binary_alpha(two).value == pytest.approx(0.0)
    assert krippendorff.alpha(value_counts=np.array([[1, 1], [0, 2]]), level_of_measurement="nominal") == (
        pytest.approx(0.0)
    )
    same = [Label("a", 1, True), Label("b", 1, True), Label("a", 2, True), Label("b", 2, True)]
    assert binary_alpha(same).undefined.startswith("undefined: all 2 items have one and the same label")
    # The step types' and multiple choice's alpha (reliability data): one item with two labels.
    assert nominal_alpha(rating_counts({"A": {"i1": 1.0}, "B": {"i1": 0.0}})).undefined == ONE_ITEM


# --- the contradiction rate on its two bases (#19 item 19) ------------------------------------------------


def test_the_contradiction_rate_has_both_bases_each_with_its_wilson_interval() -> None:
    # A 4-step procedure: sequential 0-1, 1-2 and 2-3 hold; 1-2's counterpart @0:1-2 holds, 2-3's @1:2-3 does
    # not; 0-1 has no counterpart. Both: 1; comparable: 2 (1-2, 2-3); every sequential pair: 3.
    decisions = {
        ("p", "sequential:0-1"): True,
        ("p", "sequential:1-2"): True,
        ("p", "sequential:2-3"): True,
        ("p", "interchangeable@0:1-2"): True,
        ("p", "interchangeable@1:2-3"): False,
    }
    result = contradiction_rate(decisions)
    assert result == Contradiction(both=1, comparable=2, sequential=3)
    assert (result.of_comparable.k, result.of_comparable.n) == (1, 2)
    assert (result.of_sequential.k, result.of_sequential.n) == (1, 3)
    # Wilson, z = 1.959964: 1 of 2: centre .5, half = z sqrt(.25 / 2 + z^2 / 16) / (1 + z^2 / 2) = .4055.
    assert result.of_comparable.interval == pytest.approx((0.0945, 0.9055), abs=1e-4)
    # 1 of 3: denominator 1 + z^2/3 = 2.28049, centre (1/3 + z^2/6) / 2.28049 = .42691,
    # half = z sqrt((1/3)(2/3)/3 + z^2/36) / 2.28049 = .36542: (.0615, .7923).
    assert result.of_sequential.interval == pytest.approx((0.0615, 0.7923), abs=1e-4)
    body = result.as_json()
    assert body["of_sequential"]["n"] == 3 and body["of_comparable"]["n"] == 2 and body["rate"] == 0.5


cells = st.integers(min_value=0, max_value=50)


@settings(max_examples=60, deadline=None)
@given(cells, cells, cells, cells)
def test_the_rule_holds_for_every_two_by_two_table(tt: int, tf: int, ft: int, ff: int) -> None:
    """kappa is undefined exactly when n < 2 or every label is the same (p_e = 1), and then has a reason;
    otherwise it is statsmodels' kappa. AC1 is undefined exactly when n < 2."""
    from statsmodels.stats.inter_rater import cohens_kappa

    table = confusion(tt, tf, ft, ff)
    n = tt + tf + ft + ff
    one_label = n in (tt, ff)
    result = kappa(table)
    assert (result.value is None) == (n < 2 or one_label)
    assert bool(result.undefined) == (result.value is None)
    if result.value is not None:
        assert result.value == pytest.approx(cohens_kappa(np.array([[tt, tf], [ft, ff]])).kappa)
    assert (ac1(table).value is None) == (n < 2)
