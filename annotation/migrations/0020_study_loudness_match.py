import importlib

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import migrations, models
from django.db.models import F, Q

# SQLite rebuilds the study table to add columns; the pair counter triggers (0012) name that
# table, so they are dropped around the rebuild and restored (as in 0015 and 0017).
_counters = importlib.import_module("annotation.migrations.0012_membership_counters")


def _sqlite_counters_off(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        _counters.counters_off(apps, schema_editor)


def _sqlite_counters_on(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        _counters.counters_on(apps, schema_editor)


def clips_measured_at_ingest(apps, schema_editor):
    # Clips ingested since 0019 carry their figures; those with none (older clips, or silence) are
    # left for `manage.py backfill_loudness`, which tells silence from never measured.
    Clip = apps.get_model("annotation", "Clip")
    Clip.objects.filter(Q(loudness_lufs__isnull=False) | Q(true_peak_dbtp__isnull=False), loudness_measured_at__isnull=True).update(
        loudness_measured_at=F("created_at")
    )


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0019_clip_loudness"),
    ]

    operations = [
        migrations.RunPython(_sqlite_counters_off, _sqlite_counters_on),
        # Studies that exist keep playing clips as stored: the column is added with False for them,
        # then new studies get True from the model.
        migrations.AddField(
            model_name="study",
            name="loudness_match",
            field=models.BooleanField(
                default=False, help_text="Play every clip at the same loudness (BS.1770), so the louder clip does not win for being louder."
            ),
        ),
        migrations.AlterField(
            model_name="study",
            name="loudness_match",
            field=models.BooleanField(
                default=True, help_text="Play every clip at the same loudness (BS.1770), so the louder clip does not win for being louder."
            ),
        ),
        migrations.AddField(
            model_name="study",
            name="loudness_target_lufs",
            field=models.FloatField(
                default=-23.0,
                help_text="Loudness every clip is brought to, in LUFS; -23 is EBU R128's programme level.",
                validators=[MinValueValidator(-40.0), MaxValueValidator(-10.0)],
            ),
        ),
        migrations.AddField(
            model_name="study",
            name="loudness_changed_at",
            field=models.DateTimeField(blank=True, editable=False, null=True),
        ),
        migrations.RunPython(_sqlite_counters_on, _sqlite_counters_off),
        migrations.AddField(
            model_name="clip",
            name="loudness_measured_at",
            field=models.DateTimeField(blank=True, help_text="When the figures above were measured; empty: never.", null=True),
        ),
        migrations.RunPython(clips_measured_at_ingest, migrations.RunPython.noop),
    ]
