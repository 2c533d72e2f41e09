"""Filter for the patch stage, over the plain-Python patch engine."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils"))
from ascend_grpo import ast_patch  # noqa: E402  pylint: disable=wrong-import-position


def patch_operations(operations, files_dir):
    """``{{ profile.operations | patch_operations(files_dir) }}``: content_from read from this package's files."""
    return ast_patch.resolve_content(operations or [], files_dir)


class FilterModule:
    def filters(self):
        return {"patch_operations": patch_operations}
