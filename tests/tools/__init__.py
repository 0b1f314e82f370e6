"""Tests of the developer tools in tools/ (the soak, the release check, the year of orders)."""
