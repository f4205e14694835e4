import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('accounts', '0001_initial'),
        ('jobs', '0001_initial'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    # State only: the table was created by leaderboard's migrations 0001-0004 (db_table keeps its name); this app
    # takes the model over without touching the database.
    operations = [
        migrations.SeparateDatabaseAndState(database_operations=[], state_operations=[
            migrations.AddField(
                model_name='quotacharge',
                name='job',
                field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='charges', to='jobs.evaluationjob'),
            ),
            migrations.AddField(
                model_name='submitter',
                name='user',
                field=models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='submitter', to=settings.AUTH_USER_MODEL),
            ),
            migrations.AddField(
                model_name='quotacharge',
                name='submitter',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='charges', to='accounts.submitter'),
            ),
            migrations.AddField(
                model_name='apitoken',
                name='submitter',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='tokens', to='accounts.submitter'),
            ),
            migrations.AddIndex(
                model_name='quotacharge',
                index=models.Index(fields=['submitter', 'created_at'], name='charge_submitter_time'),
            ),
            migrations.AddConstraint(
                model_name='quotacharge',
                constraint=models.UniqueConstraint(fields=('job', 'run'), name='one_charge_per_run'),
            ),
        ]),
    ]
