"""`python -m tracker` runs the command-line interface."""

from tracker.cli import main

main()
