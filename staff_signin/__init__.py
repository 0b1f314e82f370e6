"""Staff sign-in: the second factor (django-otp's TOTP and recovery-code devices), the admin site
that requires a verified session, the operator's enrolment windows and the sign-in ledger."""
