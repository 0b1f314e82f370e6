"""The payments' read schedule (payments.rereading.rules). `checks_done` has a database default:
the release before the schedule inserts payments without it. The payments written before the
schedule get theirs from the `payments-schedule` beat task, in small batches, never in one
statement over the whole table inside this migration."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('payments', '0010_staff_actions'),
    ]

    operations = [
        migrations.AddField(
            model_name='payment',
            name='checks_done',
            field=models.PositiveSmallIntegerField(db_default=0, default=0, verbose_name='checks without news'),
        ),
        migrations.AddField(
            model_name='payment',
            name='checks_from',
            field=models.DateTimeField(blank=True, null=True, verbose_name='checks counted from'),
        ),
        migrations.AddField(
            model_name='payment',
            name='next_check_at',
            field=models.DateTimeField(blank=True, null=True, verbose_name='next check'),
        ),
    ]
