"""DRF serializers of model evaluation on goal-step tasks: the body of POST /api/jobs/
{"kind": "answer_tasks"} and the figures of GET /api/tasks/<name>/models/ (results.py's dataclasses, read
as they are). Shares are fractions in 0..1."""

from __future__ import annotations

from rest_framework import serializers

from .job_kinds import ANSWER_TASKS
from .models import TaskModel, TaskSet, TaskSplit


class AnswerJobCreateSerializer(serializers.Serializer):
    """Body of POST /api/jobs/ for an answer_tasks job: a configured model x the examples of a task set's
    split (those it has not answered yet in this mode)."""

    kind = serializers.ChoiceField(choices=[(ANSWER_TASKS, "answer goal-step tasks")])
    model_id = serializers.CharField(
        help_text="the goal-step model (made from a config: manage.py answer_tasks)"
    )
    task_set = serializers.SlugField(help_text="the task set's name")
    split = serializers.ChoiceField(choices=TaskSplit.choices, default=TaskSplit.TEST)
    candidates_only = serializers.BooleanField(
        default=False, help_text="show the candidates alone, without the prompt (the model's artifact check)"
    )

    def validate_model_id(self, value: str) -> TaskModel:
        task_model = TaskModel.objects.filter(model_id=value).first()
        if task_model is None:
            raise serializers.ValidationError(f"no goal-step model {value!r}")
        return task_model

    def validate_task_set(self, value: str) -> TaskSet:
        task_set = TaskSet.objects.filter(name=value).first()
        if task_set is None:
            raise serializers.ValidationError(f"no task set {value!r}")
        return task_set


class AccuracySerializer(serializers.Serializer):
    accuracy = serializers.FloatField(
        source="share", allow_null=True, help_text="correct / n (null: no answers)"
    )
    interval = serializers.ListField(
        child=serializers.FloatField(), allow_null=True, help_text="95 % Wilson score interval [low, high]"
    )
    correct = serializers.IntegerField()
    n = serializers.IntegerField(help_text="examples answered (unparsable answers included, counted wrong)")
    unparsable = serializers.IntegerField(help_text="answers that could not be read (counted wrong)")
    missing = serializers.IntegerField(help_text="examples without an answer (failed requests): not counted")
    n_examples = serializers.IntegerField()
    chance = serializers.FloatField(help_text="mean of 1 / candidates")
    at_chance = serializers.BooleanField(help_text="chance lies inside the interval")


class TopicAccuracySerializer(serializers.Serializer):
    topic = serializers.CharField()
    accuracy = AccuracySerializer()


class TaskAccuracySerializer(serializers.Serializer):
    task = serializers.CharField()
    label = serializers.CharField()
    overall = AccuracySerializer(help_text="from the full prompt")
    by_topic = TopicAccuracySerializer(many=True)
    candidates_only = AccuracySerializer(
        allow_null=True, help_text="from the candidates alone (should sit at chance); null: not run"
    )


class ModelResultsSerializer(serializers.Serializer):
    model_id = serializers.CharField(source="model.model_id")
    model = serializers.CharField(source="model.model")
    backend = serializers.CharField(source="model.backend")
    is_demo_model = serializers.BooleanField(source="model.is_demo_model")
    tasks = TaskAccuracySerializer(many=True)


class TaskModelsSerializer(serializers.Serializer):
    task_set = serializers.CharField(source="task_set.name")
    split = serializers.CharField()
    tasks = serializers.ListField(child=serializers.CharField())
    n_examples = serializers.DictField(child=serializers.IntegerField(), help_text="per task")
    topics = serializers.ListField(child=serializers.CharField())
    models = ModelResultsSerializer(many=True, help_text="by model name")
