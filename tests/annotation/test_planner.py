"""The budget planner (annotation/kinds/critical_failures/calibration/planner.py, /calibration/plan/,
/api/calibration/plan/): minutes per item
from a study annotated through the real services, the counts and the cost by hand, the difference and topic
scopes against h2e_site.stats.calibration's functions, the paper's example by hand, bad inputs refused with a
400 naming the field (fuzzed: never a 5xx), staff only. (The planner's n against a simulation:
tests/judging/test_calibration.py.)"""

from __future__ import annotations

import math
import re
import statistics
from typing import Any

import pytest
from django.test import Client
from hypothesis import given
from hypothesis import strategies as st

from annotation.base.models import Annotation, Study
from annotation.kinds.critical_failures.calibration.planner import (
    PlanInput,
    paper_example,
    plan,
)
from annotation.kinds.critical_failures.calibration.planner_time import cost, minutes_per_item
from annotation.kinds.critical_failures.models import CalibrationDesign, CalibrationDraw, CalibrationRound
from h2e_site.stats.calibration import z_value
from h2e_site.stats.calibration_plan import (
    PlanMoments,
    labels_needed,
    labels_needed_for_difference,
    labels_needed_from,
)
from judging.models import Generation, Generator, Judge
from tests.annotation.conftest import make_study
from tests.annotation.test_agreement_pages import annotate, items_in_order, verdict
from tests.factories import make_generation, make_generator, make_judge, make_procedure, make_user
from tests.fuzzing import fuzz_settings

pytestmark = pytest.mark.django_db
PAGE = "/calibration/plan/"
API = "/api/calibration/plan/"

# The judge's verdicts (True = a critical failure) on the study's 4 items, in position order; the humans'
# majorities (test_agreement_pages.VERDICTS) are: failure, tie, no failure, tie.
JUDGE = [True, False, False, True]


@pytest.fixture
def world() -> dict[str, Any]:
    """A critical-failures study of 4 items x 4 annotators (active seconds 31-34 s, through the services),
    drawn as a uniform calibration sample of its generator's 10 examples (4 drawn: pi = 0.4); one judge
    judged all 10 and a second generator's 10 examples (never labelled)."""
    study = make_study(n_items=4, k=4, slug="plan-study", items_per_participant=0)
    annotate(study)
    generator = items_in_order(study)[0].generator
    extra = [
        make_generation(generator=generator, procedure=make_procedure(goal=f"Extra {i}", topic="Health"))
        for i in range(6)
    ]
    judge = make_judge(judge_id="judge-plan")
    for generation, says_failure in zip(items_in_order(study), JUDGE, strict=True):
        verdict(judge, generation, says_failure)
    for i, generation in enumerate(extra):
        verdict(judge, generation, i % 3 == 0)
    round_ = CalibrationRound.objects.create(study=study, number=1, design=CalibrationDesign.UNIFORM, size=4)
    drawn = {g.pk for g in items_in_order(study)}
    CalibrationDraw.objects.bulk_create(
        CalibrationDraw(round=round_, generation=g, probability=0.4, drawn=g.pk in drawn)
        for g in Generation.objects.filter(generator=generator)
    )
    other = make_generator(model="other-model", generator_id="gen-other")
    for i in range(10):
        generation = make_generation(
            generator=other, procedure=make_procedure(goal=f"Other {i}", topic="Food")
        )
        verdict(judge, generation, i % 2 == 0)
    return {"study": study, "generator": generator, "judge": judge, "other": other}


