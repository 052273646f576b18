"""``python -m lab.exercises``: every question with its instructor answer (for the instructor)."""

from lab.exercises import main

main()
