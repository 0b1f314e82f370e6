"""Models of the checkout app."""
