"""Two partial indexes: the notifications whose processing finished, by when (their deletion
after WEBHOOKS_KEEP_DAYS, webhooks.rules.webhooks_prune), and those given up on while the
provider could not be reached, by when (the relay's retries: the failed ones left for staff are
never read)."""

from django.db import migrations, models

from core.migration_ops import AddIndexOnline


class Migration(migrations.Migration):
    # Built CONCURRENTLY on PostgreSQL: the receiver goes on storing notifications meanwhile.
    atomic = False

    dependencies = [
        ("webhooks", "0002_verbose_names"),
    ]

    operations = [
        AddIndexOnline(
            model_name="webhookevent",
            index=models.Index(
                condition=models.Q(("state__in", ["processed", "unmatched"])),
                fields=["processed_at"],
                name="webhook_finished",
            ),
        ),
        AddIndexOnline(
            model_name="webhookevent",
            index=models.Index(
                condition=models.Q(
                    ("last_error__startswith", "Gave up after retries: "), ("state", "failed")
                ),
                fields=["processed_at"],
                name="webhook_given_up",
            ),
        ),
    ]
