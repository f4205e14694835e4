import django.core.validators
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('leaderboard', '0004_owner_control'),
    ]

    # State only: the table was created by leaderboard's migrations 0001-0004 (db_table keeps its name); this app
    # takes the model over without touching the database.
    operations = [
        migrations.SeparateDatabaseAndState(database_operations=[], state_operations=[
            migrations.CreateModel(
                name='HardwareProfile',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('slug', models.SlugField(help_text='also the dramatiq queue name', unique=True)),
                    ('name', models.CharField(max_length=100)),
                    ('gpu_type', models.CharField(blank=True, max_length=100)),
                    ('device', models.CharField(choices=[('cpu', 'CPU (gloo)'), ('cuda', 'CUDA (nccl)')], default='cuda', max_length=8)),
                    ('world_size', models.PositiveSmallIntegerField(default=8)),
                    ('ranked', models.BooleanField(default=True, help_text='timings from this profile may rank')),
                    ('multicast_allowed', models.BooleanField(default=False)),
                    ('trials', models.PositiveSmallIntegerField(default=5)),
                    ('timing_pairs', models.PositiveSmallIntegerField(default=1, help_text='time each job in this many fresh process pairs (pkb eval --pairs; evaluator/pairs.py)', validators=[django.core.validators.MinValueValidator(1), django.core.validators.MaxValueValidator(16)])),
                    ('accepting', models.BooleanField(default=True, help_text='open for new submissions')),
                    ('description', models.TextField(blank=True)),
                ],
                options={
                    'db_table': 'leaderboard_hardwareprofile',
                    'ordering': ['-ranked', 'slug'],
                },
            ),
            migrations.CreateModel(
                name='Problem',
                fields=[
                    ('id', models.PositiveSmallIntegerField(primary_key=True, serialize=False)),
                    ('stem', models.CharField(max_length=100, unique=True)),
                    ('title', models.TextField()),
                    ('category', models.TextField(blank=True)),
                    ('parallelism', models.TextField(blank=True)),
                    ('origin', models.TextField(blank=True)),
                    ('world_size_rule', models.TextField(blank=True)),
                    ('signature', models.TextField(blank=True)),
                    ('timed_arg', models.CharField(blank=True, max_length=200)),
                    ('output', models.TextField(blank=True)),
                    ('collectives', models.JSONField(blank=True, default=list)),
                    ('bytes_per_rank', models.BigIntegerField(default=0)),
                    ('flops_per_rank', models.BigIntegerField(default=0)),
                    ('implemented', models.BooleanField(default=False)),
                    ('atol', models.FloatField(blank=True, null=True)),
                    ('rtol', models.FloatField(blank=True, null=True)),
                    ('docstring', models.TextField(blank=True)),
                    ('reference_source', models.TextField(blank=True)),
                    ('reference_html', models.TextField(blank=True)),
                    ('light', models.JSONField(blank=True, default=dict)),
                ],
                options={
                    'db_table': 'leaderboard_problem',
                    'ordering': ['id'],
                },
            ),
        ]),
    ]
