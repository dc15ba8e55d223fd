"""Full-text search of human failures (annotation/failures/search.py), as judging migration 0003 does for the
judges' (issue #31 item 22: the 17,000 human failures of a 10,000-item study made a text search scan them
all). The expression must stay the same as the query's. PostgreSQL only: SQLite matches substrings."""

from django.db import migrations

FULL_TEXT_INDEX = (
    "CREATE INDEX IF NOT EXISTS annotated_failure_description_fts ON annotation_annotatedfailure "
    "USING gin (to_tsvector('english'::regconfig, description))"
)
DROP_FULL_TEXT_INDEX = "DROP INDEX IF EXISTS annotated_failure_description_fts"


def full_text_index(apps, schema_editor):  # type: ignore[no-untyped-def]
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(FULL_TEXT_INDEX)


def drop_full_text_index(apps, schema_editor):  # type: ignore[no-untyped-def]
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP_FULL_TEXT_INDEX)


class Migration(migrations.Migration):
    dependencies = [("annotation", "0019_prolific_event_sent_at")]

    operations = [migrations.RunPython(full_text_index, drop_full_text_index)]
