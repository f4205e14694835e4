from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('catalogue', '0003_profile_nvlink'),
    ]

    operations = [
        migrations.AddField(
            model_name='hardwareprofile',
            name='shared_device',
            field=models.BooleanField(default=False, help_text='every rank on one GPU (pkb eval --shared-device): correctness only, never timed or ranked; a worker pinned to one GPU serves it'),
        ),
    ]
