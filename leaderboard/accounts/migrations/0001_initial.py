import django.utils.timezone
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
                name='ApiToken',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('name', models.CharField(max_length=100)),
                    ('prefix', models.CharField(max_length=16, unique=True)),
                    ('digest', models.CharField(max_length=64)),
                    ('scopes', models.JSONField(default=list)),
                    ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                    ('expires_at', models.DateTimeField()),
                    ('last_used_at', models.DateTimeField(blank=True, null=True)),
                    ('revoked_at', models.DateTimeField(blank=True, null=True)),
                ],
                options={
                    'db_table': 'leaderboard_apitoken',
                    'ordering': ['-created_at'],
                },
            ),
            migrations.CreateModel(
                name='QuotaCharge',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('run', models.PositiveIntegerField(default=1)),
                    ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                    ('refunded_at', models.DateTimeField(blank=True, null=True)),
                ],
                options={
                    'db_table': 'leaderboard_quotacharge',
                },
            ),
            migrations.CreateModel(
                name='Submitter',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('display_name', models.CharField(blank=True, max_length=100)),
                    ('quota_daily', models.PositiveIntegerField(blank=True, null=True)),
                    ('quota_total', models.PositiveIntegerField(blank=True, null=True)),
                    ('quota_concurrent', models.PositiveIntegerField(blank=True, null=True)),
                    ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ],
                options={
                    'db_table': 'leaderboard_submitter',
                },
            ),
        ]),
    ]
