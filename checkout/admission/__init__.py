"""The sale day's admission queue: who is let in, in what order (rules.py), at the pace the shop
measures of itself (pace.py)."""
