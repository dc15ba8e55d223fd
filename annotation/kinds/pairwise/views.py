"""A pairwise study's own pages (staff): its figures at /agreement/<slug>/ (dispatched by the kind) and, on
the figures page, its LLM twin: POST /studies/<slug>/pairwise/judge/ starts a pairwise judge job
(judging/pairwise_jobs.py) asking a judge about the study's pairs in both orders, and POST
/studies/<slug>/pairwise/attach-config/ lets an imported judge run there; the study page lists the twin's
recent jobs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from annotation.base.beyond_majority import question_estimates
from annotation.base.models import Study
from annotation.base.selectors import study_unlabelled_reason
from annotation.kinds.pairwise.comparisons import BradleyTerry, Strength
from annotation.kinds.pairwise.data import twin_job_create
from annotation.kinds.pairwise.figures import study_figures
from annotation.kinds.pairwise.forms import AttachJudgeConfigForm, PairwiseJudgeForm
from annotation.kinds.pairwise.questions import outcome_question
from h2e_site.inputs import BadInput
from h2e_site.jobs.answering import NothingToAsk
from h2e_site.jobs.models import Job
from h2e_site.jobs.views import JobLine, job_lines
from h2e_site.llm.config import ConfigError
from h2e_site.web import can_run_jobs, request_user, staff_required
from judging.job_kinds import PAIRWISE_JUDGE
from judging.models import Judge
from judging.selectors import generator_names

KIND = "pairwise"
RECENT_JOBS = 5


@dataclass(frozen=True)
class RankedGenerator:
    """A line of a Bradley-Terry ranking as the page shows it: the generator by name, not by its hex id."""

    line: Strength
    name: str


def _named(ranking: BradleyTerry, names: dict[str, str]) -> list[RankedGenerator]:
    return [RankedGenerator(line, names.get(line.generator, line.generator)) for line in ranking.strengths]


def agreement_page(
    request: HttpRequest,
    study: Study,
    form: PairwiseJudgeForm | None = None,
    status: int = 200,
    attach_form: AttachJudgeConfigForm | None = None,
) -> HttpResponse:
    """The study's figures and its LLM twin's forms (the caller checked staff and found the study); `form`
    or `attach_form`: a twin's form refused, shown with its errors. The attach form shows while some judge
    was imported without a config."""
    figures = study_figures(study)
    rankings = [figures.humans.ranking, *(j.ranking for j in figures.judges)]
    names = generator_names(line.generator for ranking in rankings for line in ranking.strengths)
    context = {
        "study": study,
        "figures": figures,
        "human_ranking": _named(figures.humans.ranking, names),
        "judge_rankings": [(j, _named(j.ranking, names)) for j in figures.judges],
        "twin_form": form or PairwiseJudgeForm(),
        "attach_form": attach_form
        or (AttachJudgeConfigForm() if Judge.objects.filter(config={}).exists() else None),
        "twin_jobs": _twin_jobs(study),
        "beyond_majority": question_estimates([outcome_question(study)]),
        "unlabelled_reason": "" if figures.humans.n_answers else study_unlabelled_reason(study=study),
    }
    return render(request, "annotation/pairwise_agreement.html", context, status=status)


def study_section_context(study: Study, refused: forms.Form | None) -> dict[str, Any]:
    """The study page's section: its LLM twin's recent jobs."""
    return {"twin_jobs": _twin_jobs(study)}


def _twin_jobs(study: Study) -> list[JobLine]:
    jobs = Job.objects.select_related("created_by").filter(kind=PAIRWISE_JUDGE, parameters__study=study.pk)
    return job_lines(list(jobs[:RECENT_JOBS]))


@staff_required
@require_POST
def pairwise_judge(request: HttpRequest, slug: str) -> HttpResponse:
    """Start the LLM twin: a pairwise judge job on every pair of the study, in both orders; refused: the
    figures page again with the form's error (400)."""
    study = get_object_or_404(Study, slug=slug, kind=KIND)
    if not can_run_jobs(request):
        raise PermissionDenied("starting a job needs the permission to run jobs")
    form = PairwiseJudgeForm(request.POST)
    if form.is_valid():
        try:
            job = twin_job_create(study, form.cleaned_data["judge"], request_user(request))
        except (BadInput, ConfigError, NothingToAsk) as refused:
            form.add_error("judge", str(refused))
        else:
            messages.success(request, f"Pairwise judge job {job.pk} started on the study's pairs.")
            return redirect(reverse("agreement:study", args=[study.slug]) + "#llm-twin")
    return agreement_page(request, study, form, status=400)


@staff_required
@require_POST
def pairwise_attach_config(request: HttpRequest, slug: str) -> HttpResponse:
    """Attach a config file to an imported judge so that it can answer the pairs (as the admin's "Attach a
    config…"); refused: the figures page again with the form's error (400)."""
    study = get_object_or_404(Study, slug=slug, kind=KIND)
    if not can_run_jobs(request):
        raise PermissionDenied("attaching a config needs the permission to run jobs")
    form = AttachJudgeConfigForm(request.POST)
    if not form.is_valid():
        return agreement_page(request, study, attach_form=form, status=400)
    judge = form.cleaned_data["imported_judge"]
    messages.success(
        request, f"configs/judges/{form.cleaned_data['config_file']} attached to {judge}: it can answer now."
    )
    return redirect(reverse("agreement:study", args=[study.slug]) + "#llm-twin")
