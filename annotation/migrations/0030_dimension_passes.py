import importlib

from django.db import migrations, models

# SQLite adds the columns by rebuilding the study, assignment and judgment tables, which the pair and membership
# counter triggers name: they are dropped around the rebuilds and put back (with a backfill) afterwards, as in 0023.
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
        ("annotation", "0029_adjudication"),
    ]

    operations = [
        migrations.RunPython(_sqlite_only(_off), _sqlite_only(_on)),
        migrations.AddField(
            model_name="assignment",
            name="first_pass",
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.AddField(
            model_name="judgment",
            name="passes",
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.AddField(
            model_name="study",
            name="dimension_passes",
            field=models.CharField(
                choices=[("together", "Together: both questions on one screen"), ("separate", "Separate screens: instruction following first, then musicality")],
                default="together",
                help_text="Ask instruction following and musicality on one screen, or on two consecutive screens of the same pair.",
                max_length=8,
            ),
        ),
        migrations.RunPython(_sqlite_only(_on), _sqlite_only(_off)),
    ]
