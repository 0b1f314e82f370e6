"""Retention: what the shop keeps of its own data (mails' text, browser sessions), and for how
long (`rules`)."""
