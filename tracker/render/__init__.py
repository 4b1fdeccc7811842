"""Stage 5: plain data to documents: text, Markdown and JSON renders (jinja2 templates),
SARIF, the facts view, graph exports and the HTML report.
"""
