"""Two options a module takes only to name them in a message (the package index's offline wheelhouse and the host's
workspace), as the setting the calling role maps them to: one text for each module that names them."""


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  wheelhouse:
    description:
      - Not read (the offline wheelhouse is C(site.wheelhouse)). Only named, in a message about the package index,
        as the setting I(setting_names) maps it to.
    type: raw
  workspace_host:
    description:
      - Not read. Only named, in a message about a full disk, as the setting I(setting_names) maps it to (where the
        workspace is on the host, to point at a larger disk).
    type: raw
"""
