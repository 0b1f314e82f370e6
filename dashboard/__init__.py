"""The owner's dashboard on the admin's home page: what was sold, what waits, what needs a look.
It reads every app; no app reads it."""
