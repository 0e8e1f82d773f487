"""``python -m goodput_sim``: the command line."""

from goodput_sim.cli import main

main()
