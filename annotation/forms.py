"""The researcher's study form."""

from __future__ import annotations

from typing import Any

from django import forms
from django.urls import reverse
from django.utils.html import format_html

from h2e_site.bounds import SEED, model_range
from judging.models import Generator, Judge
from mining.models import GoalStepTask, Split, TaskSet, Topic

from . import codebook
from .comprehension import comprehension_questions_parse, comprehension_questions_text
from .kinds import kind_for
from .models import PROLIFIC_STUDY_ID, CalibrationDesign, Study, StudyKind, study_slug_free
from .study_types import ATTENTION_CHECKS, SAMPLE_SIZE

KIND_TEXTS = (
    "instructions",
    "consent_text",
    "training_text",
    "comprehension_questions",
    "min_dwell_seconds",
    "estimated_item_minutes",
)
# Selection fields that apply to one kind only (the others select items for every kind).
KIND_ONLY_FIELDS = {
    StudyKind.CRITICAL_FAILURES: (
        "generators",
        "disagreeing_judges",
        "calibration_design",
        "calibration_judges",
    ),
    StudyKind.STEP_TYPES: ("splits",),
    StudyKind.MULTIPLE_CHOICE: ("task_set", "tasks"),
}


class StudyForm(forms.Form):
    """A new study of one kind (?kind= on the builder page): its selection, gates and texts, the texts
    starting from the kind's own (the codebook for critical failures, the SIO guidelines for step types)."""

    kind = forms.ChoiceField(choices=StudyKind.choices, widget=forms.HiddenInput, required=False)
    title = forms.CharField(max_length=200)
    slug = forms.SlugField(
        max_length=64, validators=[study_slug_free], help_text="part of the annotators' URL: /a/<slug>/"
    )
    prolific_study_id = forms.CharField(
        max_length=64,
        required=False,
        label="Prolific STUDY_ID (optional)",
        help_text="24 hexadecimal characters, from the study's URL on Prolific",
    )
    topics = forms.ModelMultipleChoiceField(
        Topic.objects.order_by("name"),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="none: any topic",
    )
    splits = forms.MultipleChoiceField(
        choices=Split.choices,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="procedures of these splits; none: any split",
    )
    task_set = forms.ChoiceField(choices=[], help_text="the task set whose test examples are validated")
    tasks = forms.MultipleChoiceField(
        choices=GoalStepTask.choices,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="none: every task of the set",
    )
    generators = forms.ModelMultipleChoiceField(
        Generator.objects.all(), required=False, help_text="none: any generator"
    )
    disagreeing_judges = forms.ModelMultipleChoiceField(
        Judge.objects.all(),
        required=False,
        help_text="two or more: only generations these judges disagree on",
    )
    calibration_design = forms.ChoiceField(
        choices=[
            ("", "none: the items are the selection (or its seeded sample)"),
            *CalibrationDesign.choices,
        ],
        required=False,
        label="Calibration sample",
        help_text="draw the items with known inclusion probabilities (stored), so the human labels can "
        "calibrate the judges' How2Score; the sample size is the round's n. Not with a topic filter or "
        "“disagreeing judges”",
    )
    calibration_judges = forms.ModelMultipleChoiceField(
        Judge.objects.all(),
        required=False,
        label="Judges of the disagreement design",
        help_text="their verdicts (and re-runs' flips) give each generation's uncertainty: two or more, "
        "or one judge with re-run verdicts",
    )
    sample_size = SAMPLE_SIZE.form_field(
        required=False, help_text="seeded random sample; empty: all. With a calibration sample: its size n"
    )
    seed = SEED.form_field(initial=0, help_text="the same seed and selection draw the same items")
    annotators_per_item = model_range(Study, "annotators_per_item").form_field(
        initial=3, label="Annotators per item (k)"
    )
    items_per_participant = model_range(Study, "items_per_participant").form_field(
        initial=10, help_text="0: as many as remain"
    )
    min_dwell_seconds = model_range(Study, "min_dwell_seconds").form_field(
        initial=codebook.MIN_DWELL_SECONDS, help_text="an item can be submitted after this many seconds"
    )
    estimated_item_minutes = model_range(Study, "estimated_item_minutes").form_field(
        whole=False, initial=codebook.ESTIMATED_ITEM_MINUTES
    )
    lease_minutes = model_range(Study, "lease_minutes").form_field(
        required=False, help_text="empty: Prolific's maximum time 2 + X + 2√X for the estimate X"
    )
    attention_checks = ATTENTION_CHECKS.form_field(initial=2, help_text="instructed-response items")
    attention_check_every = model_range(Study, "attention_check_every").form_field(
        initial=5, help_text="one after every N items (0: none)"
    )
    instructions = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), initial=codebook.GUIDELINES)
    consent_text = forms.CharField(widget=forms.Textarea(attrs={"rows": 6}), initial=codebook.CONSENT)
    training_text = forms.CharField(widget=forms.Textarea(attrs={"rows": 12}), initial=codebook.TRAINING)
    comprehension_questions = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 14, "class": "code"}),
        initial=comprehension_questions_text(codebook.default_comprehension_questions()),
        help_text="One question per block, blocks apart by a blank line: the question, then one choice "
        "per line starting with “- ”, the right choice with “* ”. The training text should answer them.",
    )
    completion_code = forms.CharField(max_length=64, required=False, help_text="empty: generated")
    screenout_code = forms.CharField(max_length=64, required=False, help_text="empty: generated")

    def __init__(self, *args: Any, kind: str = StudyKind.CRITICAL_FAILURES, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["kind"].initial = kind
        for other, names in KIND_ONLY_FIELDS.items():
            if other != kind:
                for name in names:
                    del self.fields[name]
        if "task_set" in self.fields:
            task_sets = TaskSet.objects.order_by("-created_at").values_list("name", flat=True)
            field = self.fields["task_set"]
            assert isinstance(field, forms.ChoiceField)
            field.choices = [(name, name) for name in task_sets]
            if not task_sets:
                field.help_text = format_html(
                    'No task set yet: <a href="{}">build one on the Tasks page</a> (or import a BIG-bench '
                    "task with <code>manage.py import_bigbench</code>), then come back.",
                    reverse("mining:task_sets") + "#build",
                )
        defaults = kind_for(kind).study_defaults()
        for name in KIND_TEXTS:
            if name in defaults:
                value = defaults[name]
                self.fields[name].initial = (
                    comprehension_questions_text(value) if name == "comprehension_questions" else value
                )

    def clean_slug(self) -> str:
        slug: str = self.cleaned_data["slug"]
        if Study.objects.filter(slug=slug).exists():
            raise forms.ValidationError("A study with this slug exists.")
        return slug

    def clean_disagreeing_judges(self) -> Any:
        judges = self.cleaned_data["disagreeing_judges"]
        if len(judges) == 1:
            raise forms.ValidationError("Choose at least two judges, or none.")
        return judges

    def clean_prolific_study_id(self) -> str:
        study_id = str(self.cleaned_data["prolific_study_id"]).strip().lower()
        if study_id:
            PROLIFIC_STUDY_ID(study_id)  # the model's rule, with the letters as Prolific writes them
        return study_id

    def clean_comprehension_questions(self) -> list[dict[str, Any]]:
        return comprehension_questions_parse(self.cleaned_data["comprehension_questions"])


class CalibrationRoundForm(forms.Form):
    """The next round of a calibration study (its page): size, design, judges, seed."""

    size = SAMPLE_SIZE.form_field(initial=10, help_text="examples this round draws from the frame (n)")
    design = forms.ChoiceField(
        choices=[("", "default: disagreement with judges, else uniform"), *CalibrationDesign.choices],
        required=False,
    )
    judges = forms.ModelMultipleChoiceField(
        Judge.objects.all(), required=False, help_text="none: the study's judges"
    )
    seed = SEED.form_field(required=False, help_text="empty: a random seed (stored with the round)")
