"""Stage 4: analyses to comparisons: snapshots, the diff between two versions, the model
matrix, accepted breaks, and the workspace that builds and caches them.
"""
