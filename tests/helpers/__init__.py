"""What the test folders share, each module named for what it holds: the live sandbox's
API and test cards (provider), its process (sandbox), the shop as shoppers drive it (shop),
pages read as trees (html), /metrics scraped (metrics), the broker's queued tasks (broker),
local servers and ports (servers), the shop's processes as production runs them
(processes), settings loaded under a chosen environment (settings), and small tools
(cache, database, paths, request_ids, threads, waiting). Rows written straight to the
database, and payments the live sandbox knows, are made by tests/factories.py."""
