"""The patch stage: the AST-guided patcher and the import checker."""
