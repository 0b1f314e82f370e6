"""An index of the mails whose text is still kept, by when they were sent: the blanking of
their text after SHOP_MAIL_KEEP_DAYS reads only those (checkout.retention.rules)."""

from django.db import migrations, models

from core.migration_ops import AddIndexOnline


class Migration(migrations.Migration):
    # Built CONCURRENTLY on PostgreSQL (the mails are written meanwhile), which cannot run
    # inside a transaction.
    atomic = False

    dependencies = [
        ("checkout", "0005_order_mail_text"),
    ]

    operations = [
        AddIndexOnline(
            model_name="ordermail",
            index=models.Index(
                condition=models.Q(("body", ""), _negated=True),
                fields=["sent_at"],
                name="order_mail_text_kept",
            ),
        ),
    ]
