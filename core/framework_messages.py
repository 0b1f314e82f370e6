"""The REST framework's and Django's own messages that reach shoppers, given in the shop's voice.

Their Spanish catalogues speak to the reader as *usted* ("Asegúrese de que...", "Introduzca...");
the shop speaks *tú*. Django reads the catalogues of LOCALE_PATHS before those of the apps and
its own, so a message translated in `locale/es` is shown the shop's way wherever it comes from.
Each is marked here with the framework's exact msgid, so that `makemessages` keeps it in the
shop's catalogue; nothing needs to import this module.

Only what can reach a shopper is here:

- the field errors of the JSON bodies (`checkout.serializers`: text, pattern and integer fields,
  with the options they use: required, null, blank, max_length, max_value, min_value);
- the framework's exceptions that `core.api.exception_handler` puts into the body: not
  found, method not allowed, unsupported media type, and permission denied (from Django's
  `PermissionDenied`). The parser's errors are the shop's own (`core.parsers`); the endpoints
  authenticate no one, check no permission class and throttle nothing (the shop's own limits
  answer 429), so the framework's authentication and throttling messages cannot be sent;
- Django's errors that the storefront's forms keep (`checkout.forms`: email, choice, length).
"""

from __future__ import annotations

from django.utils.translation import gettext_noop, ngettext_lazy

# rest_framework.fields and rest_framework.validators; Django's validators for null characters.
FIELD_ERRORS = [
    gettext_noop("This field is required."),
    gettext_noop("This field may not be null."),
    gettext_noop("This field may not be blank."),
    gettext_noop("Ensure this field has no more than {max_length} characters."),
    gettext_noop("This value does not match the required pattern."),
    gettext_noop("A valid integer is required."),
    gettext_noop("Ensure this value is less than or equal to {max_value}."),
    gettext_noop("Ensure this value is greater than or equal to {min_value}."),
    gettext_noop("String value too large."),
    gettext_noop("Surrogate characters are not allowed: U+{code_point:X}."),
    gettext_noop("Null characters are not allowed."),
]

# rest_framework.exceptions, as core.api.exception_handler passes them into `message`.
EXCEPTIONS = [
    gettext_noop("Not found."),
    gettext_noop('Method "{method}" not allowed.'),
    gettext_noop('Unsupported media type "{media_type}" in request.'),
    gettext_noop("You do not have permission to perform this action."),
]

# django.forms and django.core.validators, in the checkout and "Mis pedidos" forms.
FORM_ERRORS = [
    gettext_noop("Enter a valid email address."),
    gettext_noop("Select a valid choice. %(value)s is not one of the available choices."),
]
MAX_LENGTH = ngettext_lazy(
    "Ensure this value has at most %(limit_value)d character (it has %(show_value)d).",
    "Ensure this value has at most %(limit_value)d characters (it has %(show_value)d).",
    "limit_value",
)
