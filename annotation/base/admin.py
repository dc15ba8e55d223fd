"""Admin of studies and their rows. A study's fields are checked by the model's validators (the ranges, the
slug, Prolific's id, the comprehension questions' schema: the builder's), and its kind is read-only once it
has items (Study.clean refuses the change anywhere else)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from annotation.base.models import AnnotatedFailure, Annotation, Assignment, Participant, Study, StudyItem
from h2e_site.bounds import BoundedJSONAdmin


@admin.register(Study)
class StudyAdmin(BoundedJSONAdmin, admin.ModelAdmin):
    list_display = ["slug", "title", "annotators_per_item", "min_dwell_seconds", "lease_minutes", "is_open"]
    list_filter = ["is_open"]
    search_fields = ["slug", "title", "prolific_study_id"]
    readonly_fields = ["created_at", "created_by", "selection"]

    def get_readonly_fields(self, request: HttpRequest, obj: Study | None = None) -> Any:
        fields = list(super().get_readonly_fields(request, obj))
        if obj is not None and obj.items.exists():
            fields.append("kind")  # its items are of this kind
        return fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # built with its items at /studies/new/ (an empty study would reach participants)


@admin.register(StudyItem)
class StudyItemAdmin(BoundedJSONAdmin, admin.ModelAdmin):
    list_display = [
        "study",
        "position",
        "generation",
        "assigned_count",
        "completed_count",
        "is_attention_check",
    ]
    list_filter = ["study", "is_attention_check"]
    raw_id_fields = ["generation"]
    # What an item is comes from the builder (its subject, and an attention check's instructed answer).
    readonly_fields = [
        "study",
        "generation",
        "procedure",
        "example",
        "payload",
        "is_attention_check",
        "attention_expects_failure",
        "assigned_count",
        "completed_count",
    ]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # made by the study's builder (study_create) with their counters


@admin.register(Participant)
class ParticipantAdmin(BoundedJSONAdmin, admin.ModelAdmin):
    list_display = [
        "prolific_pid",
        "study",
        "stage",
        "comprehension_attempts",
        "items_completed",
        "is_preview",
        "created_at",
    ]
    list_filter = ["study", "stage", "is_preview"]
    search_fields = ["prolific_pid", "prolific_session_id"]
    readonly_fields = [
        "items_completed",
        "is_preview",
        "created_at",
        "consented_at",
        "trained_at",
        "qualified_at",
        "finished_at",
    ]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # made when a participant arrives from Prolific (or a staff preview)


@admin.register(Assignment)
class AssignmentAdmin(BoundedJSONAdmin, admin.ModelAdmin):
    list_display = ["pk", "study", "participant", "item", "status", "issued_at", "lease_expires_at"]
    list_filter = ["study", "status"]
    raw_id_fields = ["participant", "item"]
    readonly_fields = ["issued_at", "goal_acknowledged_at", "step_revealed_at", "n_reading_steps"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # leased by the annotator flow, which keeps the items' counters


class AnnotatedFailureInline(BoundedJSONAdmin, admin.TabularInline):
    model = AnnotatedFailure
    extra = 0


@admin.register(Annotation)
class AnnotationAdmin(BoundedJSONAdmin, admin.ModelAdmin):
    list_display = [
        "pk",
        "study",
        "item",
        "participant",
        "has_failure",
        "n_failures",
        "attention_passed",
        "submitted_at",
    ]
    list_filter = ["study", "has_failure", "attention_passed"]
    raw_id_fields = ["assignment", "item", "participant"]
    inlines = [AnnotatedFailureInline]
    readonly_fields = [
        "issued_at",
        "goal_acknowledged_at",
        "step_revealed_at",
        "submitted_at",
        "elapsed_seconds",
        "active_seconds",
        "user_agent",
    ]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # submitted by participants through the gates, never typed in


class ReadOnlyAdmin(BoundedJSONAdmin, admin.ModelAdmin):
    """Rows that are facts of a draw: listed and shown, never added, changed or deleted by hand (an inclusion
    probability changed after the draw would bias the calibrated How2Score)."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
