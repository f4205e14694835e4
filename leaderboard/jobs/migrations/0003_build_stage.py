from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('jobs', '0002_leased_work_help_text'),
    ]

    operations = [
        migrations.AddField(
            model_name='evaluationjob',
            name='build_status',
            field=models.CharField(blank=True, choices=[('', 'no build stage'), ('queued', 'waiting for its build'), ('building', 'building'), ('built', 'built before its run'), ('compile_error', 'compile error, found by the build stage'), ('nothing_built', 'nothing to build'), ('unreached', 'built in its run: the stage could not reach the build'), ('skipped', 'no compile call in the file'), ('infra_error', 'built in its run: the build stage failed')], default='', max_length=16),
        ),
        migrations.AddField(
            model_name='evaluationjob',
            name='build_report',
            field=models.JSONField(blank=True, default=dict, help_text="the build stage's report (pkb prebuild)"),
        ),
    ]
