"""The one shape of an engine's refusal or failure that a module passes on to ``fail_json``."""


class StageFailure(Exception):
    """A refusal or a failure for a module to report: ``msg`` for the person (what, naming the setting and the
    fix), ``result`` the values the module returns with it (what was found or done before it; may be empty).
    Each engine names its own subclass for what it refuses."""

    def __init__(self, msg, result=None):
        super().__init__(msg)
        self.msg, self.result = msg, dict(result or {})
