"""Property-based test (Hypothesis) of every form a staff user can reach (issue #19): the admin's change and
add forms (found in the admin site's registry, inlines included), the other forms of the site (the study
builder of every kind, the task-set build form, the admin actions' forms) and the bodies of the API's
job-starting endpoints (the serializers of POST /api/jobs/, one per kind, found in the job registry). Each
field gets values chosen by its type: numbers beyond its column's range, NaN and infinities, JSON nested
50,000 deep, over a megabyte long or holding NUL, NUL in text, empty strings, another row's unique value.

No request may answer 5xx or show a traceback; a value that must be refused (out of the field's range, NUL,
too deep, a duplicate, ...) is refused with a message under that field, and nothing stored changes. Forms are
enumerated, so a new admin, a new form or a new kind of job is walked without a change here, and a new form
class that this module cannot reach fails test_it_knows_every_form_of_the_site.

Bounded in time: 500 generated requests (FUZZ_SCALE multiplies them), ~25 s; no shrinking (a failure is
shown as found)."""

from __future__ import annotations

import importlib
import json
import math
import pkgutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from django import forms
from django.contrib import admin
from django.db import models
from django.forms.models import BaseModelForm
from django.test import Client
from django.urls import reverse
from hypothesis import given, settings
from hypothesis import strategies as st

from annotation.base.models import Study
from annotation.base.registry import KINDS
from goal_step.models import TaskSet
from h2e_site.bounds import model_range
from h2e_site.jobs.models import Job
from mining.models import MiningRun
from tests.fuzz_world import make_admin_world
from tests.fuzzing import fuzz_settings

pytestmark = pytest.mark.django_db
SENT: dict[str, int] = {}
APPS = ("h2e_site", "mining", "judging", "goal_step", "annotation")

DEEP_ARRAY = "[" * 50_000 + "]" * 50_000
DEEP_OBJECT = '{"a": ' * 50_000 + "1" + "}" * 50_000
HUGE_JSON = '["' + "x" * 1_100_000 + '"]'
NUL_JSON = '["a\\u0000b"]'
BAD_JSON = [DEEP_ARRAY, DEEP_OBJECT, HUGE_JSON, NUL_JSON, '{"a": NaN}', "[1e999]"]
BIG_NUMBERS: list[Any] = [2**15, 2**31, -(2**31) - 1, 2**63, -(2**63) - 1, 10**30, -1]
HUGE_DIGITS = "1" + "0" * 5000
ODD_NUMBERS = ["1e300", "-1e300", "1e400", "nan", "inf", "-inf", "0x10", "٣", "1.5"]
DUPLICATE = object()  # another row's value of a unique field
TEXTS = ["", "   ", "\x00", "a\x00b", "x" * 70_000, "new", "\u202e", "abc def"]


def _examples(n: int) -> settings:
    return fuzz_settings(n, shrink=False)


# --- what a value must do to a field ---------------------------------------------------------------------


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return number


def _must_refuse(form_field: forms.Field, value: Any, bounds: tuple[float, float] | None) -> bool:
    """Whether a field must refuse the value (a value it may take is not asserted either way)."""
    text = value if isinstance(value, str) else json.dumps(value)
    if "\x00" in text or (text in BAD_JSON and isinstance(form_field, forms.JSONField)):
        return True
    if isinstance(form_field, forms.IntegerField | forms.FloatField):
        number = _number(value)
        if number is None or not math.isfinite(number):
            return value not in ("", None) or form_field.required
        low, high = bounds or (-(2**31), 2**31 - 1)
        return not low <= number <= high
    max_length = getattr(form_field, "max_length", None)
    if isinstance(value, str) and max_length is not None and len(value) > max_length:
        return True
    return isinstance(value, str) and not value.strip() and form_field.required


