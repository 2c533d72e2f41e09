"""Filter: the problems of a stage's settings, checked before the stage acts (names that become folders,
environment variable names, whole numbers), over the plain-Python engine."""

from ascend_grpo import settings


def setting_problems(checks):
    """``{{ [['name', 'grpo_train_experiment', grpo_train_experiment], ['count', 'x', x, 1]] | setting_problems }}``:
    one line per problem, naming the setting and the fix; [] when all hold."""
    return settings.problems(checks)


def shell_exports(mapping):
    """``{{ env | shell_exports }}``: ``export KEY=value`` lines, values quoted, a key that is no variable name
    refused."""
    from ansible.errors import AnsibleFilterError

    try:
        return settings.shell_exports(mapping)
    except ValueError as err:
        raise AnsibleFilterError(str(err)) from None


def shell_word(value):
    """``{{ value | shell_word }}``: one quoted shell word (as quote), a NUL byte refused."""
    from ansible.errors import AnsibleFilterError

    try:
        return settings.shell_word(value)
    except ValueError as err:
        raise AnsibleFilterError(str(err)) from None


def shell_comment(text):
    """``{{ value | shell_comment }}``: a value safe on a comment line (no newline can end the comment)."""
    return settings.shell_comment(text)


def docker_network_problems(info, setting, name):
    """``{{ _seen | docker_network_problems('npu_container_network', npu_container_network) }}``: [] when the network
    a container joins exists (or is one every engine has), else one problem naming the setting and the fix."""
    problem = settings.docker_network_problem(setting, name, info)
    return [problem] if problem else []


_KNOWN = {}


def unknown_settings(names):
    """``{{ hostvars[inventory_hostname].keys() | unknown_settings }}``: a problem for each variable set with one of
    our prefixes that no stage reads (a misspelt setting was silently ignored), with the closest setting."""
    import os

    if not _KNOWN:
        _KNOWN.update(settings.project_names(os.path.dirname(os.path.dirname(os.path.dirname(
            os.path.abspath(__file__))))))
    return settings.unknown_settings(list(names), _KNOWN)


def user_set_internal(names):
    """``{{ names | user_set_internal }}``: a problem for each name the package sets itself (a stage's fact, a
    derived option) among ``names``, the variables the inventory and -e set, before any task set one."""
    unknown_settings([])  # loads _KNOWN
    return settings.user_set_internal(list(names), _KNOWN)


class FilterModule:
    def filters(self):
        return {"setting_problems": setting_problems, "shell_exports": shell_exports, "shell_comment": shell_comment,
                "shell_word": shell_word, "docker_network_problems": docker_network_problems,
                "unknown_settings": unknown_settings, "user_set_internal": user_set_internal}
