"""The "Build a task set" form of the Tasks page and the admin."""

from __future__ import annotations

from typing import Any

from django import forms

from h2e_site.bounds import model_range
from mining.models import Split, Topic

from .jobs import DEFAULT_TEST_SHARE
from .models import TaskSet
from .selection import SplitBy


class TaskSetBuildForm(forms.Form):
    name = forms.SlugField(max_length=64, help_text="letters, digits, - and _; the set's URL")
    seed = model_range(TaskSet, "seed").form_field(
        initial=0, help_text="the same seed and procedures build the same examples"
    )
    splits = forms.MultipleChoiceField(
        choices=Split.choices,
        initial=[Split.BENCH],
        widget=forms.CheckboxSelectMultiple,
        help_text="procedures of these splits",
    )
    topics = forms.ModelMultipleChoiceField(
        queryset=Topic.objects.order_by("name"),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="only these topics (none chosen: every topic, and procedures without one)",
    )
    test_share = forms.FloatField(
        initial=DEFAULT_TEST_SHARE,
        min_value=0.01,
        max_value=0.99,
        help_text="share of each task's examples (or of the procedures, split by procedure) drawn for test",
    )
    split_by = forms.ChoiceField(
        choices=SplitBy.choices,
        initial=SplitBy.TEXT,
        required=False,
        widget=forms.RadioSelect,
        help_text="by procedure when train must not see a test procedure at all",
    )

    def clean_name(self) -> str:
        name: str = self.cleaned_data["name"]
        if TaskSet.objects.filter(name=name).exists():
            raise forms.ValidationError(f"a task set {name!r} exists already")
        return name

    def create_kwargs(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {
            "seed": data["seed"],
            "splits": list(data["splits"]),
            "topic_ids": [topic.pk for topic in data["topics"]],
            "test_share": data["test_share"],
            "split_by": data["split_by"] or SplitBy.TEXT,
        }
