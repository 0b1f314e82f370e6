"""Settings shared by every environment; everything that varies comes from the environment.
Read in order, each part building on the one before: the framework, Redis and Celery (queues),
the shop's own, and what the shop tells about itself (observability)."""

from config.settings.observability import *
