"""A slow step run with Ansible's ``async`` and ``poll`` (the deps stage's install, the container stage's image pull,
the eval stage's OpenCompass install), bounded by a setting in minutes: whether its result is a time-out, and the
message that names the setting to raise.

Ansible ends such a step in one of two ways when its time is up (ansible-core's task executor and async_wrapper):
the job on the host is killed at the limit and its status reads ``Timeout exceeded``; or the controller counts its
polls to the limit first and returns ``async task did not complete within the requested time - <N>s``. Either
is a time-out; any other failure is the step's own and keeps its message.

Standard library only (the controller's filters use it).
"""

# ansible-core: lib/ansible/modules/async_wrapper.py (the job killed at its limit) and
# lib/ansible/executor/task_executor.py, TaskExecutor._poll_async_result (the polls counted out first)
KILLED_AT_LIMIT = "Timeout exceeded"
POLLED_OUT = "async task did not complete within the requested time"


def timed_out(result):
    """Whether ``result`` (a task's registered result) is an async step's time-out, not a failure of its own.

    Told by the shape Ansible gives each (the killed job's ``child_pid``, the counted-out polls' ``async_result``),
    not by ``failed``: the step's ``failed_when`` that lets a time-out by clears that in what it registers."""
    if not isinstance(result, dict):
        return False
    msg = str(result.get("msg") or "").strip()
    return ((msg == KILLED_AT_LIMIT and "child_pid" in result)
            or (msg.startswith(POLLED_OUT) and "async_result" in result))


def message(what, setting, minutes, host, found="", then=""):
    """The refusal of a step that ran out of time: ``what`` did not finish on ``host`` within ``minutes``, the
    setting (``setting``) to raise, what was found after it (``found``: a sentence, or empty) and what else a user
    can do (``then``: a sentence, or empty)."""
    text = "%s did not finish on %s within %s minutes (%s) and was stopped." % (what, host, minutes, setting)
    if found:
        text += " " + found.strip().rstrip(".") + "."
    text += " Raise %s (a slow link needs more time) and run again." % setting
    if then:
        text += " " + then.strip().rstrip(".") + "."
    return text


def message_if_timed_out(result, what, setting, minutes, host, found="", then=""):
    """:func:`message` when ``result`` is a time-out (:func:`timed_out`), else ``""``."""
    return message(what, setting, minutes, host, found, then) if timed_out(result) else ""
