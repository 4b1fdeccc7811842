"""Stage 2: SGLang source files to facts (the tree-sitter queries run here, and only here),
and the fact store that caches them by content.
"""
