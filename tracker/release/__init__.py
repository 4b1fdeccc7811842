"""Stage 6: what a release needs: issue drafts and their publishing, the watch loop,
changelog, triage and fix patches.
"""