def test_minutes_per_item_is_the_median_active_time_elapsed_where_none(world: dict[str, Any]) -> None:
    study: Study = world["study"]
    timing = minutes_per_item(study)
    assert timing.n_annotations == 16  # 4 participants x 4 items, each with active_seconds 30 + n
    assert timing.minutes_per_item == pytest.approx(statistics.median([31, 32, 33, 34]) / 60)
    assert "median" in timing.source
    # Two annotations without the browser's active time: their server elapsed time counts instead.
    first_two = list(Annotation.objects.filter(study=study).order_by("pk").values_list("pk", flat=True)[:2])
    Annotation.objects.filter(pk__in=first_two).update(active_seconds=None, elapsed_seconds=600.0)
    seconds = [a.active_seconds or a.elapsed_seconds for a in Annotation.objects.filter(study=study)]
    assert sorted(seconds)[-2:] == [600.0, 600.0]
    assert minutes_per_item(study).minutes_per_item == pytest.approx(statistics.median(seconds) / 60)
    empty = make_study(n_items=2, slug="no-annotations", estimated_item_minutes=2.5)
    assert minutes_per_item(empty).minutes_per_item == 2.5
    assert "estimate (no annotation yet)" in minutes_per_item(empty).source
    assert minutes_per_item(None).source.startswith("the default estimate")


def test_it_counts_items_annotations_participants_and_cost_by_hand(world: dict[str, Any]) -> None:
    generator: Generator = world["generator"]
    inputs = PlanInput(judge="judge-plan", generator=generator.generator_id, half_width_pp=30, hourly_rate=12,
                       fee_percent=25)  # fmt: skip
    result = plan(inputs)
    # Human majorities 0, 0.5, 1, 0.5; the judge's labels (1 = no failure) 0, 1, 1, 0; N = 10.
    expected = labels_needed_from([0, 0.5, 1, 0.5], [0, 1, 1, 0], N=10, half_width=0.30)
    assert expected.n_needed is not None
    [part] = result.parts
    assert (part.N, part.counted, part.source) == (10, 4, "labels")
    assert part.n_needed == expected.n_needed and part.more == max(0, expected.n_needed - 4)
    assert result.k == 4 and result.study_slug == "plan-study"
    assert result.items_per_participant == 10 and "as many items as remain" in result.notes[0]
    more = part.more or 0
    minutes = statistics.median([31, 32, 33, 34]) / 60
    assert result.annotations == more * 4
    assert result.participants == math.ceil(more * 4 / 10)
    assert result.annotator_hours == pytest.approx(more * 4 * minutes / 60)
    assert result.cost == pytest.approx(more * 4 * minutes / 60 * 12 * 1.25)
    assert cost(2.0, 15.0, 0.0) == 30.0 and cost(2.0, 15.0, 10.0) == pytest.approx(33.0)
    narrow = plan(PlanInput(judge="judge-plan", generator=generator.generator_id, half_width_pp=2,
                            hourly_rate=12, k=3, items_per_participant=7))  # fmt: skip
    assert narrow.parts[0].more == (narrow.parts[0].n_needed or 0) - 4 and not narrow.parts[0].within_N
    assert narrow.annotations == 3 * (narrow.more_items or 0)
    assert narrow.participants == math.ceil((narrow.annotations or 0) / 7)


def test_it_plans_a_difference_and_the_unlabelled_generator_from_the_assumptions(
    world: dict[str, Any],
) -> None:
    generator: Generator = world["generator"]
    inputs = PlanInput(judge="judge-plan", generator=generator.generator_id, scope="difference",
                       other_generator="gen-other", half_width_pp=40, hourly_rate=10,
                       human_share_pp=50, agreement_pp=80)  # fmt: skip
    result = plan(inputs)
    first = PlanMoments.from_labels([0, 0.5, 1, 0.5], [0, 1, 1, 0])
    second = PlanMoments.from_shares(human_share=0.5, judge_share=0.5, agreement=0.8)  # judge passes 5 of 10
    expected = labels_needed_for_difference(
        half_width=0.4, first=first, second=second, N_first=10, N_second=10
    )
    assert expected.n_needed is not None
    assert [p.source for p in result.parts] == ["labels", "assumptions"]
    assert [p.n_needed for p in result.parts] == [expected.n_needed] * 2
    assert result.more_items == max(0, expected.n_needed - 4) + expected.n_needed
    [detectable] = result.detectable
    assert detectable.generator_id == "gen-other" and detectable.minimum is None  # no labels of it yet


