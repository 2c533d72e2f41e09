"""The option every module that names a stage to run first takes: the inventory the user ran with, which the
command in its message carries (one text, in every module's documentation through extends_documentation_fragment)."""


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  inventory:
    description:
      - The C(-i) words of the inventory the user ran with (roles/grpo_common's C(grpo_common_inventory_args)), which
        the command in a message naming the stage to run first carries. Empty, a placeholder.
    type: str
    default: ""
"""
