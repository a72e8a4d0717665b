import importlib

from django.db import migrations, models

# SQLite adds the column by rebuilding annotation_pair, which the pair and membership counter
# triggers name: they are dropped around the rebuild and put back (with a backfill) afterwards.
_pair_counters = importlib.import_module("annotation.migrations.0009_pair_counters")
_membership_counters = importlib.import_module("annotation.migrations.0012_membership_counters")


def _off(apps, schema_editor):
    _membership_counters.counters_off(apps, schema_editor)
    _pair_counters.counters_off(apps, schema_editor)


def _on(apps, schema_editor):
    _pair_counters.counters_on(apps, schema_editor)
    _membership_counters.counters_on(apps, schema_editor)


def _sqlite_only(step):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "sqlite":
            step(apps, schema_editor)

    return run


class Migration(migrations.Migration):

    dependencies = [
        ("annotation", "0022_recruitment_signing_and_duplicate_claims"),
    ]

    operations = [
        migrations.RunPython(_sqlite_only(_off), _sqlite_only(_on)),
        migrations.AddField(
            model_name="pair",
            name="catch_spec",
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.RunPython(_sqlite_only(_on), _sqlite_only(_off)),
    ]
