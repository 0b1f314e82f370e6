"""Reading payments again: refresh, schedule, budget, reconciliation (`rules`: no network;
`calls`: the provider, from tasks only)."""
