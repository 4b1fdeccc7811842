"""Stage 2: SGLang source files to facts (tree-sitter queries run here and only here), and the fact store."""
