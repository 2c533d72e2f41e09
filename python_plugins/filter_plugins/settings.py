"""Filter: the problems of a stage's settings, checked before the stage acts (names that become folders,
environment variable names, whole numbers), over the plain-Python engine."""

from ascend_grpo import settings


def setting_problems(checks):
    """``{{ [['name', 'grpo_train_experiment', grpo_train_experiment], ['count', 'x', x, 1]] | setting_problems }}``:
    one line per problem, naming the setting and the fix; [] when all hold."""
    return settings.problems(checks)


class FilterModule:
    def filters(self):
        return {"setting_problems": setting_problems}
