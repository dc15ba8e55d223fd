from __future__ import annotations

from django.contrib import admin
from django.utils.html import format_html
from django.utils.safestring import SafeString

from .models import Procedure, Topic


def pre_block(text: object) -> SafeString:
    """A raw text shown as-is (escaped) in a scrollable <pre> block."""
    return format_html('<pre style="white-space: pre-wrap; max-height: 30rem; overflow: auto">{}</pre>', text)


def numbered_block(steps: object) -> SafeString:
    lines = steps if isinstance(steps, list) else [steps]
    return pre_block("\n".join(f"{i}. {step}" for i, step in enumerate(lines, start=1)))


@admin.register(Topic)
class TopicAdmin(admin.ModelAdmin):
    list_display = ["name", "is_weborganizer"]
    list_filter = ["is_weborganizer"]
    search_fields = ["name"]


@admin.register(Procedure)
class ProcedureAdmin(admin.ModelAdmin):
    list_display = ["source_example_id", "goal_short", "topic", "split", "created_at"]
    list_filter = ["split", "topic"]
    list_select_related = ["topic"]
    search_fields = ["=source_example_id", "goal"]
    autocomplete_fields = ["topic"]
    show_full_result_count = False
    readonly_fields = ["steps_numbered", "source_text_block", "created_at"]
    fields = [
        "source_example_id",
        "topic",
        "split",
        "goal",
        "resources",
        "steps",
        "steps_numbered",
        "url",
        "source_text_block",
        "created_at",
    ]

    @admin.display(description="goal")
    def goal_short(self, obj: Procedure) -> str:
        return obj.goal[:100]

    @admin.display(description="L1 steps (numbered)")
    def steps_numbered(self, obj: Procedure) -> SafeString:
        return numbered_block(obj.steps)

    @admin.display(description="source text")
    def source_text_block(self, obj: Procedure) -> SafeString:
        return pre_block(obj.source_text)
