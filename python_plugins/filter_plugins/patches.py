"""Filter for the patch stage, over the plain-Python patch engine."""

from ascend_grpo import ast_patch


def patch_operations(operations, files_dir):
    """``{{ profile.operations | patch_operations(files_dir) }}``: content_from read from this package's files."""
    return ast_patch.resolve_content(operations or [], files_dir)


class FilterModule:
    def filters(self):
        return {"patch_operations": patch_operations}
