"""Each mail keeps what it told the customer (subject and plain-text body), for staff, until
SHOP_MAIL_KEEP_DAYS after it was sent (checkout.retention.rules).

Both columns have a database default: the release before them inserts mails without them
(0009_database_defaults gives it to databases that took this migration before)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("checkout", "0004_late_payment_given_back"),
    ]

    operations = [
        migrations.AddField(
            model_name="ordermail",
            name="subject",
            field=models.CharField(
                blank=True, db_default="", default="", max_length=255, verbose_name="subject"
            ),
        ),
        migrations.AddField(
            model_name="ordermail",
            name="body",
            field=models.TextField(blank=True, db_default="", default="", verbose_name="text"),
        ),
    ]
