"""Settings shared by every environment; everything that varies comes from the environment.

One topic file for each prefix of the settings and their environment variables, listed here in
the order docs/settings.md follows (the order is for people: no two files set the same name, and
each imports by name what it needs of another). Every variable is described where it is read;
docs/settings.md, generated from these files by `python -m tools.settings_reference`, lists them,
the few a production deploy must set first.
"""

# ruff: noqa: I001 (the topic files in the order above, not in the alphabet's)

# Django itself: the secret key, the hosts, the apps and middleware, templates, languages,
# static files, the JSON endpoints (DJANGO_*).
from config.settings.framework import *

# The database and how migrations take their locks (DATABASE_*, MIGRATIONS_*).
from config.settings.database import *

# Redis, the cache, Celery's queues and routes, and the one table of what beat runs (REDIS_*,
# CACHE_*, CELERY_*).
from config.settings.queues import *

# The shop's own: its name and address, working files, managers, the sale day's admission,
# installments, abuse limits, reservations and retention (SHOP_*).
from config.settings.shop import *

# The card payments service: its address and credentials, the webhook token, captures, the
# card form, timeouts, the read budget and the writes' pace (PAYMENTS_*).
from config.settings.payments import *

# The provider's notifications: the receiver, the relay, retries, retention (WEBHOOKS_*).
from config.settings.webhooks import *

# Staff's sign-in with a second factor, and the admin (STAFF_*, ADMIN_*).
from config.settings.staff import *

# Facturas and the accountant's exports (BOOKS_*).
from config.settings.books import *

# Mail to shoppers and staff (EMAIL_*).
from config.settings.mail import *

# Request ids, logs, error reports and metrics (LOG_*, SENTRY_*, METRICS_*).
from config.settings.observability import *
