"""The columns added to tables that already had rows get the database default their fields
declare, where a database took them before the migrations that added them declared it: a
release that does not know a column yet inserts rows without it."""

from django.db import migrations

from core.migration_ops import KeepDatabaseDefault


class Migration(migrations.Migration):
    dependencies = [
        ("checkout", "0008_dashboard_indexes"),
    ]

    operations = [
        KeepDatabaseDefault(model_name="ordermail", name="subject"),
        KeepDatabaseDefault(model_name="ordermail", name="body"),
    ]
