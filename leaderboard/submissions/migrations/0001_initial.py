import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('leaderboard', '0004_owner_control'),
        ('accounts', '0001_initial'),
        ('catalogue', '0001_initial'),
    ]

    # State only: the table was created by leaderboard's migrations 0001-0004 (db_table keeps its name); this app
    # takes the model over without touching the database.
    operations = [
        migrations.SeparateDatabaseAndState(database_operations=[], state_operations=[
            migrations.CreateModel(
                name='Submission',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('label', models.CharField(blank=True, max_length=200)),
                    ('model_name', models.CharField(max_length=200)),
                    ('agent', models.CharField(blank=True, max_length=200)),
                    ('agent_version', models.CharField(blank=True, max_length=100)),
                    ('backend', models.CharField(max_length=40)),
                    ('protocol', models.CharField(choices=[('one_shot', 'one-shot'), ('best_of_k', 'best-of-k'), ('agentic_feedback', 'agentic with feedback')], max_length=20)),
                    ('attempts_k', models.PositiveSmallIntegerField(default=1)),
                    ('selection_rule', models.CharField(choices=[('first', 'first attempt'), ('last', 'last attempt'), ('best_measured', 'best of the k, measured by the platform'), ('self_selected', "the submitter's pick (attempt folders already filtered)")], default='first', max_length=20)),
                    ('reported_tokens', models.BigIntegerField(blank=True, null=True)),
                    ('reported_dollars', models.DecimalField(blank=True, decimal_places=2, max_digits=12, null=True)),
                    ('feedback_runs', models.PositiveIntegerField(default=0, help_text='platform-measured evaluations used as feedback')),
                    ('gpu_seconds', models.FloatField(default=0.0, help_text="platform-measured, summed over this submission's results")),
                    ('visibility', models.CharField(choices=[('private', 'private'), ('public', 'public'), ('hidden', 'hidden by staff'), ('withdrawn', 'withdrawn by its owner')], default='private', max_length=10)),
                    ('verified', models.BooleanField(default=False)),
                    ('flagged', models.BooleanField(default=False)),
                    ('flag_reason', models.CharField(blank=True, max_length=300)),
                    ('notes', models.TextField(blank=True)),
                    ('archive_sha256', models.CharField(blank=True, max_length=64)),
                    ('files_sha256', models.CharField(blank=True, db_index=True, max_length=64)),
                    ('created_at', models.DateTimeField(db_index=True, default=django.utils.timezone.now)),
                    ('published_at', models.DateTimeField(blank=True, null=True)),
                    ('withdrawn_at', models.DateTimeField(blank=True, help_text='withdrawn by its owner: off every leaderboard and export, its results kept for the owner', null=True)),
                    ('feedback_for', models.ForeignKey(blank=True, help_text='a private run an agent used as feedback for another submission', null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='feedback_submissions', to='submissions.submission')),
                    ('profile', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='submissions', to='catalogue.hardwareprofile')),
                    ('submitter', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='submissions', to='accounts.submitter')),
                ],
                options={
                    'db_table': 'leaderboard_submission',
                    'ordering': ['-created_at'],
                },
            ),
            migrations.CreateModel(
                name='Candidate',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('attempt', models.PositiveSmallIntegerField(default=1)),
                    ('filename', models.CharField(max_length=300)),
                    ('backend', models.CharField(max_length=40)),
                    ('code', models.TextField()),
                    ('sha256', models.CharField(max_length=64)),
                    ('size', models.PositiveIntegerField()),
                    ('problem', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='candidates', to='catalogue.problem')),
                    ('submission', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='candidates', to='submissions.submission')),
                ],
                options={
                    'db_table': 'leaderboard_candidate',
                    'ordering': ['problem_id', 'attempt'],
                    'constraints': [models.UniqueConstraint(fields=('submission', 'problem', 'attempt'), name='one_candidate_per_attempt')],
                },
            ),
        ]),
    ]