def _field_values(form_field: forms.Field) -> list[Any]:
    """The hostile values a field is sent, by its type (none for what a person does not type: hidden
    fields such as an inline's ids and a formset's counts, files, check boxes, date-and-time pairs)."""
    if isinstance(form_field, forms.BooleanField | forms.FileField) or isinstance(
        form_field.widget, forms.HiddenInput | forms.MultiWidget
    ):
        return []
    if isinstance(form_field, forms.IntegerField | forms.FloatField | forms.DecimalField):
        return [str(n) for n in BIG_NUMBERS] + ODD_NUMBERS + [HUGE_DIGITS, "", "\x00"]
    if isinstance(form_field, forms.JSONField):
        return [*BAD_JSON, "", '"a plain string"', "[]", "{}", "\x00"]
    if isinstance(form_field, forms.ChoiceField | forms.ModelChoiceField):
        return ["", "\x00", "no-such-choice", "9" * 30, "-1"]
    return [*TEXTS, DEEP_ARRAY, NUL_JSON]


def _refused_on(errors: dict[str, Any], name: str) -> bool:
    return name in errors or any(name in str(e) for e in errors.get("__all__", []))


# --- the admin: every registered model, every editable field ---------------------------------------------


@dataclass
class AdminTarget:
    model: type[models.Model]
    model_admin: admin.ModelAdmin  # type: ignore[type-arg]
    pk: Any  # None: the add page

    @property
    def label(self) -> str:
        page = "add" if self.pk is None else "change"
        return f"admin {self.model._meta.label} {page}"

    @property
    def url(self) -> str:
        meta = self.model._meta
        if self.pk is None:
            return reverse(f"admin:{meta.app_label}_{meta.model_name}_add")
        return reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[self.pk])


def _post_values(bound: forms.BoundField) -> dict[str, Any]:
    """What a browser posts for a field as it is shown."""
    widget, value = bound.field.widget, bound.value()
    if isinstance(bound.field, forms.BooleanField):
        return {bound.html_name: "on"} if value else {}
    if isinstance(widget, forms.MultiWidget):
        parts = value if isinstance(value, list) else widget.decompress(value)
        return {f"{bound.html_name}_{i}": "" if p is None else str(p) for i, p in enumerate(parts)}
    if isinstance(value, list | tuple):
        return {bound.html_name: [str(v) for v in value]}
    return {bound.html_name: "" if value is None else str(value)}


def _admin_forms(response: Any) -> Iterator[forms.BaseForm]:
    yield response.context["adminform"].form
    for inline in response.context["inline_admin_formsets"]:
        yield inline.formset.management_form
        yield from inline.formset.forms


def _admin_post(response: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"_save": "Save"}
    for form in _admin_forms(response):
        for bound in form:
            if not bound.field.disabled:
                data.update(_post_values(bound))
    return data


def _admin_targets(boss: Client) -> list[AdminTarget]:
    targets = []
    for model, model_admin in admin.site._registry.items():
        obj = model._default_manager.order_by("pk").first()
        for pk in ([obj.pk] if obj is not None else []) + [None]:
            target = AdminTarget(model, model_admin, pk)
            response = boss.get(target.url)
            assert response.status_code in (200, 403), (target.label, response.status_code)
            if response.status_code == 200 and any(
                not b.field.disabled for f in _admin_forms(response) for b in f
            ):
                targets.append(target)
    return targets


def _row(target: AdminTarget) -> Any:
    rows = target.model._default_manager.order_by("pk")
    return (rows.count(), list(rows.filter(pk=target.pk).values()) if target.pk is not None else [])


def _unique_values(target: AdminTarget, name: str) -> list[Any]:
    """Another row's value of a unique field (a duplicate)."""
    try:
        model_field = target.model._meta.get_field(name)
    except Exception:
        return []
    if not getattr(model_field, "unique", False):
        return []
    others = target.model._default_manager.exclude(pk=target.pk).values_list(name, flat=True)[:1]
    return [str(v) for v in others]


def _bounds(target: AdminTarget, name: str) -> tuple[float, float] | None:
    try:
        found = model_range(target.model, name)
    except Exception:
        return None
    return (found.low, found.high)


