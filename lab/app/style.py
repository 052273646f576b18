"""The app's CSS (Gradio 6 takes it at launch: lab.app.launch reads ``demo.lab_css``, set by lab.app.ui):
a compact top bar that wraps from 640 px, presenter mode's larger type, the inline error, and the kernel
view's ⟳ button shown on that view only (page.js sets ``body[data-lab-view]``)."""

from __future__ import annotations

from lab.views.render import WORDS_CSS

CSS = """
.gradio-container {max-width: 100% !important; padding: 4px 12px !important}
.gradio-container .main, .gradio-container .wrap {gap: 4px}
.contain > .column, .gradio-container .main > .wrap > .column {gap: 6px !important}
#brand {font-size: 13px; color: #555; padding: 0 !important; margin: 0; min-height: 0 !important}
#brand * {margin: 0 !important; padding: 0 !important; line-height: 1.3}
#topbar {gap: 6px; align-items: end; flex-wrap: wrap}
#topbar > div {min-width: 0 !important}
#topbar button {flex: 0 0 auto !important; width: auto !important; padding: 4px 12px; min-height: 40px;
  white-space: nowrap; align-self: end; margin-bottom: 6px}
#topbar > #presenter-box {flex: 0 0 118px !important; min-width: 118px !important; align-self: end}
#topbar > .form:has(#preset) {flex: 1 1 440px !important; min-width: min(440px, 100%) !important;
  flex-wrap: nowrap}
#topbar > #step, #topbar > .form:has(#step) {flex: 1 1 260px !important; min-width: 260px !important}
/* The scenario text's message box takes no room until it holds a message (empty, it left a 50 px gap: minor 22) */
#spec-msg:not(:has(.inline-error)) {display: none !important}
/* ↩ after a custom run: an icon, and the slider gives up 30 px, so ▶ play and presenter stay on the row (minor 18) */
#topbar > #back {padding: 4px 8px !important; min-width: 34px !important}
#topbar:has(> #back) > .form:has(#step) {flex-basis: 230px !important; min-width: 230px !important}
#step {padding-top: 0; padding-bottom: 0}
#step-loading {font-size: 12px; color: #8a5a00; background: #fff4d6; border-radius: 4px; padding: 1px 8px;
  margin-left: 8px; visibility: hidden}
#headline {overflow-x: auto}
#view {margin: 0}
#view label {padding: 2px 10px}
#plot, #plot-compare {min-height: 420px}
/* compare side by side: the right figure's name on its own line above it (it overprinted the title, review 5
   minor 12), and the left figure as far down, so the two figures start level */
#plot-compare > label[data-testid="block-label"] {position: static !important; display: inline-flex; margin-bottom: 2px}
body.comparing #plot::before {content: ""; display: block; height: 28px}
#note {font-size: 13px; color: #444}
.inline-error {color: #9b0018; background: #fdecea; border-left: 4px solid #9b0018; padding: 6px 10px;
  border-radius: 4px; font-size: 14px}
body.presenter #settings, body.presenter #below, body.presenter #brand, body.presenter #runner,
  body.presenter #run {display: none !important}
body.presenter #headline, body.presenter #headline .hl-line {font-size: 22px !important}
body.presenter #headline .eras {font-size: 20px !important}
body.presenter #headline .eras tr.hl-sched {display: none}
body.presenter #view label {font-size: 18px !important}
body.presenter.short #headline, body.presenter.short #headline .hl-line {font-size: 16px !important}
body.presenter.short #headline .eras {font-size: 15px !important}
body.presenter.short #view label {font-size: 15px !important}
body.presenter.short #headline .hl-line {white-space: nowrap; overflow: hidden; text-overflow: ellipsis;
  cursor: pointer}
body.presenter.short #headline .hl-line::before {content: "▸ "; color: #1f77b4}
body.presenter.short.hl-open #headline .hl-line {white-space: normal}
body.presenter.short.hl-open #headline .hl-line::before {content: "▾ "}
body.presenter.short:not(.hl-open) #headline .hl-handed,
  body.presenter.short:not(.hl-open) #headline .eras {display: none !important}
#plots > div {min-width: 0 !important; flex: 1 1 0 !important}
.secondary-wrap:has(> .icon-wrap) > input[role=combobox] {width: calc(100% - 36px) !important; min-width: 0;
  text-overflow: ellipsis}
"""
# The knobs beside the figure (lab/app/knobs.py) and their answer for the step on screen.
CSS += """
#plots {flex-wrap: wrap !important}
#plots > #knobs {flex: 0 0 230px !important; gap: 4px !important; font-size: 13px}
body.comparing #knobs, body.presenter #knobs {display: none !important}
body.knobs-above:not(.lab-more) #knobs {display: none !important}
body.knobs-above #more {display: inline-block !important}
#knobs-head {font-size: 12.5px; color: #444}
#whatif {font-size: 12px; line-height: 1.3}
#whatif .wi-row {margin: 2px 0}
#whatif .wi-head {color: #444}
#whatif .wi-handed {color: #555; font-size: 11px; margin-top: 3px}
#whatif .wi-foot {color: #777; font-size: 11px}
#whatif .wi-refused {color: #9b0018}
#tour-next {font-weight: 600; border: 1px solid #b8860b; border-radius: 6px; padding: 3px 12px; background: #fffbe6;
  margin: 0 0 6px 0; cursor: pointer}
"""
# Half a laptop (body.narrow, set by lab/app/page.js below 800 px: Gradio's CSS scoping leaves no @media rule
# working): one compact control row, the rest folded (issue 49). The keys' hint shows at every width.
CSS += """
#keys-hint {display: block; font-size: 11px; color: #555; white-space: nowrap; padding-top: 1px}
#more {display: none; font-size: 13px; border: 1px solid #ccc; border-radius: 6px; background: #f7f7f7;
  padding: 2px 10px; align-self: center}
body.narrow #brand {white-space: nowrap !important; overflow: hidden !important; text-overflow: ellipsis;
  font-size: 12px !important}
body.narrow #brand * {display: inline !important}
body.narrow #more {display: inline-block !important}
body.narrow:not(.lab-more) #runner, body.narrow:not(.lab-more) #run,
  body.narrow:not(.lab-more) #presenter-box {display: none !important}
body.narrow #topbar {row-gap: 2px !important}
body.narrow #topbar > .form:has(#preset) {flex: 1 1 160px !important; min-width: 160px !important;
  max-width: 300px !important; order: 9}
body.narrow #keys-hint, body.narrow #more, body.narrow #run, body.narrow #back, body.narrow #presenter-box {order: 10}
body.narrow #preset {padding: 0 !important}
body.narrow #preset .label-wrap, body.narrow #preset [data-testid=block-info] {display: none !important}
body.narrow #topbar > #step, body.narrow #topbar > .form:has(#step) {flex: 1 1 180px !important;
  min-width: 180px !important}
body.narrow #topbar button {min-height: 34px !important; margin-bottom: 2px !important; padding: 2px 8px !important}
body.narrow #headline .hl-line {white-space: nowrap; overflow: hidden; text-overflow: ellipsis; cursor: pointer}
body.narrow #headline .hl-line::before {content: "▸ "; color: #1f77b4}
body.narrow.hl-open #headline .hl-line {white-space: normal}
body.narrow:not(.hl-open) #headline .hl-handed {display: none}
body.narrow.hl-open #headline .hl-line::before {content: "▾ "}
body.narrow:not(.hl-open) #headline .eras {display: none !important}
body.narrow #view .wrap {flex-wrap: nowrap !important; overflow-x: auto !important}
body.narrow #view label {white-space: nowrap !important; font-size: 12px !important; padding: 1px 6px !important}
"""
# The last rule: a dropdown's text ends before its arrow (Gradio lays the arrow over the input's right end).
# The headline's and the summary's style: lab/views/render.py (the exported file uses it too).
CSS += WORDS_CSS
# The kernel view's ⟳ time again, with its line (lab.app.retime): on that view only (!important: Gradio
# also adds each rule scoped under .gradio-container, which outranks a body selector).
CSS += """
#again-row {display: none; align-items: center; gap: 10px; flex-wrap: wrap}
body[data-lab-view=kernels] #again-row {display: flex !important}
#again {flex: 0 0 auto !important; width: auto !important}
#again-msg {font-size: 13px; color: #333; flex: 1 1 300px}
"""
# The deployment tab's backends table (lab/app/deployment_tab.py table_html): a plain HTML table in its own
# scrolling box, 1,080 px of fixed columns; a long cell wraps, a number stays whole.
CSS += """
#dep-table .dep-table-label {font-size: 13px; color: #555; margin: 2px 0}
#dep-table .dep-table-box {overflow-x: auto; max-width: 100%}
#dep-table table.dep-backends {table-layout: fixed; width: 1080px; border-collapse: collapse; font-size: 13px;
  margin: 0}
#dep-table .dep-backends th, #dep-table .dep-backends td {border: 1px solid #ddd; padding: 4px 6px;
  text-align: left; vertical-align: top; overflow-wrap: break-word}
#dep-table .dep-backends th {background: #f4f4f4; font-weight: 600}
"""
# The answer's Markdown tables (per path and era; the log beside the lab): a word is never cut ("tar get", "#406 54"
# at 683 px), a value in code may be (FULL_AND_PIECEWISE), so the log's table keeps its verdict column in view at
# 683 px; a table wider than the page scrolls in the answer's box.
CSS += """
#dep-answer {overflow-x: auto}
#dep-answer th, #dep-answer td {word-break: normal !important; overflow-wrap: normal !important}
#dep-answer td code {overflow-wrap: anywhere !important}
"""
