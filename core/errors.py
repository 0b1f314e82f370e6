"""What every app's errors share: a refusal, whose message is safe to show to the person who
asked (a shopper, a staff member), in their language."""

from __future__ import annotations


class Refusal(Exception):
    """Something the shop refused or could not do, said in words safe to show."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
