"""Mail to shoppers and staff (EMAIL_*).

Where mail goes and from whom. The demo prints it to the console; the production settings send
it over SMTP once `EMAIL_HOST` is set (`config/settings/production.py`).
"""

from __future__ import annotations

from config.settings.env import Production, env_str

EMAIL_BACKEND = env_str(
    "EMAIL_BACKEND",
    "django.core.mail.backends.console.EmailBackend",
    doc="Any Django mail backend, by its dotted path; the console one writes mail to the "
    "standard output (the demo's worker prints every mail there).",
)
DEFAULT_FROM_EMAIL = env_str(
    "DEFAULT_FROM_EMAIL",
    "pedidos@tienda.example",
    doc="The sender of the mails to shoppers (order confirmations and the rest).",
    production=Production.SHOULD_SET,
)
SERVER_EMAIL = env_str(
    "SERVER_EMAIL",
    DEFAULT_FROM_EMAIL,
    doc="The sender of the mails to staff (managers' warnings, error reports).",
    shown_default="`DEFAULT_FROM_EMAIL`",
)
