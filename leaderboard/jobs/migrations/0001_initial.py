import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('leaderboard', '0004_owner_control'),
        ('accounts', '0001_initial'),
        ('catalogue', '0001_initial'),
        ('submissions', '0001_initial'),
    ]

    # State only: the table was created by leaderboard's migrations 0001-0004 (db_table keeps its name); this app
    # takes the model over without touching the database.
    operations = [
        migrations.SeparateDatabaseAndState(database_operations=[], state_operations=[
            migrations.CreateModel(
                name='EvaluationJob',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('status', models.CharField(choices=[('queued', 'queued'), ('running', 'running'), ('done', 'done'), ('failed', 'failed')], default='queued', max_length=8)),
                    ('run', models.PositiveIntegerField(default=1, help_text='1, then +1 per re-run; one final result per run')),
                    ('attempts', models.PositiveSmallIntegerField(default=0, help_text='claims in this run (infra retries)')),
                    ('max_attempts', models.PositiveSmallIntegerField(default=3)),
                    ('lease_owner', models.CharField(blank=True, max_length=200)),
                    ('lease_expires_at', models.DateTimeField(blank=True, null=True)),
                    ('heartbeat_at', models.DateTimeField(blank=True, null=True)),
                    ('enqueued_at', models.DateTimeField(blank=True, null=True)),
                    ('started_at', models.DateTimeField(blank=True, null=True)),
                    ('finished_at', models.DateTimeField(blank=True, null=True)),
                    ('last_error', models.TextField(blank=True)),
                    ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                    ('candidate', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='jobs', to='submissions.candidate')),
                    ('profile', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='jobs', to='catalogue.hardwareprofile')),
                    ('submission', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='jobs', to='submissions.submission')),
                    ('submitter', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='jobs', to='accounts.submitter')),
                ],
                options={
                    'db_table': 'leaderboard_evaluationjob',
                    'ordering': ['id'],
                },
            ),
            migrations.CreateModel(
                name='Result',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('run', models.PositiveIntegerField()),
                    ('claim', models.PositiveSmallIntegerField(default=1)),
                    ('verdict', models.CharField(choices=[('correct', 'correct'), ('incorrect', 'incorrect'), ('compile_error', 'compile error'), ('runtime_error', 'runtime error'), ('timeout', 'timeout'), ('policy_violation', 'policy violation'), ('infra_error', 'infra error')], max_length=20)),
                    ('message', models.TextField(blank=True)),
                    ('flags', models.JSONField(blank=True, default=list)),
                    ('speedup', models.FloatField(blank=True, null=True)),
                    ('speedup_lo', models.FloatField(blank=True, null=True)),
                    ('speedup_hi', models.FloatField(blank=True, null=True)),
                    ('faster', models.BooleanField(default=False)),
                    ('timing_ranked', models.BooleanField(default=False)),
                    ('reference_ms', models.FloatField(blank=True, null=True)),
                    ('candidate_ms', models.FloatField(blank=True, null=True)),
                    ('wall_s', models.FloatField(blank=True, null=True)),
                    ('gpu_seconds', models.FloatField(default=0.0)),
                    ('document', models.JSONField(default=dict)),
                    ('worker', models.CharField(blank=True, max_length=200)),
                    ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                    ('job', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='results', to='jobs.evaluationjob')),
                ],
                options={
                    'db_table': 'leaderboard_result',
                    'ordering': ['id'],
                },
            ),
            migrations.AddIndex(
                model_name='evaluationjob',
                index=models.Index(fields=['status', 'lease_expires_at'], name='job_status_lease'),
            ),
            migrations.AddIndex(
                model_name='evaluationjob',
                index=models.Index(fields=['submitter', 'status'], name='job_submitter_status'),
            ),
            migrations.AddConstraint(
                model_name='evaluationjob',
                constraint=models.UniqueConstraint(fields=('candidate', 'profile'), name='one_job_per_candidate_profile'),
            ),
            migrations.AddConstraint(
                model_name='result',
                constraint=models.UniqueConstraint(condition=models.Q(('verdict', 'infra_error'), _negated=True), fields=('job', 'run'), name='one_final_result_per_run'),
            ),
        ]),
    ]