def test_it_plans_per_topic_and_with_no_labels_from_the_assumptions(world: dict[str, Any]) -> None:
    other: Generator = world["other"]
    result = plan(
        PlanInput(judge="judge-plan", generator=other.generator_id, half_width_pp=20, hourly_rate=10)
    )
    expected = labels_needed(half_width=0.2, human_share=0.49, judge_share=0.5, agreement=0.805, N=10)
    assert result.parts[0].n_needed == expected.n_needed and result.parts[0].source == "assumptions"
    assert "fewer than 2" in result.parts[0].note and result.study_slug == ""
    assert result.timing.source.startswith("the default estimate")
    topics = plan(PlanInput(judge="judge-plan", generator=other.generator_id, scope="topics",
                            half_width_pp=20, hourly_rate=10))  # fmt: skip
    assert [(p.name, p.N, p.source) for p in topics.parts] == [("Food", 10, "assumptions")]
    labelled = plan(PlanInput(judge="judge-plan", generator=world["generator"].generator_id, scope="topics",
                              half_width_pp=20, hourly_rate=10))  # fmt: skip
    assert [(p.name, p.N, p.counted, p.source) for p in labelled.parts] == [("Health", 10, 4, "labels")]


def test_the_papers_example_by_hand() -> None:
    paper = paper_example()
    judge_share = 0.49 * 0.814 + 0.51 * 0.204
    assert paper["judge_share"] == pytest.approx(judge_share, abs=1e-4)
    assert paper["human_only_half_width"] == pytest.approx(z_value() * math.sqrt(0.49 * 0.51 / 200))
    assert paper["judge_only_half_width"] == pytest.approx(
        z_value() * math.sqrt(judge_share * (1 - judge_share) / 7000)
    )
    assert paper["judge_only_half_width"] < paper["calibrated_half_width"] < paper["human_only_half_width"]
    assert 200 < paper["effective_n"] < 400


@pytest.mark.parametrize(
    ("query", "field", "words"),
    [
        ({"judge": "nobody"}, "judge", "nobody"),
        ({"generator": "gen-nobody"}, "generator", "gen-nobody"),
        ({"scope": "difference"}, "other_generator", "second generator"),
        ({"agreement_pp": "100", "generator": "gen-other"}, "agreement_pp", "impossible"),  # no labels
        ({"half_width_pp": "0"}, "half_width_pp", "0.1"),
        ({"hourly_rate": "-1"}, "hourly_rate", "0"),
        ({"k": "2.5"}, "k", ""),
    ],
)
def test_a_bad_input_is_a_400_naming_the_field(
    world: dict[str, Any], client: Client, query: dict[str, str], field: str, words: str
) -> None:
    client.force_login(make_user(is_staff=True))
    base = {"judge": "judge-plan", "generator": world["generator"].generator_id, "half_width_pp": "5",
            "hourly_rate": "12"}  # fmt: skip
    if field == "judge" and words == "nobody":  # the page's choice field names it as not a choice
        base["judge"] = "nobody"
    page = client.get(PAGE, {**base, **query})
    assert page.status_code == 400
    assert words in page.content.decode() and f'id="id_{field}' in page.content.decode()
    api = client.get(API, {**base, **query})
    missing = words in {"nobody", "gen-nobody"}  # a name that does not exist: 404 in the API, as its filters
    assert api.status_code == (404 if missing else 400) and field in api.json(), api.json()
    assert words in str(api.json()[field])


def test_a_valid_plan_renders_and_answers_json(world: dict[str, Any], client: Client) -> None:
    client.force_login(make_user(is_staff=True))
    query = {"judge": "judge-plan", "generator": world["generator"].generator_id, "half_width_pp": "30",
             "hourly_rate": "12", "fee_percent": "25"}  # fmt: skip
    page = client.get(PAGE, query)
    assert page.status_code == 200
    html = page.content.decode()
    assert "more human-labelled items" in html and "25 % fee" in html and "the paper" in html
    data = client.get(API, query).json()
    expected = plan(PlanInput(judge="judge-plan", generator=world["generator"].generator_id, half_width_pp=30,
                              hourly_rate=12, fee_percent=25))  # fmt: skip
    assert data["more_items"] == expected.more_items and data["cost"] == pytest.approx(expected.cost)
    assert data["paper_example"]["items"] == 200 and data["fee_included"] is True
    assert client.get(PAGE).status_code == 200  # the empty form, with the paper's example


