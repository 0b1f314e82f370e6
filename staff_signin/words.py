"""What the sign-in pages, mails and command say, in one place (Spanish and English: locale/)."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _

CODE_LABEL = _("Code")
CODE_HELP = _("The 6 digits your authenticator app shows, or one of your recovery codes.")
CODE_WRONG = _("That code is not right, or it was already used. Try the code your app shows now.")
CODE_WAIT = _(
    "Too many wrong codes in a row: wait %(seconds)s seconds, then type the code your app shows."
)
CODE_BLANK = _("Type the code your authenticator app shows.")
NO_SECOND_FACTOR = _(
    "This account has no second factor yet, and no enrolment is open for it. Ask the shop's "
    "operator to open one (manage.py staff_second_factor open)."
)
SIGN_IN_AGAIN = _("Sign in again: your password was accepted too long ago.")
ENROLLED = _("Your authenticator app is set up. Keep your recovery codes somewhere safe.")

RECOVERY_USED_SUBJECT = _("%(username)s signed in with a recovery code")
RECOVERY_USED_BODY = _(
    "The staff account %(username)s signed in to the admin with one of its recovery codes on "
    "%(when)s from %(address)s. Each code works once.\n\n"
    "If it was not them, ask the shop's operator to reset the account's second factor at once "
    "(manage.py staff_second_factor reset %(username)s)."
)
GUESSING_SUBJECT = _("Codes are being guessed for %(username)s")
GUESSING_BODY = _(
    "%(count)s wrong codes were typed for the staff account %(username)s within an hour, the "
    "last on %(when)s from %(address)s. Its password is known to whoever typed them: change "
    "it, and read the sign-in ledger in the admin."
)
