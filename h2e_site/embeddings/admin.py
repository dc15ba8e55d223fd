"""Admin of the embedding store: each model with its number of stored vectors, read-only; one action embeds
the texts of chosen sources that have no vector yet under the selected model (an `embed` job; needs
jobs.add_job, as every job-starting action does). Vectors are never typed in: they are rows the job writes."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import Count, QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse

from h2e_site.web import RunActionsMixin, confirmed, request_user

from .jobs import embed_job_create
from .models import EmbeddingModel
from .sources import text_source_choices
from .specs import model_key


class EmbedForm(forms.Form):
    sources = forms.MultipleChoiceField(
        choices=text_source_choices, widget=forms.CheckboxSelectMultiple, help_text="whose texts to embed"
    )


@admin.register(EmbeddingModel)
class EmbeddingModelAdmin(RunActionsMixin, admin.ModelAdmin):
    list_display = ["name", "revision", "dimension", "n_vectors", "created_at"]
    readonly_fields = ("name", "revision", "dimension", "created_at")
    fields = readonly_fields
    actions = ["embed_missing"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[EmbeddingModel]:
        return super().get_queryset(request).annotate(vectors_count=Count("vectors"))

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # a model's row is made when it first embeds

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="vectors stored")
    def n_vectors(self, obj: EmbeddingModel) -> int:
        return getattr(obj, "vectors_count", 0)

    @admin.action(description="Embed the texts without a vector", permissions=["run"])
    def embed_missing(
        self, request: HttpRequest, queryset: QuerySet[EmbeddingModel]
    ) -> TemplateResponse | None:
        form = EmbedForm(request.POST if confirmed(request) else None)
        if confirmed(request) and form.is_valid():
            for model in queryset:
                job = embed_job_create(
                    sources=form.cleaned_data["sources"],
                    model=model_key(model.name),
                    created_by=request_user(request),
                )
                self.message_user(request, f"{model.name}: embed job #{job.pk} started.", messages.SUCCESS)
            return None
        return self.action_page(
            request,
            queryset,
            action="embed_missing",
            title="Embed the texts without a vector",
            submit_label="Embed",
            form=form,
            intro="An embed job per model: every text of the chosen sources that has no vector under the "
            "model "
            "is embedded and stored; texts already stored are not embedded again.",
        )
