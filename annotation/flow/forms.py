"""The researcher's study form."""

from __future__ import annotations

from typing import Any

from django import forms

from annotation.base import codebook
from annotation.base.comprehension import comprehension_questions_parse, comprehension_questions_text
from annotation.base.models import PROLIFIC_STUDY_ID, Study, study_slug_free
from annotation.base.registry import kind_for
from annotation.base.types import ATTENTION_CHECKS, KINDS_INDEX, SAMPLE_SIZE, Selection
from h2e_site.bounds import SEED, model_range
from mining.models import Topic

KIND_TEXTS = (
    "instructions",
    "consent_text",
    "training_text",
    "comprehension_questions",
    "min_dwell_seconds",
    "estimated_item_minutes",
)


class StudyForm(forms.Form):
    """A new study of one kind (?kind= on the builder page): the shared fields (title, topics, sample, gates,
    texts) and the kind's own selection fields (its `builder_fields`, after the topics), the texts starting
    from the kind's own (its `study_defaults`)."""

    kind = forms.ChoiceField(
        choices=[(name, entry.label) for name, entry in KINDS_INDEX.items()],
        widget=forms.HiddenInput,
        required=False,
    )
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
        required=False, help_text="empty: Prolific's least maximum time 2 + 2X + 2√X for the estimate X"
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
    attention_failed_code = forms.CharField(
        max_length=64, required=False, help_text="empty: generated", label="Failed-attention-check code"
    )
    attention_fail_limit = model_range(Study, "attention_fail_limit").form_field(
        required=False,
        initial=2,
        help_text="failed attention checks that earn that code (empty: 2; Prolific: more than one at 5+ min)",
    )

    def __init__(self, *args: Any, kind: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["kind"].initial = kind
        self.spec = kind_for(kind)
        own = self.spec.builder_fields()
        self.kind_fields = list(own)  # the kind's selection fields, shown after the shared topics
        names = list(self.fields)
        at = names.index("topics") + 1
        self.fields.update(own)
        self.order_fields([*names[:at], *own, *names[at:]])
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

    def clean_prolific_study_id(self) -> str:
        study_id = str(self.cleaned_data["prolific_study_id"]).strip().lower()
        if study_id:
            PROLIFIC_STUDY_ID(study_id)  # the model's rule, with the letters as Prolific writes them
        return study_id

    def clean_comprehension_questions(self) -> list[dict[str, Any]]:
        return comprehension_questions_parse(self.cleaned_data["comprehension_questions"])

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        self.spec.builder_clean(data)  # its ValidationError lands on the kind's fields
        return data

    def selection(self) -> Selection:
        """The study's Selection: the shared fields and the kind's part (valid forms only)."""
        data = self.cleaned_data
        return Selection(
            topic_ids=[t.pk for t in data["topics"]],
            sample_size=data["sample_size"],
            seed=data["seed"],
            **self.spec.selection_from(data),
        )

    def selection_names(self) -> dict[str, str]:
        """The form's field of a Selection field the service's refusals name, where they differ."""
        return {"topic_ids": "topics", **self.spec.builder_names()}
