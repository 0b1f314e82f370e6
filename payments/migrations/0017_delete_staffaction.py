"""StaffAction moves to the staff_actions app; its table (`payments_staffaction`) stays where it
is, untouched, so this changes the migration state only."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('payments', '0016_ledger_entry_base'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name='StaffAction')],
            database_operations=[],
        ),
    ]