def test_it_survives_any_value_in_every_admin_form(
    admin_world: dict[str, Any], boss: Client, django_capture_on_commit_callbacks: Any
) -> None:
    targets = _admin_targets(boss)
    assert {t.model for t in targets} >= {Study, MiningRun}, [t.label for t in targets]
    pages = {target.label: boss.get(target.url) for target in targets}
    for target in targets:  # what a browser posts back unchanged is taken: the baseline is right
        if target.pk is not None:
            saved = boss.post(target.url, _admin_post(pages[target.label]))
            assert saved.status_code == 302, (target.label, _errors(saved))

    @_examples(250)
    @given(data=st.data())
    def post(data: st.DataObject) -> None:
        target = data.draw(st.sampled_from(targets), label="target")
        page = pages[target.label]
        fields = [
            (form, bound)
            for form in _admin_forms(page)
            for bound in form
            if not bound.field.disabled and _field_values(bound.field)
        ]
        form, bound = data.draw(st.sampled_from(fields), label="field")
        name = bound.name
        taken = _unique_values(target, name)  # drawn as one slot: the draws never depend on the rows
        value = data.draw(st.sampled_from([*_field_values(bound.field), DUPLICATE]), label="value")
        value = (taken or [""])[0] if value is DUPLICATE else value
        posted = {**_admin_post(page), bound.html_name: value}
        before = _row(target)
        with django_capture_on_commit_callbacks(execute=False):
            response = boss.post(target.url, posted)
        SENT[target.label] = SENT.get(target.label, 0) + 1
        _assert_no_server_error(response, target.label, name, value)
        refused = response.status_code != 302
        bounds = _bounds(target, name) if form is page.context["adminform"].form else None
        must = _must_refuse(bound.field, value, bounds) or value in taken
        assert refused or not must, (target.label, name, _shown(value), "was taken")
        if refused:
            assert _row(target) == before, (target.label, name, _shown(value))
        if must:
            errors = _errors(response)
            named = any(_refused_on(e, name) for e in errors)
            assert named, (target.label, name, _shown(value), errors)

    post()


def _errors(response: Any) -> list[dict[str, Any]]:
    """The error dicts of every form on a re-shown admin page."""
    context = response.context
    if context is None or "adminform" not in context:
        return [{"__all__": [response.content[:300]]}]
    found = [dict(context["adminform"].form.errors)]
    for inline in context["inline_admin_formsets"]:
        found += [dict(f.errors) for f in inline.formset.forms]
        found.append({"__all__": list(inline.formset.non_form_errors())})
    return found


def _assert_no_server_error(response: Any, where: str, name: str, value: Any) -> None:
    assert response.status_code < 500, (where, name, _shown(value), response.status_code)
    assert b"Traceback" not in response.content, (where, name, _shown(value))


def _shown(value: Any) -> str:
    text = str(value)
    return text if len(text) < 60 else f"{text[:40]}... ({len(text)} characters)"


# --- the site's other forms ------------------------------------------------------------------------------


@dataclass
class FormTarget:
    label: str
    get: Callable[[Client], Any]  # the page whose context has the form
    post: Callable[[Client, dict[str, Any]], Any]
    form_class: type[forms.BaseForm]
    stored: Callable[[], Any] = field(default=lambda: (Study.objects.count(), TaskSet.objects.count()))
    context_key: str = "form"  # the form's name in the page's context


def _builder(kind: str) -> FormTarget:
    url = reverse("annotation:study_create") + f"?kind={kind}"
    from annotation.flow.forms import StudyForm

    return FormTarget(
        f"study builder ({kind})",
        lambda c: c.get(url),
        lambda c, data: c.post(url, data),
        StudyForm,
    )


def _action(model: type[models.Model], action: str, form_class: type[forms.BaseForm]) -> FormTarget:
    meta = model._meta
    url = reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist")

    def selected() -> dict[str, Any]:
        pk = model._default_manager.order_by("pk").values_list("pk", flat=True).first()
        return {"action": action, admin.helpers.ACTION_CHECKBOX_NAME: [str(pk)]}

    return FormTarget(
        f"admin action {meta.label}.{action}",
        lambda c: c.post(url, selected()),
        lambda c, data: c.post(url, {**data, **selected(), "apply": "1"}),
        form_class,
        lambda: (Job.objects.count(), TaskSet.objects.count(), Study.objects.count()),
    )


