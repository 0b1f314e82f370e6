"""Orders: made from carts, moved only by what their payments say (`rules`), and the reads of
orders and their payments that every feature shares (`selectors`)."""
