"""``lab.views.explore(trace)``: a step slider (with play) and a view picker over the same figures as the app,
inside Jupyter, on the notebook's widget library (ipywidgets)::

    from lab.views import explore
    explore(trace)                     # the block table at step 0
    explore(trace, "drafts", step=20)

Each change redraws the view at that step (a pure function of the trace, as everywhere), the headline
with the three eras and the view's note above and below it.
"""

from __future__ import annotations

from lab.views.common import as_figure, check_step
from lab.views.eras import headline_html
from lab.views.render import WORDS_CSS, note_html


def explore_views(trace, views: dict, view: str = "block_table", step: int = 0):
    """An ipywidgets box over ``views`` (lab.views.ALL_VIEWS: name -> (label, spec function, note)):
    play, step slider and view picker above the headline, the figure, the note. ``box.lab_state()``
    gives (view, step) shown, ``box.lab_figure`` the figure last drawn."""
    import ipywidgets as w  # deferred: the notebook's widget library (pip install ipywidgets)
    from IPython import get_ipython
    from IPython.display import display

    if view not in views:
        raise ValueError(f"unknown view {view!r}; views: {', '.join(views)}")
    step = check_step(trace, step)
    last = len(trace.steps) - 1
    picker = w.Dropdown(
        options=[(label, name) for name, (label, _, _) in views.items()], value=view, description="view"
    )
    slider = w.IntSlider(value=step, min=0, max=max(last, 0), description="step", continuous_update=False)
    play = w.Play(value=step, min=0, max=max(last, 0), interval=500, description="play")
    w.jslink((play, "value"), (slider, "value"))
    headline = w.HTML()
    note = w.HTML()
    out = w.Output()
    box = w.VBox(
        [w.HTML(f"<style>{WORDS_CSS}</style>"), w.HBox([play, slider, picker]), headline, out, note],
        layout=w.Layout(width="100%"),
    )
    box.add_class("lab-explore")
    headline.add_class("lab-headline")

    def redraw(*_):
        i, v = slider.value, picker.value
        label, fn, text = views[v]
        headline.value = f"<div id='headline'>{headline_html(trace, i)}</div>"
        note.value = note_html(label, text)
        box.lab_figure = as_figure(fn(trace, i))
        if get_ipython() is not None:  # in a kernel: draw into the output area
            with out:
                out.clear_output(wait=True)
                display(box.lab_figure)

    slider.observe(redraw, "value")
    picker.observe(redraw, "value")
    box.lab_state = lambda: (picker.value, slider.value)
    box.lab_controls = {"step": slider, "view": picker, "play": play}
    redraw()
    return box
