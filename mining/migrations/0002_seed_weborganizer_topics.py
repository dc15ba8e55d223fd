"""Seed the 14 WebOrganizer topics How2Mine samples from (paper §3)."""

from django.db import migrations

TOPICS = (
    "Art & Design",
    "Crime & Law",
    "Education & Jobs",
    "Electronics & Hardware",
    "Fashion & Beauty",
    "Food & Dining",
    "Health",
    "Home & Hobbies",
    "Industrial",
    "Religion",
    "Science, Math & Technology",
    "Sports & Fitness",
    "Transportation",
    "Travel & Tourism",
)


def seed(apps, schema_editor):
    Topic = apps.get_model("mining", "Topic")
    for name in TOPICS:
        Topic.objects.update_or_create(name=name, defaults={"is_weborganizer": True})


def unseed(apps, schema_editor):
    Topic = apps.get_model("mining", "Topic")
    Topic.objects.filter(name__in=TOPICS, procedures__isnull=True).delete()


class Migration(migrations.Migration):
    dependencies = [("mining", "0001_initial")]
    operations = [migrations.RunPython(seed, unseed)]
