"""The ledgers' model base: an entry is written once, then never changed or deleted, since it is
the record of what happened. A payment's ledger (`PaymentEvent`) and an order's (`OrderEvent`)
are both `LedgerEntry`: what happened (`kind`, each ledger its own choices), in words (`message`),
who did it (`actor`, none for the shop itself: the one `Actor` type every app's changes take)
and when."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

# Who made a change, as the code that makes it is told: a signed-in user (staff), an anonymous
# request's user, or None (the shop itself). A ledger keeps only a signed-in one as its `actor`.
Actor = AbstractBaseUser | AnonymousUser | None


class AppendOnlyEntry(models.Model):
    """An entry of a ledger (a payment's, an order's): written once, then never changed or
    deleted, since it is the record of what happened."""

    class Meta:
        abstract = True

    def save(self, *args: object, **kwargs: object) -> None:
        if self.pk is not None:
            raise ValueError(f"{self._meta.verbose_name_plural} are append-only")
        super().save(*args, **kwargs)  # type: ignore[arg-type]

    def delete(self, *args: object, **kwargs: object) -> tuple[int, dict[str, int]]:
        raise ValueError(f"{self._meta.verbose_name_plural} are append-only")


class LedgerEntry(AppendOnlyEntry):
    """The fields every ledger's entry has; each ledger adds its `kind` (with its own choices)
    and what the entry is of."""

    message = models.CharField(_("details"), max_length=500, blank=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("who"),
    )
    created_at = models.DateTimeField(_("when"), default=timezone.now)

    class Meta:
        abstract = True
        ordering = ["created_at", "id"]
