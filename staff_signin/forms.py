"""The code page's form: one field, a 6-digit code or a recovery code."""

from __future__ import annotations

from django import forms

from staff_signin import words


class CodeForm(forms.Form):
    code = forms.CharField(
        label=words.CODE_LABEL,
        help_text=words.CODE_HELP,
        max_length=32,
        strip=True,
        error_messages={"required": words.CODE_BLANK},
        widget=forms.TextInput(
            attrs={
                "autocomplete": "one-time-code",
                "inputmode": "numeric",
                "autocapitalize": "none",
                "spellcheck": "false",
                "autofocus": True,
            }
        ),
    )


class AuthenticatorCodeForm(CodeForm):
    """A code from the authenticator app only (enrolling, making new recovery codes)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.fields["code"].help_text = ""
        self.fields["code"].max_length = 8