def test_staff_only(world: dict[str, Any], client: Client) -> None:
    assert client.get(PAGE).status_code == 302
    assert client.get(API).status_code in {401, 403}
    client.force_login(make_user(is_staff=False))
    assert client.get(PAGE).status_code == 403
    assert client.get(API).status_code == 403


_text = st.one_of(
    st.text(max_size=12), st.sampled_from(["judge-plan", "gen-other", "nan", "inf", "-0", "1e309"])
)
_number = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(str), st.integers(-5, 200).map(str), _text
)
_query = st.fixed_dictionaries(
    {},
    optional={
        "judge": _text,
        "generator": _text,
        "scope": st.one_of(st.sampled_from(["generator", "topics", "difference"]), _text),
        "other_generator": _text,
        "half_width_pp": _number,
        "hourly_rate": _number,
        "currency": st.one_of(st.just("GBP"), _text),
        "fee_percent": _number,
        "k": _number,
        "items_per_participant": _number,
        "human_share_pp": _number,
        "agreement_pp": _number,
    },
)


@fuzz_settings(40, shrink=False)
@given(query=_query)
def test_any_query_is_answered_without_a_5xx(query: dict[str, str]) -> None:
    """Any values (judge and generator ids that exist or not, numbers out of range or not numbers): 200 or a
    400 naming a field the query gave or needs."""
    if not Judge.objects.filter(judge_id="judge-plan").exists():
        judge = make_judge(judge_id="judge-plan")
        other = make_generator(generator_id="gen-other")
        for i in range(3):
            verdict(judge, make_generation(generator=other, procedure=make_procedure(goal=f"G {i}")), i == 0)
    client = Client()
    client.force_login(make_user(is_staff=True))
    clean = {k: v.replace("\x00", "") for k, v in query.items()}
    page = client.get(PAGE, clean)
    assert page.status_code in {200, 400}
    api = client.get(API, clean)
    assert api.status_code in {200, 400, 404}, api.content[:300]
    if api.status_code in {400, 404}:
        named = set(api.json())
        assert named and named <= {*_query_fields(), "non_field_errors"}, named


def _query_fields() -> set[str]:
    return {"judge", "generator", "scope", "other_generator", "half_width_pp", "hourly_rate", "currency",
            "fee_percent", "k", "items_per_participant", "human_share_pp", "agreement_pp"}  # fmt: skip


# --- the assumptions: feasible defaults, the judge that gives one verdict, an impossible agreement (#31) ----

# Judge shares of "no critical failure" by generator and topic (4 examples each, no human label yet).
SHARES = {
    "gen-pass-all": {"Cooking": [True, True], "Food": [True, True]},  # the judge passes every example
    "gen-fail-all": {"Cooking": [False, False], "Food": [False, False]},
    "gen-mixed": {"Cooking": [True, True], "Food": [True, False]},  # Cooking 100 %, Food 50 %
    "gen-quarter": {"Cooking": [False, False], "Food": [True, False]},  # 25 %; Cooking 0 %, Food 50 %
}


def shares_world() -> Judge:
    """The judge 'judge-shares' on four generators whose topics it passes as in SHARES (built once per test:
    Hypothesis's examples share the test's transaction)."""
    judge = Judge.objects.filter(judge_id="judge-shares").first()
    if judge is not None:
        return judge
    judge = make_judge(judge_id="judge-shares")
    for generator_id, topics in SHARES.items():
        generator = make_generator(model=generator_id, generator_id=generator_id)
        for topic, passes in topics.items():
            for i, passed in enumerate(passes):
                procedure = make_procedure(goal=f"{generator_id} {topic} {i}", topic=topic)
                verdict(judge, make_generation(generator=generator, procedure=procedure), not passed)
    return judge


