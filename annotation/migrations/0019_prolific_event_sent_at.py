"""When Prolific sent a webhook event (its X-Timestamp, issue #31 item 12): an event sent before one already
applied to the same submission is not applied over it. Events stored before this have none."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("annotation", "0018_prolific_permissions_and_least_time")]

    operations = [
        migrations.AddField(
            model_name="prolificevent",
            name="sent_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