def _patterns_url() -> str:
    from mining.models import Topic

    return reverse("failures:failure_patterns", args=[Topic.objects.get(name="Home").pk])


def _checkpoints_url(what: str = "training_checkpoints") -> str:
    from judging.training.models import TrainingRun

    run, _ = TrainingRun.objects.get_or_create(name="fuzz-run", defaults={"reward_name": "how2score"})
    return reverse(f"judging:{what}", args=[run.name])


def _site_forms() -> list[FormTarget]:
    from annotation.failures.meaning.forms import FailurePatternsForm
    from annotation.kinds.critical_failures.calibration.forms import CalibrationRoundForm
    from annotation.kinds.critical_failures.calibration.views_planner import PlanForm
    from annotation.kinds.critical_failures.models import CalibrationRound
    from annotation.kinds.pairwise.forms import AttachJudgeConfigForm, PairwiseJudgeForm
    from annotation.prolific.models import ProlificBonus
    from annotation.prolific.views import BonusForm, DraftForm
    from goal_step.admin import RebuildForm
    from goal_step.answer_forms import AnswerTasksForm
    from goal_step.forms import TaskSetBuildForm
    from h2e_site.embeddings.admin import EmbedForm
    from h2e_site.embeddings.models import EmbeddingModel
    from judging.admin.actions import AttachConfigForm, GenerateForm, JudgeWithForm
    from judging.admin.generate import GenerateFromConfigForm
    from judging.models import Generator, Judge, JudgeProbe
    from judging.probes.forms import JudgeProbeForm
    from judging.training.checkpoint_models import Checkpoint
    from judging.training.checkpoint_views import RegisterCheckpointForm, TableJudgesForm
    from mining.forms import MineForm
    from mining.models import MiningRun

    build_url = reverse("goal_step:task_set_build")
    generate_url = reverse("admin:judging_generate")
    plan_url = reverse("planner:plan")
    return [
        FormTarget(  # a GET form: it stores nothing, whatever it is sent
            "budget planner",
            lambda c: c.get(plan_url),
            lambda c, data: c.get(plan_url, data),
            PlanForm,
            lambda: (Study.objects.count(), CalibrationRound.objects.count(), Job.objects.count()),
        ),
        *(_builder(kind) for kind in KINDS),
        FormTarget(
            "task-set build form",
            lambda c: c.get(reverse("goal_step:task_sets")),
            lambda c, data: c.post(build_url, data),
            TaskSetBuildForm,
        ),
        _action(TaskSet, "build_again", RebuildForm),
        _action(EmbeddingModel, "embed_missing", EmbedForm),
        _action(Generator, "generate_l2", GenerateForm),
        _action(Generator, "judge_with", JudgeWithForm),
        _action(Judge, "attach_config", AttachConfigForm),
        FormTarget(
            "generate L2 from a config",
            lambda c: c.get(generate_url),
            lambda c, data: c.post(generate_url, data),
            GenerateFromConfigForm,
            lambda: Job.objects.count(),
        ),
        FormTarget(
            "next round of a calibration study",
            lambda c: c.get(reverse("annotation:study_detail", args=["fuzz-calibration"])),
            lambda c, data: c.post(
                reverse("annotation:study_calibration_round", args=["fuzz-calibration"]), data
            ),
            CalibrationRoundForm,
            lambda: CalibrationRound.objects.count(),
            context_key="round_form",
        ),
        FormTarget(
            "the pairwise study's LLM twin",
            lambda c: c.get(reverse("agreement:study", args=["fuzz-pairwise"])),
            lambda c, data: c.post(reverse("annotation:pairwise_judge", args=["fuzz-pairwise"]), data),
            PairwiseJudgeForm,
            lambda: Job.objects.count(),
            context_key="twin_form",
        ),
        FormTarget(
            "the pairwise twin's config for an imported judge",
            lambda c: c.get(reverse("agreement:study", args=["fuzz-pairwise"])),
            lambda c, data: c.post(
                reverse("annotation:pairwise_attach_config", args=["fuzz-pairwise"]), data
            ),
            AttachJudgeConfigForm,
            lambda: list(Judge.objects.exclude(config={}).values_list("judge_id", flat=True)),
            context_key="attach_form",
        ),
        FormTarget(
            "answer a task set with a model",
            lambda c: c.get(reverse("goal_step:task_set", args=["fuzz-taken"])),
            lambda c, data: c.post(reverse("goal_step:task_set_answer", args=["fuzz-taken"]), data),
            AnswerTasksForm,
            lambda: Job.objects.count(),
            context_key="answer_form",
        ),
        FormTarget(
            "a study's Prolific draft",
            lambda c: c.get(reverse("annotation:prolific_draft", args=["fuzz-calibration"])),
            lambda c, data: c.post(reverse("annotation:prolific_draft", args=["fuzz-calibration"]), data),
            DraftForm,
            lambda: list(Study.objects.values_list("prolific_study_id", flat=True)),
        ),
        FormTarget(
            "bonuses through Prolific",
            lambda c: c.get(reverse("annotation:study_detail", args=["fuzz-calibration"])),
            lambda c, data: c.post(
                reverse("annotation:study_prolific_bonuses", args=["fuzz-calibration"]), data
            ),
            BonusForm,
            lambda: ProlificBonus.objects.count(),
            context_key="bonus_form",
        ),
        FormTarget(
            "mine from a config",
            lambda c: c.get(reverse("mine:runs")),
            lambda c, data: c.post(reverse("mine:start"), data),
            MineForm,
            lambda: (MiningRun.objects.count(), Job.objects.count()),
        ),
        FormTarget(  # a GET form: the judges a run's checkpoint table shows
            "a run's checkpoint table",
            lambda c: c.get(_checkpoints_url()),
            lambda c, data: c.get(_checkpoints_url(), data),
            TableJudgesForm,
            lambda: Checkpoint.objects.count(),
            context_key="judges_form",
        ),
        FormTarget(
            "register a run's checkpoint",
            lambda c: c.get(_checkpoints_url()),
            lambda c, data: c.post(_checkpoints_url("training_checkpoint_register"), data),
            RegisterCheckpointForm,
            lambda: list(Checkpoint.objects.values_list("step", "label", "generator_id")),
            context_key="register_form",
        ),
        FormTarget(
            "start a judge probe",
            lambda c: c.get(reverse("judging:probes")),
            lambda c, data: c.post(reverse("judging:probe_start"), data),
            JudgeProbeForm,
            lambda: (JudgeProbe.objects.count(), Job.objects.count()),
        ),
        FormTarget(
            "a topic's failure patterns",
            lambda c: c.get(_patterns_url()),
            lambda c, data: c.post(_patterns_url(), data),
            FailurePatternsForm,
            lambda: Job.objects.count(),
        ),
    ]


