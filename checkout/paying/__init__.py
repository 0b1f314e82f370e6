"""Paying an order: the payment page (`rules`: an attempt stored and its create queued, its
outcome read from the shop's records) and a second charge given back (`calls`: the provider,
from tasks only)."""
