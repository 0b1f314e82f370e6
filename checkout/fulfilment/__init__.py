"""Fulfilment: what staff do with an order (ship, cancel, refund, refresh), checked first
(`rules`: no network) and done by the staff actions' task (`calls`: the provider)."""