# Forms reached another way: the admin's ModelForms (walked above), the file upload of the h2e import
# page, whose files are the importers' to check (tests/judging), the Prolific review form, whose page
# reads the study's submissions from Prolific first (tests/annotation/test_prolific_review.py sends it bad
# input against the fake Prolific). The two download forms (How2Train and a judge's SFT data) are the query
# options of a streamed file: they store nothing, and tests/judging/test_training_exports.py sends each
# option bad values (a 400 naming it). A run's checkpoints page's OOD file (a file alone: its rows are the
# import's to check) and job buttons (hidden fields) are sent bad input by tests/judging/test_checkpoints.py.
# Forms whose `name` may repeat: mining runs of one config share its name (MiningRun.name is not unique), so
# "fuzz-taken" is a name like any other there.
NAMES_MAY_REPEAT = {"mine from a config"}
ELSEWHERE = {
    *("MiningRunForm", "ImportForm", "ReviewForm", "How2TrainForm", "JudgeSftForm"),
    *("OODFileForm", "CheckpointJobsForm"),
}


def test_it_knows_every_form_of_the_site() -> None:
    """Every Form class of the project is walked here (a new one must be added to _site_forms)."""
    for app in APPS:
        package = importlib.import_module(app)
        for module in pkgutil.walk_packages(package.__path__, f"{app}."):
            if ".migrations" not in module.name and ".management" not in module.name:
                importlib.import_module(module.name)
    defined = {
        cls
        for cls in _subclasses(forms.BaseForm)
        if cls.__module__.startswith(APPS)
        and not issubclass(cls, BaseModelForm)
        and cls.__name__ not in ELSEWHERE
    }
    walked = {target.form_class for target in _site_forms()}
    assert defined <= walked, sorted(c.__qualname__ for c in defined - walked)


