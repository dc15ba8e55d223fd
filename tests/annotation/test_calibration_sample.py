"""Calibration samples in the study builder and their rounds (issue #20 items 2 and 3): the probabilities each
design stores (recomputed by hand), the rounds' inclusion after rounds, the refusals with their fields, the
study page's section and round form, the API endpoint, the command and the admin."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client
from django.urls import reverse
from hypothesis import given
from hypothesis import strategies as st

from annotation.base.models import Study, StudyItem
from annotation.base.registry import StudyKind
from annotation.flow import services
from annotation.kinds.critical_failures.calibration import sample as calibration_sample
from annotation.kinds.critical_failures.calibration.calibrated import generator_samples
from annotation.kinds.critical_failures.models import CalibrationDraw, CalibrationRound
from judging.models import Generation, Generator, Judge, Judgment
from tests.factories import (
    make_generation,
    make_generator,
    make_judge,
    make_judgment,
    make_procedure,
    make_user,
)
from tests.fuzzing import fuzz_settings

pytestmark = pytest.mark.django_db
FAIL = [("Skips a step", [1], [1])]


def _frame(topics: dict[str, int], generator: Generator | None = None) -> list[Generation]:
    """Generations of one generator, `count` on procedures of each topic."""
    generator = generator or make_generator(model="model-under-test")
    return [
        make_generation(generator=generator, procedure=make_procedure(goal=f"{topic} {i}", topic=topic))
        for topic, count in topics.items()
        for i in range(count)
    ]


def _study(generator: Generator, design: str, n: int, *, slug: str = "cal", **selection: Any) -> Study:
    return services.study_create(
        title="Calibration",
        slug=slug,
        selection=services.Selection(
            generator_ids=[generator.pk], calibration_design=design, sample_size=n, **selection
        ),
        annotators_per_item=3,
        attention_check_every=0,
    )


def _probabilities(study: Study, number: int = 1) -> dict[int, float]:
    draws = CalibrationDraw.objects.filter(round__study=study, round__number=number)
    return dict(draws.values_list("generation_id", "probability"))


def _drawn(study: Study, number: int = 1) -> set[int]:
    draws = CalibrationDraw.objects.filter(round__study=study, round__number=number, drawn=True)
    return set(draws.values_list("generation_id", flat=True))


def _disagreeing(generations: list[Generation], disagree: int) -> tuple[Judge, Judge]:
    """Two judges that agree on every generation but the first `disagree`."""
    a, b = make_judge(model="judge-a"), make_judge(model="judge-b")
    for i, generation in enumerate(generations):
        make_judgment(generation=generation, judge=a, failures=FAIL if i < disagree else ())
        make_judgment(generation=generation, judge=b)
    return a, b


# --- the designs' probabilities, by hand --------------------------------------------------------------------


def test_a_uniform_sample_gives_every_frame_generation_n_over_n() -> None:
    generations = _frame({"Health": 10})
    other = make_generation(procedure=make_procedure(goal="Other generator"))  # not in the frame
    study = _study(generations[0].generator, "uniform", 4)
    probabilities = _probabilities(study)
    assert set(probabilities) == {g.pk for g in generations} and other.pk not in probabilities
    assert all(p == pytest.approx(4 / 10) for p in probabilities.values())
    items = study.items.not_attention_checks()
    assert set(items.values_list("generation_id", flat=True)) == _drawn(study) and items.count() == 4
    round_1 = CalibrationRound.objects.get(study=study)
    assert (round_1.number, round_1.design, round_1.size, round_1.new_items) == (1, "uniform", 4, 4)
    assert study.selection["calibration_design"] == "uniform"


def test_a_stratified_sample_gives_each_topic_its_share_over_its_size_by_hand() -> None:
    # n = 6 over 3 topics: 2 each; "Cars" has 1 (taken whole, pi = 1), its surplus of 1 shared by the two
    # others: 2.5 each, so pi = 2.5 / 3 in "Home" and 2.5 / 6 in "Health".
    generations = _frame({"Health": 6, "Home": 3, "Cars": 1})
    study = _study(generations[0].generator, "stratified", 6)
    probabilities = _probabilities(study)
    expected = {"Health": 2.5 / 6, "Home": 2.5 / 3, "Cars": 1.0}
    for generation in generations:
        assert probabilities[generation.pk] == pytest.approx(expected[generation.procedure.topic.name])
    assert sum(probabilities.values()) == pytest.approx(6)
    assert len(_drawn(study)) == 6 and study.items.count() == 6
    cars = next(g for g in generations if g.procedure.topic.name == "Cars")
    assert cars.pk in _drawn(study)  # pi = 1: always drawn


def test_the_disagreement_design_over_samples_where_judges_disagree_and_records_its_judges() -> None:
    # u = 0.5 on the 2 generations the judges split on, 0 elsewhere; n = 2, N = 10:
    # pi = n (MIX / N + (1 - MIX) u / sum u), MIX = 0.8: 2 (0.08 + 0.1) = 0.36 there, 2 * 0.08 = 0.16
    # elsewhere (sum 2).
    generations = _frame({"Health": 10})
    a, b = _disagreeing(generations, 2)
    study = _study(generations[0].generator, "disagreement", 2, calibration_judge_ids=[a.pk, b.pk])
    probabilities = _probabilities(study)
    for i, generation in enumerate(generations):
        assert probabilities[generation.pk] == pytest.approx(0.36 if i < 2 else 0.16)
    assert CalibrationRound.objects.get(study=study).judge_ids == sorted([a.pk, b.pk])


def test_one_judges_re_run_flip_is_an_uncertainty() -> None:
    generations = _frame({"Health": 4})
    judge = make_judge()
    for generation in generations:
        make_judgment(generation=generation, judge=judge)
    Judgment.objects.filter(generation=generations[0]).update(previous_has_failure=True)
    study = _study(generations[0].generator, "disagreement", 1, calibration_judge_ids=[judge.pk])
    probabilities = _probabilities(study)  # u = 0.5 on the flip: 0.8/4 + 0.2 = 0.4; 0.8/4 = 0.2 elsewhere
    assert probabilities[generations[0].pk] == pytest.approx(0.4)
    assert probabilities[generations[1].pk] == pytest.approx(0.2)


# --- rounds ------------------------------------------------------------------------------------------------


def test_a_second_round_stores_its_probabilities_and_inclusion_is_one_minus_the_product() -> None:
    generations = _frame({"Health": 10})
    a, b = _disagreeing(generations, 2)
    study = _study(generations[0].generator, "uniform", 4)
    before = set(study.items.values_list("generation_id", flat=True))
    last_position = max(study.items.values_list("position", flat=True))
    request = calibration_sample.RoundRequest(2, "disagreement", [a.pk, b.pk], seed=5)
    round_2 = calibration_sample.next_round(study=study, request=request)
    assert round_2.number == 2 and round_2.judge_ids == sorted([a.pk, b.pk])
    second = _probabilities(study, 2)
    assert len(second) == 10  # the whole frame, drawn or not
    assert [second[g.pk] for g in generations] == pytest.approx([0.36] * 2 + [0.16] * 8)
    new = _drawn(study, 2) - before
    assert round_2.new_items == len(new)
    added = study.items.filter(generation_id__in=new)
    assert sorted(added.values_list("position", flat=True)) == list(
        range(last_position + 1, last_position + 1 + len(new))
    )
    assert set(added.values_list("target_annotations", flat=True)) <= {3}
    examples = {e.generation_id: e for e in generator_samples()[generations[0].generator_id].examples}
    for generation in generations:
        p2 = second[generation.pk]
        assert examples[generation.pk].probability == pytest.approx(1 - (1 - 0.4) * (1 - p2))


def test_a_round_defaults_to_the_studys_judges_and_disagreement() -> None:
    generations = _frame({"Health": 6})
    a, b = _disagreeing(generations, 1)
    study = _study(generations[0].generator, "disagreement", 2, calibration_judge_ids=[a.pk, b.pk])
    round_2 = calibration_sample.next_round(study=study, request=calibration_sample.RoundRequest(2))
    assert (round_2.design, round_2.judge_ids) == ("disagreement", sorted([a.pk, b.pk]))


def test_a_round_without_judges_is_uniform() -> None:
    generations = _frame({"Health": 5})
    study = _study(generations[0].generator, "uniform", 2)
    round_2 = calibration_sample.next_round(study=study, request=calibration_sample.RoundRequest(3, seed=1))
    assert round_2.design == "uniform" and round_2.judge_ids == []
    assert all(p == pytest.approx(0.6) for p in _probabilities(study, 2).values())


@pytest.mark.django_db(transaction=True)
def test_two_rounds_at_once_get_distinct_numbers() -> None:
    generations = _frame({"Health": 30})
    study = _study(generations[0].generator, "uniform", 2)
    start = threading.Barrier(2)
    numbers: list[int] = []
    errors: list[BaseException] = []

    def run(seed: int) -> None:
        try:
            start.wait(timeout=10)
            request = calibration_sample.RoundRequest(3, seed=seed)
            numbers.append(calibration_sample.next_round(study=study, request=request).number)
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(seed,)) for seed in (1, 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors, errors
    assert sorted(numbers) == [2, 3]
    assert CalibrationDraw.objects.filter(round__study=study).count() == 3 * 30


# --- refusals ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "change", "words"),
    [
        ("disagreeing_judge_ids", "disagreeing_judges", "no known inclusion probabilities"),
        ("topic_ids", "topic", "stratified by topic"),
        ("sample_size", "no_size", "size n"),
        ("calibration_judge_ids", "disagreement_without_judges", "at least two"),
        ("calibration_design", "unknown_design", "snowball"),
    ],
)
def test_the_builder_refuses_a_calibration_sample_it_cannot_weigh(
    field: str, change: str, words: str
) -> None:
    generations = _frame({"Health": 3})
    a, b = _disagreeing(generations, 1)
    values: dict[str, Any] = {
        "generator_ids": [generations[0].generator_id], "calibration_design": "uniform", "sample_size": 2
    }  # fmt: skip
    values.update(
        {
            "disagreeing_judges": {"disagreeing_judge_ids": [a.pk, b.pk]},
            "topic": {"topic_ids": [generations[0].procedure.topic_id]},
            "no_size": {"sample_size": None},
            "disagreement_without_judges": {"calibration_design": "disagreement"},
            "unknown_design": {"calibration_design": "snowball"},
        }[change]
    )
    with pytest.raises(ValidationError) as refused:
        services.study_create(title="T", slug="refused", selection=services.Selection(**values))
    assert field in refused.value.message_dict and words in " ".join(refused.value.message_dict[field])
    assert not Study.objects.exists() and not CalibrationRound.objects.exists()


def test_the_builder_refuses_one_judge_without_re_runs() -> None:
    generations = _frame({"Health": 3})
    judge = make_judge()
    for generation in generations:
        make_judgment(generation=generation, judge=judge)
    with pytest.raises(ValidationError) as refused:
        _study(generations[0].generator, "disagreement", 1, calibration_judge_ids=[judge.pk])
    assert "re-run" in " ".join(refused.value.message_dict["calibration_judge_ids"])


def test_the_builder_refuses_a_calibration_sample_for_another_kind() -> None:
    make_procedure(goal="Four steps", steps=["a", "b", "c", "d"])
    with pytest.raises(ValidationError) as refused:
        services.study_create(
            title="T",
            slug="refused",
            kind=StudyKind.STEP_TYPES,
            selection=services.Selection(calibration_design="uniform", sample_size=1),
        )
    assert "critical-failures studies only" in " ".join(refused.value.message_dict["calibration_design"])
    assert not Study.objects.exists()


def _builder(**fields: Any) -> dict[str, Any]:
    data = {
        "kind": "critical_failures", "title": "T", "slug": "built", "seed": "0", "annotators_per_item": "3",
        "items_per_participant": "10", "min_dwell_seconds": "5", "estimated_item_minutes": "2",
        "attention_checks": "0", "attention_check_every": "0", "instructions": "Read.", "consent_text": "Ok.",
        "training_text": "## Hi", "comprehension_questions": "Is it so?\n- No\n* Yes",
    }  # fmt: skip
    return {**data, **fields}


def test_the_builder_form_shows_each_refusal_on_its_field(staff: Client) -> None:
    generations = _frame({"Health": 4})
    url = reverse("annotation:study_create")
    topic = str(generations[0].procedure.topic_id)
    for fields, name in [
        ({"calibration_design": "uniform", "topics": [topic], "sample_size": "2"}, "topics"),
        ({"calibration_design": "uniform"}, "sample_size"),
        ({"calibration_design": "disagreement", "sample_size": "2"}, "calibration_judges"),
    ]:
        response = staff.post(url, _builder(**fields))
        assert response.status_code == 400
        assert name in response.context["form"].errors, (fields, response.context["form"].errors)
    assert not Study.objects.exists()
    response = staff.post(url, _builder(calibration_design="stratified", sample_size="2"))
    assert response.status_code == 302
    assert Study.objects.get(slug="built").calibration_rounds.get().design == "stratified"


# --- the study page, the API, the command, the admin --------------------------------------------------------


def test_the_study_page_shows_the_sample_and_draws_the_next_round(staff: Client) -> None:
    generations = _frame({"Health": 8})
    study = _study(generations[0].generator, "uniform", 4)
    page = staff.get(reverse("annotation:study_detail", args=[study.slug])).content.decode()
    assert "Calibration sample" in page and "frame: 8 generations" in page
    assert "from <strong>0.5000</strong> to <strong>0.5000</strong>" in page and "Draw round 2" in page
    url = reverse("annotation:study_calibration_round", args=[study.slug])
    response = staff.post(url, {"size": "2", "design": "uniform", "seed": "3"})
    assert response.status_code == 302
    assert CalibrationRound.objects.filter(study=study).count() == 2
    page = staff.get(reverse("annotation:study_detail", args=[study.slug])).content.decode()
    # after n = 4 then n = 2 of 8: 1 - (1 - 0.5)(1 - 0.25) = 0.625 for every example
    assert "from <strong>0.6250</strong> to <strong>0.6250</strong>" in page
    refusals = [
        ({"size": "0"}, "size"),
        ({"size": "2", "design": "snowball"}, "design"),
        ({"size": "2", "design": "disagreement"}, "judges"),
        ({"size": "2", "seed": "-1"}, "seed"),
    ]
    for data, field in refusals:
        response = staff.post(url, data)
        assert response.status_code == 400
        assert field in response.context["round_form"].errors, (data, response.context["round_form"].errors)
    assert CalibrationRound.objects.filter(study=study).count() == 2


def test_a_study_without_a_calibration_sample_says_why(staff: Client) -> None:
    generations = _frame({"Health": 3})
    a, b = _disagreeing(generations, 1)
    study = services.study_create(
        title="T", slug="plain", selection=services.Selection(disagreeing_judge_ids=[a.pk, b.pk])
    )
    page = staff.get(reverse("annotation:study_detail", args=[study.slug])).content.decode()
    assert "Not used for calibration" in page and "disagree" in page
    response = staff.post(reverse("annotation:study_calibration_round", args=[study.slug]), {"size": "1"})
    assert response.status_code == 400 and not CalibrationRound.objects.exists()
    assert "was not built with a calibration sample" in response.content.decode()


def test_the_round_pages_are_for_staff(client: Client) -> None:
    generations = _frame({"Health": 3})
    study = _study(generations[0].generator, "uniform", 1)
    client.force_login(make_user())
    assert (
        client.post(
            reverse("annotation:study_calibration_round", args=[study.slug]), {"size": "1"}
        ).status_code
        == 403
    )
    api = reverse("api:study-calibration-rounds", args=[study.slug])
    assert client.post(api, {"size": 1}, content_type="application/json").status_code == 403
    assert CalibrationRound.objects.count() == 1


def _api(client: Client, slug: str, body: Any) -> Any:
    return client.post(
        reverse("api:study-calibration-rounds", args=[slug]), body, content_type="application/json"
    )


def test_the_api_draws_a_round_and_names_the_fields_it_refuses(admin_client: Client) -> None:
    generations = _frame({"Health": 6})
    a, b = _disagreeing(generations, 2)
    study = _study(generations[0].generator, "uniform", 2)
    response = _api(admin_client, study.slug, {"size": 2, "judge_ids": [a.judge_id, str(b.pk)], "seed": 9})
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["number"] == 2 and body["design"] == "disagreement" and body["frame_size"] == 6
    assert sorted(body["judge_ids"]) == sorted([a.judge_id, b.judge_id]) and body["seed"] == 9
    for bad, field in [
        ({}, "size"),
        ({"size": 0}, "size"),
        ({"size": 2, "design": "snowball"}, "design"),
        ({"size": 2, "judge_ids": ["nobody"]}, "judge_ids"),
        ({"size": 2, "design": "disagreement", "judge_ids": []}, "judge_ids"),
        ({"size": 2, "seed": -1}, "seed"),
    ]:
        response = _api(admin_client, study.slug, bad)
        assert response.status_code == 400 and field in response.json(), (bad, response.json())
    assert _api(admin_client, "no-such-study", {"size": 1}).status_code == 404
    plain = services.study_create(title="P", slug="plain", selection=services.Selection())
    response = _api(admin_client, plain.slug, {"size": 1})
    assert response.status_code == 400 and "study" in response.json()
    assert CalibrationRound.objects.filter(study=study).count() == 2


ROUND_VALUES = st.one_of(
    st.none(), st.integers(-(2**40), 2**40), st.text(max_size=12), st.floats(allow_nan=True), st.booleans()
)


@given(
    body=st.dictionaries(
        st.sampled_from(["size", "design", "judge_ids", "seed", "other"]),
        st.one_of(
            ROUND_VALUES, st.lists(ROUND_VALUES, max_size=3), st.sampled_from(["uniform", "disagreement"])
        ),
        max_size=5,
    ),
    form=st.booleans(),
)
@fuzz_settings(60)
def test_fuzzed_round_requests_never_answer_5xx(
    admin_client: Client, body: dict[str, Any], form: bool
) -> None:
    if not Study.objects.filter(slug="fuzz").exists():
        generations = _frame({"Health": 4})
        _study(generations[0].generator, "uniform", 1, slug="fuzz")
    if form:
        data = {k: v if isinstance(v, list) else ("" if v is None else str(v)) for k, v in body.items()}
        response = admin_client.post(reverse("annotation:study_calibration_round", args=["fuzz"]), data)
        assert response.status_code in {302, 400}, response.status_code
    else:
        response = _api(admin_client, "fuzz", body)
        assert response.status_code in {201, 400}, (body, response.content[:300])


def test_the_command_draws_a_round_and_refuses_a_judge_it_cannot_find(capsys: Any) -> None:
    generations = _frame({"Health": 5})
    study = _study(generations[0].generator, "uniform", 1)
    call_command("calibration_round", study.slug, size=2, seed=4, no_progress=True)
    assert "Round 2 of cal (uniform, seed 4): 2 drawn" in capsys.readouterr().out
    with pytest.raises(CommandError, match="--judge nobody"):
        call_command("calibration_round", study.slug, size=2, judge=["nobody"], no_progress=True)
    with pytest.raises(CommandError, match="--size"):
        call_command("calibration_round", study.slug, size=0, no_progress=True)
    assert CalibrationRound.objects.filter(study=study).count() == 2


def test_the_admin_lists_rounds_and_draws_but_never_changes_them(admin_client: Client) -> None:
    generations = _frame({"Health": 3})
    study = _study(generations[0].generator, "uniform", 1)
    calibration_round = study.calibration_rounds.get()
    draw = calibration_round.draws.first()
    assert draw is not None
    listing = admin_client.get(reverse("admin:annotation_calibrationround_changelist"))
    assert listing.status_code == 200 and "uniform" in listing.content.decode()
    assert admin_client.get(reverse("admin:annotation_calibrationround_add")).status_code == 403
    change = reverse("admin:annotation_calibrationdraw_change", args=[draw.pk])
    assert admin_client.get(change).status_code == 200
    admin_client.post(change, {"probability": "0.9", "drawn": "on"})
    draw.refresh_from_db()
    assert draw.probability == pytest.approx(1 / 3)
    delete = reverse("admin:annotation_calibrationround_delete", args=[calibration_round.pk])
    assert admin_client.post(delete, {"post": "yes"}).status_code == 403
    assert StudyItem.objects.filter(study=study).count() == 1
