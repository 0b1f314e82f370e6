"""Mails to the shopper: which are due (`selectors`), created once and queued (`rules`), and sent
to the mail server (`calls`, from tasks only)."""
