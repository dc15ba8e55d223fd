"""DRF serializers of step-type classification: the body of POST /api/jobs/ {"kind": "classify_steps"} and
the figures of GET /api/studies/<slug>/step-types/models/ (evaluation.py's dataclasses, read as they are).
Shares and scores are fractions in 0..1 (the page shows percent, as the paper's Table 3)."""

from __future__ import annotations

from rest_framework import serializers

from annotation.base.job_kinds import CLASSIFY_STEPS
from annotation.base.models import Study
from annotation.kinds.step_types.models import StepTypeClassifier
from annotation.kinds.step_types.name import KIND
from h2e_site.api import ShareSerializer


class ClassifyJobCreateSerializer(serializers.Serializer):
    """Body of POST /api/jobs/ for a classify_steps job: a configured classifier x a step-types study (the
    candidates it has not classified yet)."""

    kind = serializers.ChoiceField(choices=[(CLASSIFY_STEPS, "classify step types")])
    classifier_id = serializers.CharField(help_text="the step-type classifier (made from a config)")
    study = serializers.SlugField(help_text="the step-types study whose candidates it classifies")

    def validate_classifier_id(self, value: str) -> StepTypeClassifier:
        classifier = StepTypeClassifier.objects.filter(classifier_id=value).first()
        if classifier is None:
            raise serializers.ValidationError(f"no step-type classifier {value!r}")
        return classifier

    def validate_study(self, value: str) -> Study:
        study = Study.objects.filter(slug=value).first()
        if study is None:
            raise serializers.ValidationError(f"no study {value!r}")
        if study.kind != KIND:
            raise serializers.ValidationError(f"study {value!r} is not a step-types study")
        return study


class ScoresSerializer(serializers.Serializer):
    precision = serializers.FloatField()
    recall = serializers.FloatField()
    f1 = serializers.FloatField()
    tp = serializers.IntegerField()
    fp = serializers.IntegerField()
    fn = serializers.IntegerField()
    tn = serializers.IntegerField()
    n = serializers.IntegerField()


class MacroScoresSerializer(serializers.Serializer):
    precision = serializers.FloatField(help_text="mean of the per-type precisions")
    recall = serializers.FloatField(help_text="mean of the per-type recalls")
    f1 = serializers.FloatField(help_text="mean of the per-type F1s (Table 3's All)")
    types = serializers.IntegerField(help_text="types with at least one gold item")


class EvaluationSerializer(serializers.Serializer):
    sequential = ScoresSerializer(source="per_type.sequential")
    interchangeable = ScoresSerializer(source="per_type.interchangeable")
    optional = ScoresSerializer(source="per_type.optional")
    all = MacroScoresSerializer(help_text="macro over the three types (Table 3's All)")


class ColumnSerializer(serializers.Serializer):
    topic = serializers.CharField(help_text='"all" or a topic name')
    n_items = serializers.IntegerField(help_text="gold items")
    n_predicted = serializers.IntegerField(help_text="gold items the model answered")
    n_unparsable = serializers.IntegerField(help_text="answers that could not be read (scored as no)")
    n_missing = serializers.IntegerField(help_text="gold items without an answer (scored as no)")
    scores = EvaluationSerializer(source="evaluation")


class ContradictionSerializer(serializers.Serializer):
    rate = serializers.FloatField(allow_null=True, help_text="both / comparable (the same as of_comparable)")
    both = serializers.IntegerField(help_text="sequential pairs whose interchangeable counterpart holds too")
    comparable = serializers.IntegerField(help_text="sequential pairs whose counterpart has a decision")
    sequential = serializers.IntegerField(help_text="sequential pairs that hold")
    of_comparable = ShareSerializer(
        help_text="both / comparable: the first pair (no counterpart) and undecided counterparts left out"
    )
    of_sequential = ShareSerializer(help_text="both / sequential: every sequential pair, the paper's base")


class ModelFiguresSerializer(serializers.Serializer):
    classifier_id = serializers.CharField(source="classifier.classifier_id")
    model = serializers.CharField(source="classifier.model")
    backend = serializers.CharField(source="classifier.backend")
    is_demo_model = serializers.BooleanField(source="classifier.is_demo_model")
    imported = serializers.BooleanField(source="classifier.imported")
    overall = ColumnSerializer()
    by_topic = ColumnSerializer(many=True)
    contradiction = ContradictionSerializer()


class GoldSourceSerializer(serializers.Serializer):
    key = serializers.CharField(help_text='"study" or "set:<label set name>"')
    label = serializers.CharField()


class GoldFiguresSerializer(serializers.Serializer):
    n_items = serializers.IntegerField()
    n_procedures = serializers.IntegerField()
    n_annotators = serializers.IntegerField()
    n_ties = serializers.IntegerField(help_text="items the annotators tie on (negative in the gold)")
    items_by_type = serializers.DictField(child=serializers.IntegerField())
    positives_by_type = serializers.DictField(child=serializers.IntegerField())
    items_by_topic = serializers.DictField(child=serializers.IntegerField())
    contradiction = ContradictionSerializer()


class StepTypeModelsSerializer(serializers.Serializer):
    study = serializers.CharField(source="study.slug")
    gold_source = GoldSourceSerializer(source="source")
    gold_sources = GoldSourceSerializer(source="sources", many=True)
    gold = GoldFiguresSerializer()
    topics = serializers.ListField(child=serializers.CharField())
    models = ModelFiguresSerializer(many=True, help_text="best macro F1 first")
