"""The researcher's study form."""

from __future__ import annotations

import json
from typing import Any

from django import forms

from judging.models import Generator, Judge
from mining.models import GoalStepTask, Split, TaskSet, Topic

from . import codebook
from .kinds import kind_for
from .models import Study, StudyKind

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
    StudyKind.CRITICAL_FAILURES: ("generators", "disagreeing_judges"),
    StudyKind.STEP_TYPES: ("splits",),
    StudyKind.MULTIPLE_CHOICE: ("task_set", "tasks"),
}


class StudyForm(forms.Form):
    """A new study of one kind (?kind= on the builder page): its selection, gates and texts, the texts
    starting from the kind's own (the codebook for critical failures, the SIO guidelines for step types)."""

    kind = forms.ChoiceField(choices=StudyKind.choices, widget=forms.HiddenInput, required=False)
    title = forms.CharField(max_length=200)
    slug = forms.SlugField(max_length=64, help_text="part of the annotators' URL: /a/<slug>/")
    prolific_study_id = forms.CharField(max_length=64, required=False, label="Prolific STUDY_ID (optional)")
    topics = forms.ModelMultipleChoiceField(Topic.objects.all(), required=False, help_text="none: any topic")
    splits = forms.MultipleChoiceField(
        choices=Split.choices, required=False, help_text="procedures of these splits; none: any split"
    )
    task_set = forms.ChoiceField(choices=[], help_text="the task set whose test examples are validated")
    tasks = forms.MultipleChoiceField(
        choices=GoalStepTask.choices, required=False, help_text="none: every task of the set"
    )
    generators = forms.ModelMultipleChoiceField(
        Generator.objects.all(), required=False, help_text="none: any generator"
    )
    disagreeing_judges = forms.ModelMultipleChoiceField(
        Judge.objects.all(),
        required=False,
        help_text="two or more: only generations these judges disagree on",
    )
    sample_size = forms.IntegerField(
        min_value=1, required=False, help_text="seeded random sample; empty: all"
    )
    seed = forms.IntegerField(initial=0)
    annotators_per_item = forms.IntegerField(
        min_value=1, max_value=50, initial=3, label="Annotators per item (k)"
    )
    items_per_participant = forms.IntegerField(min_value=0, initial=10, help_text="0: as many as remain")
    min_dwell_seconds = forms.IntegerField(min_value=0, initial=codebook.MIN_DWELL_SECONDS)
    estimated_item_minutes = forms.FloatField(min_value=0.1, initial=codebook.ESTIMATED_ITEM_MINUTES)
    lease_minutes = forms.IntegerField(
        min_value=1, required=False, help_text="empty: Prolific's maximum time 2 + X + 2√X for the estimate X"
    )
    attention_checks = forms.IntegerField(min_value=0, initial=2, help_text="instructed-response items")
    attention_check_every = forms.IntegerField(min_value=0, initial=5, help_text="one after every N items")
    instructions = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), initial=codebook.GUIDELINES)
    consent_text = forms.CharField(widget=forms.Textarea(attrs={"rows": 6}), initial=codebook.CONSENT)
    training_text = forms.CharField(widget=forms.Textarea(attrs={"rows": 12}), initial=codebook.TRAINING)
    comprehension_questions = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 8}),
        initial=json.dumps(codebook.default_comprehension_questions(), indent=2),
        help_text='JSON: [{"question": ..., "choices": [...], "answer": index}]',
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
        defaults = kind_for(kind).study_defaults()
        for name in KIND_TEXTS:
            if name in defaults:
                value = defaults[name]
                self.fields[name].initial = json.dumps(value, indent=2) if isinstance(value, list) else value

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

    def clean_comprehension_questions(self) -> list[dict[str, Any]]:
        try:
            questions = json.loads(self.cleaned_data["comprehension_questions"])
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(f"Not valid JSON: {exc}") from exc
        if not isinstance(questions, list) or not all(_is_question(q) for q in questions):
            raise forms.ValidationError(
                "Each question needs a question, choices and the index of the answer."
            )
        return questions


def _is_question(question: Any) -> bool:
    return (
        isinstance(question, dict)
        and isinstance(question.get("question"), str)
        and isinstance(question.get("choices"), list)
        and len(question["choices"]) >= 2
        and isinstance(question.get("answer"), int)
        and 0 <= question["answer"] < len(question["choices"])
    )
