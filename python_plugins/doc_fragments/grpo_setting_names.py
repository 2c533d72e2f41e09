"""The option every module takes whose messages name an input: the setting each option stands for in the calling
role, so the message names what the user sets (one text, in each such module's documentation)."""


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  setting_names:
    description:
      - The setting each option stands for in the calling role (option -> setting, for example
        C(repo) to C(assets_data_repo)). A message about an option names the setting it maps to, or the option itself
        when it maps to none, so one module shared by two stages names each stage's own setting.
    type: dict
    default: {}
"""
