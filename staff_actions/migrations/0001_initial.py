"""StaffAction, moved from the payments app with its table (`payments_staffaction`), which
exists already: the migration state only."""

import django.core.serializers.json
import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('contenttypes', '0002_remove_content_type_name'),
        ('payments', '0017_delete_staffaction'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='StaffAction',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('kind', models.CharField(max_length=40, verbose_name='kind')),
                        ('target_id', models.PositiveBigIntegerField(blank=True, null=True, verbose_name='object id')),
                        ('reference', models.CharField(blank=True, max_length=64, verbose_name='reference')),
                        ('params', models.JSONField(blank=True, default=dict, encoder=django.core.serializers.json.DjangoJSONEncoder, verbose_name='parameters')),
                        ('idempotency_key', models.CharField(max_length=64, unique=True, verbose_name='idempotency key')),
                        ('language', models.CharField(max_length=16, verbose_name='language')),
                        ('state', models.CharField(choices=[('queued', 'Queued'), ('running', 'In progress'), ('done', 'Done'), ('failed', 'Failed')], default='queued', max_length=16, verbose_name='state')),
                        ('runs', models.PositiveSmallIntegerField(default=0, verbose_name='runs')),
                        ('ok', models.BooleanField(blank=True, null=True, verbose_name='succeeded')),
                        ('result', models.TextField(blank=True, verbose_name='result')),
                        ('created_at', models.DateTimeField(default=django.utils.timezone.now, verbose_name='created at')),
                        ('queued_at', models.DateTimeField(default=django.utils.timezone.now, verbose_name='queued at')),
                        ('started_at', models.DateTimeField(blank=True, null=True, verbose_name='started at')),
                        ('finished_at', models.DateTimeField(blank=True, null=True, verbose_name='finished at')),
                        ('shown_at', models.DateTimeField(blank=True, null=True, verbose_name='shown at')),
                        ('actor', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL, verbose_name='who')),
                        ('payment', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='staff_actions', to='payments.payment', verbose_name='payment')),
                        ('target_type', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='contenttypes.contenttype', verbose_name='on')),
                    ],
                    options={
                        'verbose_name': 'staff action',
                        'verbose_name_plural': 'staff actions',
                        'db_table': 'payments_staffaction',
                        'ordering': ['created_at', 'id'],
                        'indexes': [models.Index(condition=models.Q(('state__in', ['queued', 'running'])), fields=['queued_at'], name='staff_action_open'), models.Index(condition=models.Q(('shown_at__isnull', True), ('state__in', ['done', 'failed'])), fields=['actor', 'finished_at'], name='staff_action_untold')],
                        'constraints': [models.UniqueConstraint(condition=models.Q(('state__in', ['queued', 'running'])), fields=('target_type', 'target_id'), name='one_staff_action_in_flight_per_object'), models.UniqueConstraint(condition=models.Q(('state__in', ['queued', 'running'])), fields=('payment',), name='one_staff_action_in_flight_per_payment')],
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
