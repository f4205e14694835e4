import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('accounts', '0001_initial'),
        ('catalogue', '0001_initial'),
        ('feedback', '0001_initial'),
        ('submissions', '0001_initial'),
    ]

    # State only: the foreign keys now name the apps' models; the columns and tables they point at are unchanged.
    operations = [
        migrations.SeparateDatabaseAndState(database_operations=[], state_operations=[
            migrations.AlterField(
                model_name='feedbackquota',
                name='submitter',
                field=models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='feedback_quota', to='accounts.submitter'),
            ),
            migrations.AlterField(
                model_name='feedbackrun',
                name='candidate',
                field=models.ForeignKey(blank=True, help_text='profile runs: the file profiled', null=True, on_delete=django.db.models.deletion.CASCADE, related_name='profile_runs', to='submissions.candidate'),
            ),
            migrations.AlterField(
                model_name='feedbackrun',
                name='problem',
                field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='catalogue.problem'),
            ),
            migrations.AlterField(
                model_name='feedbackrun',
                name='profile',
                field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='catalogue.hardwareprofile'),
            ),
            migrations.AlterField(
                model_name='feedbackrun',
                name='submitter',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='feedback_runs', to='accounts.submitter'),
            ),
            migrations.AlterField(
                model_name='feedbacksession',
                name='profile',
                field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='catalogue.hardwareprofile'),
            ),
            migrations.AlterField(
                model_name='feedbacksession',
                name='submission',
                field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='feedback_sessions', to='submissions.submission'),
            ),
            migrations.AlterField(
                model_name='feedbacksession',
                name='submitter',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='feedback_sessions', to='accounts.submitter'),
            ),
        ]),
    ]
