"""Sentences the shop writes into its records in English and staff read in their language.

A ledger entry is a financial record: what the shop wrote in it stays as it was written. The
shop writes its sentences in English with named parameters (`%(name)s`), and reads them back
at display time: a stored text is recognised by its sentence (in any of the shop's languages,
for the entries written already translated), its parameters are taken out and read (a status
becomes its label), and the sentence is given in the active language.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

from django.conf import settings
from django.utils import translation
from django.utils.translation import gettext

PARAMETER = re.compile(r"%\((\w+)\)s")

# How a parameter reads in the active language; None when the value cannot be this parameter
# (the text is then not this sentence).
Reader = Callable[[str], str | None]


class Sentence:
    """One sentence: `text` is both the stored form and the msgid (mark it with gettext_noop
    where it is defined, so that makemessages finds it); `readers` say how parameters read."""

    def __init__(self, text: str, **readers: Reader) -> None:
        self.text = text
        self.readers = readers

    def __call__(self, **params: object) -> str:
        """The sentence as it is stored."""
        return self.text % params

    def read(self, stored: str) -> str | None:
        """`stored` in the active language if it is this sentence (as written in any of the
        shop's languages); None otherwise."""
        for language in [None, *(code for code, _name in settings.LANGUAGES)]:
            found = pattern(self.text, language).fullmatch(stored)
            if found is None:
                continue
            shown = {}
            for name, value in found.groupdict().items():
                read = self.readers.get(name, str)(value)
                if read is None:
                    break
                shown[name] = read
            else:
                return gettext(self.text) % shown
        return None


@lru_cache(maxsize=256)
def pattern(text: str, language: str | None) -> re.Pattern[str]:
    """The regular expression of `text` as written in `language` (None: as stored)."""
    if language is not None:
        with translation.override(language):
            text = gettext(text)
    parts = PARAMETER.split(text)
    expression = "".join(
        f"(?P<{part}>.+?)" if i % 2 else re.escape(part.replace("%%", "%"))
        for i, part in enumerate(parts)
    )
    return re.compile(expression, re.S)


def read_first(sentences: list[Sentence], stored: str) -> str | None:
    """`stored` read by the first of `sentences` that it is (the most specific first)."""
    for sentence in sentences:
        read = sentence.read(stored)
        if read is not None:
            return read
    return None