def _shares_query(**values: Any) -> dict[str, str]:
    base = {"judge": "judge-shares", "generator": "gen-pass-all", "half_width_pp": "5", "hourly_rate": "12"}
    return {**base, **{k: str(v) for k, v in values.items() if v is not None}}


def test_it_plans_when_the_judge_passes_every_example(client: Client) -> None:
    """The failing inputs of #31 item 2: the form's former defaults (a human share of 49 %, an agreement of
    80.5 %) with a judge that passes every example answered 400 "must lie between 49.0 and 49.0 %", for the
    generator and for each topic. The agreement is then fixed by the human share and carries nothing: the
    plan is the human-only one (lam = 0), and says so."""
    shares_world()
    client.force_login(make_user(is_staff=True))
    human_only = labels_needed(half_width=0.05, human_share=0.49, judge_share=0.49, agreement=0.49, N=4)
    for scope in ("generator", "topics"):
        for generator in ("gen-pass-all", "gen-fail-all"):
            for agreement in ("80.5", None):
                query = _shares_query(
                    generator=generator, scope=scope, human_share_pp="49", agreement_pp=agreement
                )
                page = client.get(PAGE, query)
                assert page.status_code == 200, page.content.decode()[-2000:]
                assert "the same verdict" in page.content.decode()
                data = client.get(API, query).json()
                assert [p["lam"] for p in data["parts"]] == [0.0] * len(data["parts"])
                assert data["parts"][0]["n_needed"] == human_only.n_needed  # N = 4 or 2: same n here
                unused = "the agreement entered is not used" in data["parts"][0]["note"]
                assert unused == (agreement is not None)
    mixed = client.get(API, _shares_query(generator="gen-mixed", scope="topics", agreement_pp="80.5")).json()
    assert [(p["name"], p["assumed"]["judge_share_pp"]) for p in mixed["parts"]] == [
        ("Cooking", 100.0),
        ("Food", 50.0),
    ]
    assert mixed["parts"][1]["assumed"]["agreement_pp"] == 80.5 and mixed["parts"][1]["lam"] > 0


def test_an_impossible_agreement_names_the_field_the_part_and_its_range(client: Client) -> None:
    """gen-quarter: the judge passes 25 %; with a human share of 49 % the agreement lies between
    |0.49 + 0.25 - 1| = 26 % and 1 - |0.49 - 0.25| = 76 %; 90 % is refused, naming the range and the human
    shares that would allow 90 % (between |0.25 + 0.9 - 1| = 15 % and 1 - |0.25 - 0.9| = 35 %)."""
    shares_world()
    client.force_login(make_user(is_staff=True))
    query = _shares_query(generator="gen-quarter", agreement_pp="90")
    page = client.get(PAGE, query)
    assert page.status_code == 400
    html = page.content.decode()
    assert "between 26.0 % (as opposed as these shares allow) and 76.0 % (as alike)" in html
    assert "a human share between 15.0 and 35.0 %" in html and "leave the agreement blank" in html
    [message] = client.get(API, query).json()["agreement_pp"]
    assert "on generator gen-quarter's examples" in message
    # Per topic: the topic whose shares cannot produce it is named (Food: 50 %, range 1-99 %; Cooking: 0 %,
    # one verdict, planned as for human labels alone).
    topics = client.get(
        API, _shares_query(generator="gen-quarter", scope="topics", agreement_pp="99.5")
    ).json()
    [topic] = topics["agreement_pp"]
    assert (
        "on topic 'Food'" in topic
        and "between 1.0 % (as opposed" in topic
        and "and 99.0 % (as alike)" in topic
    )
    # A human share of 0 or 100 % leaves nothing to plan: refused with its range.
    [share] = client.get(API, _shares_query(human_share_pp="100")).json()["human_share_pp"]
    assert share == "must lie between 0.1 and 99.9"
    assert client.get(PAGE, _shares_query(human_share_pp="0")).status_code == 400


