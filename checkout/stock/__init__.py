"""Stock: an order's items going back to stock, once each, and taken out of it again (`rules`)."""
