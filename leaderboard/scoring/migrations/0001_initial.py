import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('leaderboard', '0004_owner_control'),
        ('catalogue', '0001_initial'),
        ('jobs', '0001_initial'),
        ('submissions', '0001_initial'),
    ]

    # State only: the table was created by leaderboard's migrations 0001-0004 (db_table keeps its name); this app
    # takes the model over without touching the database.
    operations = [
        migrations.SeparateDatabaseAndState(database_operations=[], state_operations=[
            migrations.CreateModel(
                name='LeaderboardEntry',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('protocol', models.CharField(max_length=20)),
                    ('backend', models.CharField(max_length=40)),
                    ('attempts_k', models.PositiveSmallIntegerField()),
                    ('listed', models.BooleanField(default=False, help_text='public and not hidden')),
                    ('ranked', models.BooleanField(default=False, help_text='listed, profile ranked, not flagged')),
                    ('correct', models.PositiveSmallIntegerField(default=0)),
                    ('faster', models.PositiveSmallIntegerField(default=0)),
                    ('fast_1_0', models.FloatField(default=0.0)),
                    ('fast_1_5', models.FloatField(default=0.0)),
                    ('fast_2_0', models.FloatField(default=0.0)),
                    ('geomean_speedup', models.FloatField(blank=True, null=True)),
                    ('judged', models.PositiveSmallIntegerField(default=0)),
                    ('pending', models.PositiveSmallIntegerField(default=0)),
                    ('flagged_results', models.PositiveSmallIntegerField(default=0)),
                    ('updated_at', models.DateTimeField(default=django.utils.timezone.now)),
                    ('profile', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='entries', to='catalogue.hardwareprofile')),
                    ('submission', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='entry', to='submissions.submission')),
                ],
                options={
                    'db_table': 'leaderboard_leaderboardentry',
                    'indexes': [models.Index(fields=['profile', 'listed', 'protocol'], name='entry_profile_listed')],
                },
            ),
            migrations.CreateModel(
                name='ProblemScore',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('protocol', models.CharField(max_length=20)),
                    ('listed', models.BooleanField(default=False, help_text='public and not hidden')),
                    ('status', models.CharField(default='pending', help_text='a verdict, pending, not_judged or missing', max_length=20)),
                    ('attempt', models.PositiveSmallIntegerField(blank=True, null=True)),
                    ('correct', models.BooleanField(default=False, help_text='correct and not flagged')),
                    ('faster', models.BooleanField(default=False)),
                    ('flagged', models.BooleanField(default=False)),
                    ('speedup', models.FloatField(blank=True, null=True)),
                    ('speedup_lo', models.FloatField(blank=True, null=True)),
                    ('speedup_hi', models.FloatField(blank=True, null=True)),
                    ('attempts_correct', models.PositiveSmallIntegerField(default=0)),
                    ('attempts_total', models.PositiveSmallIntegerField(default=0)),
                    ('problem', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='scores', to='catalogue.problem')),
                    ('profile', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='catalogue.hardwareprofile')),
                    ('result', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='jobs.result')),
                    ('submission', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='scores', to='submissions.submission')),
                ],
                options={
                    'db_table': 'leaderboard_problemscore',
                    'indexes': [models.Index(fields=['problem', 'profile', 'listed'], name='score_problem_profile')],
                    'constraints': [models.UniqueConstraint(fields=('submission', 'problem'), name='one_score_per_problem')],
                },
            ),
            migrations.CreateModel(
                name='ProblemStat',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('protocol', models.CharField(max_length=20)),
                    ('tried', models.PositiveIntegerField(default=0)),
                    ('solved', models.PositiveIntegerField(default=0)),
                    ('faster', models.PositiveIntegerField(default=0)),
                    ('best_speedup', models.FloatField(blank=True, null=True)),
                    ('updated_at', models.DateTimeField(default=django.utils.timezone.now)),
                    ('problem', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='stats', to='catalogue.problem')),
                    ('profile', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='catalogue.hardwareprofile')),
                ],
                options={
                    'db_table': 'leaderboard_problemstat',
                    'constraints': [models.UniqueConstraint(fields=('problem', 'profile', 'protocol'), name='one_stat_per_cell')],
                },
            ),
        ]),
    ]
