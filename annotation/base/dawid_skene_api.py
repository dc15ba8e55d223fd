"""The shape of the Dawid-Skene figures (annotation/base/beyond_majority.py's `as_json`) in every kind's
agreement
API that has them, so the published schema documents them once."""

from __future__ import annotations

from rest_framework import serializers


class CompetenceSerializer(serializers.Serializer):
    annotator = serializers.CharField(help_text="PROLIFIC_PID")
    n_labels = serializers.IntegerField()
    competence = serializers.FloatField(help_text="sum over classes c of prior(c) * P(label c | true c)")
    chance = serializers.FloatField(help_text="sum over c of prior(c) * the annotator's share of label c")


class DawidSkeneItemSerializer(serializers.Serializer):
    item = serializers.CharField()
    name = serializers.CharField()
    dawid_skene = serializers.CharField(help_text="the most probable class")
    posterior = serializers.FloatField(help_text="its posterior probability")
    majority = serializers.CharField(allow_null=True, help_text="more than half the labels; null: none")
    votes = serializers.DictField(child=serializers.IntegerField())


class DawidSkeneSerializer(serializers.Serializer):
    question = serializers.CharField()
    title = serializers.CharField()
    classes = serializers.ListField(child=serializers.CharField())
    priors = serializers.DictField(child=serializers.FloatField())
    iterations = serializers.IntegerField(help_text="EM rounds run (at most 100)")
    n_items = serializers.IntegerField()
    n_labels = serializers.IntegerField()
    annotators = CompetenceSerializer(many=True)
    items = DawidSkeneItemSerializer(many=True)
    differences = serializers.ListField(
        child=serializers.CharField(), help_text="items whose majority is none or differs from Dawid-Skene"
    )
