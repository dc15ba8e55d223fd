"""A multiple-choice study's validation page (staff): per task the Table 2 distribution, the yield and the
human accuracy with their Wilson intervals, Krippendorff's alpha, and the validated test set to download."""

from __future__ import annotations

from collections.abc import Iterator

import orjson
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from annotation.base.beyond_majority import question_estimates
from annotation.base.models import Study
from annotation.base.selectors import study_unlabelled_reason
from annotation.kinds.multiple_choice.name import KIND
from annotation.kinds.multiple_choice.questions import choice_questions
from annotation.kinds.multiple_choice.validation import kept_example_ids, study_answers, validate
from goal_step.answer_views import task_models_context
from goal_step.models import TaskExample, TaskSet
from h2e_site.web import staff_required


def study_validation_page(request: HttpRequest, study: Study) -> HttpResponse:
    """Dispatched from /agreement/<slug>/ for a multiple-choice study."""
    answers = study_answers(study)
    tasks = validate(answers, k=study.annotators_per_item)
    task_set = _task_set_name(study)
    kept = kept_example_ids(answers, k=study.annotators_per_item)
    found = TaskSet.objects.filter(name=task_set).first()
    models = task_models_context(found, only=kept) if found is not None and kept else {}
    context = {
        **models,
        "study": study,
        "tasks": tasks,
        "n_answers": len(answers),
        "n_workers": len({a.worker for a in answers}),
        "n_kept": len(kept),
        "unlabelled_reason": "" if answers else study_unlabelled_reason(study=study),
        "task_set": task_set,
        "beyond_majority": question_estimates(choice_questions(study)),
        "paper_yield": {"step_inference": 0.543, "goal_inference": 0.408, "step_ordering": 0.356},
        "paper_accuracy": {"step_inference": 0.965, "goal_inference": 0.980, "step_ordering": 0.975},
    }
    return render(request, "annotation/mc_validation.html", context)


def _task_set_name(study: Study) -> str:
    name = study.selection.get("task_set") if isinstance(study.selection, dict) else None
    return str(name or "")


@staff_required
@require_GET
def validated_jsonl(request: HttpRequest, slug: str) -> StreamingHttpResponse:
    """The examples every worker answered correctly: the validated test set, one JSON object a line."""
    study = get_object_or_404(Study, slug=slug, kind=KIND)
    kept = kept_example_ids(study_answers(study), k=study.annotators_per_item)
    response = StreamingHttpResponse(_rows(kept), content_type="application/x-ndjson")
    response["Content-Disposition"] = f'attachment; filename="{study.slug}-validated.jsonl"'
    return response


def _rows(kept: set[int]) -> Iterator[bytes]:
    examples = TaskExample.objects.filter(pk__in=kept).select_related("task_set", "topic", "procedure")
    for example in examples.order_by("task", "position").iterator(chunk_size=500):
        yield (
            orjson.dumps(
                {
                    "task_set": example.task_set.name,
                    "task": example.task,
                    "position": example.position,
                    "prompt": example.prompt,
                    "candidates": example.candidates,
                    "answer": example.answer,
                    "topic": example.topic.name if example.topic else None,
                    "source_example_id": example.procedure.source_example_id if example.procedure else None,
                    "validated": True,
                }
            )
            + b"\n"
        )


__all__ = ["study_validation_page", "validated_jsonl"]
