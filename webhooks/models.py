"""Models of the webhooks app."""
