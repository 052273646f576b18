"""The app served to a room of attendees: who may come in and what they may ask (door.py), the line for heavy
work (line.py), the budget a run must fit before anything is built (budget.py), the shared cache of step data
(cache.py) and the janitor that frees what sessions left (janitor.py). No module here imports a UI module
(lab/app/ui.py, controls, loading, stepping) or gradio's components."""
