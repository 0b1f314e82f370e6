"""Reservations: an order holds its items for SHOP_RESERVATION_MINUTES, then expires if it is
still unpaid (`rules`)."""
