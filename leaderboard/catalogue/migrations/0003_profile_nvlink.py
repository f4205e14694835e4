from django.db import migrations, models


def h200x8_needs_nvlink(apps, schema_editor):
    """The 8-GPU profile has always meant one NVLink host; rows made before the field say so now (staff's own
    profiles keep the default and are theirs to set)."""
    HardwareProfile = apps.get_model("catalogue", "HardwareProfile")
    HardwareProfile.objects.filter(slug="gpu-h200x8").update(nvlink=True)


class Migration(migrations.Migration):

    dependencies = [
        ('catalogue', '0002_timing_pairs_help_text'),
    ]

    operations = [
        migrations.AddField(
            model_name='hardwareprofile',
            name='nvlink',
            field=models.BooleanField(default=False, help_text='its GPUs must be linked by NVLink: a worker whose GPUs are not refuses to start'),
        ),
        migrations.RunPython(h200x8_needs_nvlink, migrations.RunPython.noop),
    ]
