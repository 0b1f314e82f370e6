"""The columns added to the payments table after it had rows get the database default their
fields declare, where a database took them before the migrations that added them declared it (a
release that does not know a column yet inserts payments without it); and the payments written
without a read schedule (by the release before it) an index by which the `payments-schedule`
beat task finds them, newest first."""

from django.db import migrations, models

from core.migration_ops import AddIndexOnline, KeepDatabaseDefault


class Migration(migrations.Migration):
    # The index is built CONCURRENTLY (a big table keeps taking writes meanwhile).
    atomic = False

    dependencies = [
        ("payments", "0014_admin_log_index"),
    ]

    operations = [
        KeepDatabaseDefault(model_name="payment", name="checks_done"),
        AddIndexOnline(
            model_name="payment",
            index=models.Index(
                condition=models.Q(("checks_from__isnull", True), ("provider_id__isnull", False)),
                fields=["-updated_at"],
                name="payment_unscheduled",
            ),
        ),
    ]
