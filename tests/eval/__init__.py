"""``make eval``: how well a model answers Node-RED questions (issue 38). The task set is ``tasks.yaml``, expanded by
:mod:`tests.eval.tasks`, graded by :mod:`tests.eval.graders`, run through the real service by :mod:`tests.eval.run`."""
