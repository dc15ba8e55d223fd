"""Admin of the critical-failures kind's tables: calibration rounds and their draws, read-only (a round is
drawn
by the study page or `manage.py calibration_round`)."""

from __future__ import annotations

from django.contrib import admin

from annotation.base.admin import ReadOnlyAdmin
from annotation.kinds.critical_failures.models import CalibrationDraw, CalibrationRound


@admin.register(CalibrationRound)
class CalibrationRoundAdmin(ReadOnlyAdmin):
    list_display = ["study", "number", "design", "size", "new_items", "seed", "created_at"]
    list_filter = ["design", "study"]
    list_select_related = ["study"]
    search_fields = ["study__slug"]


@admin.register(CalibrationDraw)
class CalibrationDrawAdmin(ReadOnlyAdmin):
    list_display = ["round", "generation", "probability", "drawn"]
    list_filter = ["drawn", "round__study"]
    list_select_related = ["round", "generation"]
    raw_id_fields = ["round", "generation"]