_RANGE = re.compile(r"between ([0-9.]+) % \(as opposed as these shares allow\) and ([0-9.]+) % \(as alike\)")


@fuzz_settings(15, shrink=False)
@given(
    generator=st.sampled_from(sorted(SHARES)),
    scope=st.sampled_from(["generator", "topics", "difference"]),
    human=st.floats(0.1, 99.9).map(lambda v: round(v, 2)),
    agreement=st.one_of(st.none(), st.floats(0, 100).map(lambda v: round(v, 2))),
)
def test_defaults_always_plan_and_an_impossible_agreement_is_a_400_with_a_range(
    generator: str, scope: str, human: float, agreement: float | None
) -> None:
    """Any generator, scope and human share: with the agreement left blank (the default) the plan answers
    200; an entered agreement answers 200 where every part's shares can produce it (or the judge gives the
    part one verdict), else 400 naming agreement_pp with a range whose ends differ and exclude the value."""
    shares_world()
    client = Client()
    client.force_login(make_user(is_staff=True))
    other = "gen-mixed" if generator != "gen-mixed" else "gen-quarter"
    query = _shares_query(generator=generator, scope=scope, human_share_pp=human, agreement_pp=agreement)
    if scope == "difference":
        query["other_generator"] = other
    answer = client.get(API, query)
    feasible = agreement is None or all(
        _feasible(human / 100, agreement / 100, passes)
        for name in ([generator, other] if scope == "difference" else [generator])
        for passes in (
            list(SHARES[name].values())
            if scope == "topics"
            else [[p for ps in SHARES[name].values() for p in ps]]
        )
    )
    if feasible:
        assert answer.status_code == 200, answer.json()
        assert all(p["n_needed"] is not None for p in answer.json()["parts"])
        return
    assert answer.status_code == 400 and set(answer.json()) == {"agreement_pp"}, answer.json()
    [message] = answer.json()["agreement_pp"]
    match = _RANGE.search(message)
    assert match, message
    low, high = float(match.group(1)), float(match.group(2))
    assert low < high and not low <= (agreement or 0) <= high, message


def _feasible(human: float, agreement: float, passes: list[bool]) -> bool:
    judge = sum(passes) / len(passes)
    if judge in {0.0, 1.0}:
        return True
    return abs(human + judge - 1) - 1e-9 <= agreement <= 1 - abs(human - judge) + 1e-9


def test_it_plans_with_the_weights_of_unequal_inclusion_probabilities(world: dict[str, Any]) -> None:
    """#31 item 23: the four labelled items drawn with probabilities 0.2, 0.2, 0.8, 0.8 are planned with their
    weights 1/pi (the weighted estimator's variance), not as a uniform sample."""
    generator: Generator = world["generator"]
    drawn = [g.pk for g in items_in_order(world["study"])]
    for pk, p in zip(drawn, [0.2, 0.2, 0.8, 0.8], strict=True):
        CalibrationDraw.objects.filter(generation_id=pk).update(probability=p)
    [part] = plan(PlanInput(judge="judge-plan", generator=generator.generator_id, half_width_pp=15,
                            hourly_rate=12)).parts  # fmt: skip
    human, judge, pi = [0, 0.5, 1, 0.5], [0, 1, 1, 0], [0.2, 0.2, 0.8, 0.8]
    weighted = labels_needed_from(human, judge, N=10, half_width=0.15, inclusion_probabilities=pi)
    uniform = labels_needed_from(human, judge, N=10, half_width=0.15)
    assert weighted.n_needed is not None and uniform.n_needed is not None
    assert part.n_needed == weighted.n_needed != uniform.n_needed
    assert part.lam == pytest.approx(weighted.lam) and part.source == "labels"
    # w = 5, 5, 1.25, 1.25: (sum w)^2 / sum w^2 = 156.25 / 53.125 = 2.94 effective labels.
    assert "weighted by 1/π" in part.note and "2.9 effective of 4 labels" in part.note
