"""``lab.views.explore(trace)``: a step slider (with play) and a view picker over the same figures as the app,
inside Jupyter, on the notebook's widget library (ipywidgets)::

    from lab.views import explore
    explore(trace)                     # the block table at step 0
    explore(trace, "drafts", step=20)

Each change redraws the view at that step (a pure function of the trace, as everywhere), the headline
with the three eras and the view's note above and below it. The story's picker (the app's guided tour,
``lab.views.tour``) opens a chapter at its step and view with its sentence drawn on the figure at what it names,
the mark the app and the exported file draw (``lab.views.tour_marks.marked``); ▶ continue opens the next one, and
a step or view picked by hand leaves the chapter (its marks are of its own step, as on the pages).
"""

from __future__ import annotations

from lab.views.common import as_figure, check_step
from lab.views.eras import headline_html
from lab.views.render import WORDS_CSS, note_html
from lab.views.tour_marks import marked

NO_CHAPTER = -1  # the story's picker with no chapter open ("—"; a Dropdown's None is no option: a blank box)

# ipywidgets gives the slider and the picker 300 px each and the play buttons 148 px, in a row that does not
# wrap; the eras table's cells do not wrap either. Beside the app, at a 960 px browser, JupyterLab's notebook is
# about 600 px wide and cut off the slider and the headline. So the row wraps, the slider takes what is left
# (from MIN_SLIDER on), and the headline's cells wrap; its era table shares the output area's width among its
# columns (at half a laptop with JupyterLab's file browser open it lost its "after #43991" column: minor 19).
MIN_SLIDER = "220px"
# #headline in the selectors: WORDS_CSS's "#headline .eras td" would outrank classes alone.
EXPLORE_CSS = """
.lab-explore .lab-headline, .lab-explore .lab-headline > * {min-width: 0; line-height: 1.35}
.lab-explore #headline .eras td, .lab-explore #headline .hl-line {white-space: normal}
.lab-explore #headline .eras {width: 100%; table-layout: fixed}
.lab-explore #headline .eras td, .lab-explore #headline .eras th {overflow-wrap: anywhere}
.lab-explore #headline .pr-badge {white-space: normal}
"""


def explore_views(trace, views: dict, view: str = "block_table", step: int = 0, story: list[dict] | None = None):
    """An ipywidgets box over ``views`` (lab.views.ALL_VIEWS: name -> (label, spec function, note)):
    play, step slider and view picker, and under them the story's chapters (``story``: lab.views.tour's stops)
    and ▶ continue, above the headline, the figure, the note. ``box.lab_state()`` gives (view, step) shown,
    ``box.lab_figure`` the figure last drawn, ``box.lab_chapter()`` the chapter open (None: none)."""
    import ipywidgets as w  # deferred: the notebook's widget library (pip install ipywidgets)
    from IPython import get_ipython
    from IPython.display import display

    if view not in views:
        raise ValueError(f"unknown view {view!r}; views: {', '.join(views)}")
    step = check_step(trace, step)
    last = len(trace.steps) - 1
    picker = w.Dropdown(
        options=[(label, name) for name, (label, _, _) in views.items()],
        value=view,
        description="view",
        layout=w.Layout(width="auto", flex="0 1 300px", min_width="200px"),
    )
    slider = w.IntSlider(
        value=step,
        min=0,
        max=max(last, 0),
        description="step",
        continuous_update=False,
        layout=w.Layout(width="auto", flex=f"1 1 {MIN_SLIDER}", min_width=MIN_SLIDER),
    )
    play = w.Play(value=step, min=0, max=max(last, 0), interval=500, description="play")
    w.jslink((play, "value"), (slider, "value"))
    headline = w.HTML(layout=w.Layout(width="100%"))
    note = w.HTML(layout=w.Layout(width="100%"))
    out = w.Output(layout=w.Layout(width="100%"))
    controls = w.HBox([play, slider, picker], layout=w.Layout(width="100%", flex_flow="row wrap"))
    story = story or []
    chapter = w.Dropdown(
        options=[("—", NO_CHAPTER)] + [(_chapter_label(k, t), k) for k, t in enumerate(story)],
        value=NO_CHAPTER,
        description="story",
        layout=w.Layout(width="auto", flex="1 1 300px", min_width="200px"),
    )
    forward = w.Button(description="▶ continue", tooltip="the next chapter of the story, drawn on the figure")
    chapters = w.HBox([chapter, forward], layout=w.Layout(width="100%", flex_flow="row wrap"))
    box = w.VBox(
        [w.HTML(f"<style>{WORDS_CSS}{EXPLORE_CSS}</style>"), controls, chapters, headline, out, note],
        layout=w.Layout(width="100%"),
    )
    box.add_class("lab-explore")
    headline.add_class("lab-headline")
    opening = []  # while a chapter moves the slider and the picker: one drawing, after both

    def redraw(*_):
        if opening:
            return
        i, v = slider.value, picker.value
        k = chapter.value
        if k != NO_CHAPTER and (story[k]["view"], story[k]["step"]) != (v, i):
            chapter.value = NO_CHAPTER  # a step or view picked by hand: the chapter's marks are of its own step
            return  # (redraw runs again as the chapter's picker changes)
        label, fn, text = views[v]
        headline.value = f"<div id='headline'>{headline_html(trace, i)}</div>"
        note.value = note_html(label, text)
        spec = fn(trace, i)
        box.lab_figure = as_figure(spec if k == NO_CHAPTER else marked(spec, story[k]["mark"]))
        if get_ipython() is not None:  # in a kernel: draw into the output area
            with out:
                out.clear_output(wait=True)
                display(box.lab_figure)

    def open_chapter(*_):
        k = chapter.value
        if k != NO_CHAPTER:
            opening.append(k)
            try:
                picker.value, slider.value = story[k]["view"], story[k]["step"]
            finally:
                opening.pop()
        redraw()

    def next_chapter(_):
        chapter.value = min(chapter.value + 1, len(story) - 1)  # from "—" (-1): the first

    slider.observe(redraw, "value")
    picker.observe(redraw, "value")
    chapter.observe(open_chapter, "value")
    forward.on_click(next_chapter)
    chapters.layout.display = None if story else "none"
    box.lab_state = lambda: (picker.value, slider.value)
    box.lab_chapter = lambda: None if chapter.value == NO_CHAPTER else chapter.value
    box.lab_controls = {"step": slider, "view": picker, "play": play, "chapter": chapter, "continue": forward}
    redraw()
    return box


def _chapter_label(k: int, stop: dict) -> str:
    """A chapter in the story's picker: its number, step and the start of its sentence."""
    text = stop["text"] if len(stop["text"]) <= 70 else stop["text"][:69] + "…"
    return f"{k + 1}. step {stop['step']}: {text}"
