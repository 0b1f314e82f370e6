"""The admin's "Recent actions" (Django's LogEntry, newest first for the staff member) read from
an index rather than a sort of the whole admin log, which grows with every staff action."""

from typing import Any

from django.db import migrations

INDEX = "admin_log_user_time"


def add(apps: Any, schema_editor: Any) -> None:
    online = "CONCURRENTLY " if schema_editor.connection.vendor == "postgresql" else ""
    schema_editor.execute(
        f"CREATE INDEX {online}IF NOT EXISTS {INDEX} ON django_admin_log (user_id, action_time DESC)"
    )


def drop(apps: Any, schema_editor: Any) -> None:
    schema_editor.execute(f"DROP INDEX IF EXISTS {INDEX}")


class Migration(migrations.Migration):
    # Built CONCURRENTLY on PostgreSQL: the admin keeps writing its log meanwhile.
    atomic = False

    dependencies = [
        ("payments", "0013_dashboard_indexes"),
        ("admin", "0003_logentry_add_action_flag_choices"),
    ]

    operations = [migrations.RunPython(add, drop, elidable=False)]
