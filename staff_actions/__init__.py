"""Staff actions that wait on the provider: asked in the admin, recorded, run once by a task,
and told to whoever asked. The apps only declare theirs (`staff_actions.kinds.register`)."""
