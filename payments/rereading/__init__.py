"""Reading payments again: refresh, schedule, budget, reconciliation, expiring authorizations
(`rules`: no network; `selectors`: reads only; `calls`, `expiry_calls`: the provider, from tasks
only)."""
