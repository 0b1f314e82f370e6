"""Staff actions that wait on the provider, asked in the admin and done by a task.

The admin confirms and checks an action (permission, amounts, state), then records it as a
`StaffAction` (claiming the payment it moves, so that of two staff members pressing capture and
cancel at once exactly one wins, at once) and queues its task once committed; the page says the
action is in progress and reloads when it is done, and the outcome is said once to whoever
asked, in their language. The provider is called by the task only.

- `kinds`: the registry of action kinds (each app registers its own; payments never imports
  checkout) and the outcome a kind's run returns;
- `requests`: recording an action and queueing its task;
- `runs`: running an action (the task's service) and the sweep that queues lost ones again;
- `pages`: the admin side (asking, the in-progress state, the outcome said once).
"""
