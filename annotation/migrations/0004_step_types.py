"""Study kinds (#13): Study.kind, items of a procedure (step types) with a payload, kind-specific answers, and
the step-type candidates, human labels (study or imported), classifiers and their predictions."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0003_consent_text_default'),
        ('jobs', '0003_classify_steps_kind'),
        ('judging', '0008_judgment_previous_verdict'),
        ('mining', '0005_run_job_in_core'),
    ]

    operations = [
        migrations.CreateModel(
            name='StepCandidate',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('step_type', models.CharField(choices=[('sequential', 'Sequential'), ('interchangeable', 'Interchangeable'), ('optional', 'Optional')], max_length=16)),
                ('key', models.CharField(max_length=48)),
                ('anchor', models.PositiveSmallIntegerField(blank=True, null=True)),
                ('first', models.PositiveSmallIntegerField()),
                ('second', models.PositiveSmallIntegerField(blank=True, null=True)),
                ('position', models.PositiveSmallIntegerField(help_text="order within the procedure's candidates")),
            ],
            options={
                'ordering': ['procedure_id', 'position'],
            },
        ),
        migrations.CreateModel(
            name='StepTypeClassifier',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('classifier_id', models.CharField(max_length=64, unique=True)),
                ('model', models.CharField(max_length=255)),
                ('backend', models.CharField(blank=True, default='', max_length=32)),
                ('config', models.JSONField(blank=True, default=dict, help_text='the resolved model config it runs with')),
                ('prompt_text', models.TextField(blank=True, default='', help_text='the prompt templates, as hashed')),
                ('prompt_sha256', models.CharField(blank=True, default='', max_length=64)),
                ('is_demo_model', models.BooleanField(default=False)),
                ('imported', models.BooleanField(default=False)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
            ],
            options={
                'ordering': ['model', 'classifier_id'],
            },
        ),
        migrations.CreateModel(
            name='StepTypeLabel',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('annotator', models.CharField(help_text="the participant's PID or the imported annotator", max_length=128)),
                ('holds', models.BooleanField()),
                ('expert', models.BooleanField(blank=True, help_text='expert or domain knowledge needed (asked only where it holds)', null=True)),
            ],
            options={
                'ordering': ['candidate_id', 'annotator'],
            },
        ),
        migrations.CreateModel(
            name='StepTypeLabelSet',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.SlugField(max_length=64, unique=True)),
                ('source_file', models.CharField(blank=True, default='', max_length=255)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
            ],
            options={
                'ordering': ['name'],
            },
        ),
        migrations.CreateModel(
            name='StepTypePrediction',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('holds', models.BooleanField(blank=True, null=True)),
                ('raw_output', models.TextField(blank=True, default='')),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('updated_at', models.DateTimeField(auto_now=True)),
            ],
            options={
                'ordering': ['classifier_id', 'candidate_id'],
            },
        ),
        migrations.AddField(
            model_name='annotation',
            name='answer',
            field=models.JSONField(blank=True, default=dict, help_text='kind-specific task-level answers (step types: expert_knowledge)'),
        ),
        migrations.AddField(
            model_name='study',
            name='kind',
            field=models.CharField(choices=[('critical_failures', 'Critical failures (How2Score, an L1/L2 pair)'), ('step_types', 'Step types (sequential, interchangeable, optional steps of a procedure)')], db_default='critical_failures', default='critical_failures', max_length=32),
        ),
        migrations.AddField(
            model_name='studyitem',
            name='payload',
            field=models.JSONField(blank=True, default=dict, help_text="kind-specific: e.g. a step-types attention check's instructed answer"),
        ),
        migrations.AddField(
            model_name='studyitem',
            name='procedure',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='study_items', to='mining.procedure'),
        ),
        migrations.AlterField(
            model_name='annotation',
            name='has_failure',
            field=models.BooleanField(blank=True, help_text='critical failures only', null=True),
        ),
        migrations.AlterField(
            model_name='assignment',
            name='n_l2_steps',
            field=models.PositiveIntegerField(help_text="steps to read when issued (L2's; a procedure's for step types): all must be revealed"),
        ),
        migrations.AlterField(
            model_name='assignment',
            name='n_revealed',
            field=models.PositiveIntegerField(default=0, help_text='steps read so far'),
        ),
        migrations.AlterField(
            model_name='assignment',
            name='step_revealed_at',
            field=models.JSONField(blank=True, default=list, help_text='ISO time each step was clicked, in order'),
        ),
        migrations.AlterField(
            model_name='studyitem',
            name='generation',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='study_items', to='judging.generation'),
        ),
        migrations.AddConstraint(
            model_name='studyitem',
            constraint=models.UniqueConstraint(condition=models.Q(('is_attention_check', False), ('procedure__isnull', False)), fields=('study', 'procedure'), name='study_item_unique_procedure'),
        ),
        migrations.AddConstraint(
            model_name='studyitem',
            constraint=models.CheckConstraint(condition=models.Q(('generation__isnull', False), ('procedure__isnull', False), _connector='OR'), name='study_item_has_a_subject'),
        ),
        migrations.AddField(
            model_name='stepcandidate',
            name='procedure',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='step_candidates', to='mining.procedure'),
        ),
        migrations.AddField(
            model_name='steptypelabel',
            name='annotation',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='step_labels', to='annotation.annotation'),
        ),
        migrations.AddField(
            model_name='steptypelabel',
            name='candidate',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='labels', to='annotation.stepcandidate'),
        ),
        migrations.AddField(
            model_name='steptypelabel',
            name='label_set',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='labels', to='annotation.steptypelabelset'),
        ),
        migrations.AddField(
            model_name='steptypeprediction',
            name='candidate',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='predictions', to='annotation.stepcandidate'),
        ),
        migrations.AddField(
            model_name='steptypeprediction',
            name='classifier',
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='predictions', to='annotation.steptypeclassifier'),
        ),
        migrations.AddField(
            model_name='steptypeprediction',
            name='job',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='step_type_predictions', to='jobs.job'),
        ),
        migrations.AddConstraint(
            model_name='stepcandidate',
            constraint=models.UniqueConstraint(fields=('procedure', 'key'), name='step_candidate_unique_key'),
        ),
        migrations.AddConstraint(
            model_name='steptypelabel',
            constraint=models.CheckConstraint(condition=models.Q(models.Q(('annotation__isnull', False), ('label_set__isnull', True)), models.Q(('annotation__isnull', True), ('label_set__isnull', False)), _connector='OR'), name='step_label_one_source'),
        ),
        migrations.AddConstraint(
            model_name='steptypelabel',
            constraint=models.UniqueConstraint(condition=models.Q(('annotation__isnull', False)), fields=('annotation', 'candidate'), name='step_label_unique_per_annotation'),
        ),
        migrations.AddConstraint(
            model_name='steptypelabel',
            constraint=models.UniqueConstraint(condition=models.Q(('label_set__isnull', False)), fields=('label_set', 'annotator', 'candidate'), name='step_label_unique_per_imported_annotator'),
        ),
        migrations.AddConstraint(
            model_name='steptypeprediction',
            constraint=models.UniqueConstraint(fields=('classifier', 'candidate'), name='step_prediction_unique'),
        ),
    ]