def _subclasses(cls: type) -> set[type]:
    found = set(cls.__subclasses__())
    return found | {sub for child in found for sub in _subclasses(child)}


def _form_post(page: Any, extra: dict[str, Any], key: str = "form") -> tuple[forms.BaseForm, dict[str, Any]]:
    """The form as shown, filled with its initial values and `extra` (a new slug or name, a choice)."""
    form = page.context[key]
    data: dict[str, Any] = {}
    for bound in form:
        data.update(_post_values(bound))
    return form, {**data, **extra}


COUNTER = iter(range(10**9))


def _fresh() -> dict[str, Any]:
    n = next(COUNTER)
    return {"title": f"Fuzz {n}", "slug": f"fuzz-{n}", "name": f"fuzz-{n}", "task_set": "fuzz-taken"}


def test_it_gives_every_number_of_a_site_form_both_ends(admin_world: dict[str, Any], boss: Client) -> None:
    """Every number a staff user types in a form has a lowest and a highest value (from one place)."""
    for target in _site_forms():
        page = target.get(boss)
        assert page.status_code == 200, target.label
        for bound in page.context[target.context_key]:
            if isinstance(bound.field, forms.IntegerField | forms.FloatField):
                assert bound.field.min_value is not None and bound.field.max_value is not None, (
                    target.label,
                    bound.name,
                )
                assert bound.field.max_value < 2**31, (target.label, bound.name)


def test_it_survives_any_value_in_every_site_form(
    admin_world: dict[str, Any], boss: Client, django_capture_on_commit_callbacks: Any
) -> None:
    targets = _site_forms()

    @_examples(150)
    @given(data=st.data())
    def post(data: st.DataObject) -> None:
        target = data.draw(st.sampled_from(targets), label="form")
        page = target.get(boss)
        form, baseline = _form_post(page, _fresh(), target.context_key)
        bound = data.draw(st.sampled_from([b for b in form if _field_values(b.field)]), label="field")
        values = [*_field_values(bound.field), "fuzz-taken", "new", "build"]
        value = data.draw(st.sampled_from(values), label="value")
        before = target.stored()
        with django_capture_on_commit_callbacks(execute=False):
            response = target.post(boss, {**baseline, bound.html_name: value})
        SENT[target.label] = SENT.get(target.label, 0) + 1
        _assert_no_server_error(response, target.label, bound.name, value)
        refused = response.status_code != 302
        if _must_refuse(bound.field, value, None) or (
            bound.name in ("slug", "name") and value == "fuzz-taken" and target.label not in NAMES_MAY_REPEAT
        ):
            assert refused, (target.label, bound.name, _shown(value), "was taken")
        if refused:
            assert target.stored() == before, (target.label, bound.name, _shown(value))
            errors = (
                response.context[target.context_key].errors
                if response.context and target.context_key in response.context
                else {}
            )
            if _must_refuse(bound.field, value, None):
                # A GET form's NUL is refused before its view, by NulMiddleware's 400 naming the parameter.
                by_middleware = not errors and response.status_code == 400
                named = bound.html_name in response.content.decode(errors="replace")
                assert _refused_on(errors, bound.name) or (by_middleware and named), (
                    target.label, bound.name, _shown(value), errors
                )  # fmt: skip

    post()


@pytest.fixture
def admin_world() -> dict[str, Any]:
    return make_admin_world()
