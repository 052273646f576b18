// LabSteps: one trace's step data (lab/export/payload.py) drawn in a page with no server: the exported
// file (lab/export/page.js) and the app (lab/app/page.js) both step with it. A view's gzip stream is
// inflated (DecompressionStream) the first time it is needed, a step's figure parsed when it is drawn;
// a view of the whole trace is drawn once per plot and only its step marker (the shape "step") moves.
window.LabSteps = class LabSteps {
  constructor(data, id) {
    this.D = data;
    this.id = id || data.spec;
    this.last = data.steps - 1;
    this.byName = Object.fromEntries(data.views.map((v) => [v.name, v]));
    this.streams = {};
    this.queue = Promise.resolve();
  }
  static bytesOf(b64) {
    const s = atob(b64);
    const a = new Uint8Array(s.length);
    for (let i = 0; i < s.length; i++) a[i] = s.charCodeAt(i);
    return a;
  }
  static async inflate(b64) {
    const stream = new Blob([LabSteps.bytesOf(b64)]).stream().pipeThrough(new DecompressionStream("gzip"));
    return (await new Response(stream).text()).split("\n");
  }
  lines(key, b64) {
    return this.streams[key] || (this.streams[key] = LabSteps.inflate(b64));
  }
  clamp(i) {
    i = Math.round(Number(i));
    return Math.min(Math.max(Number.isFinite(i) ? i : 0, 0), this.last);
  }
  async words(i) {
    return JSON.parse((await this.lines("words", this.D.words))[this.clamp(i)]);
  }
  async figure(view, i, presenter, maxHeight, narrow) {
    const v = this.byName[view];
    const spec = JSON.parse((await this.lines(view, v.gz))[v.wide ? 0 : this.clamp(i)]);
    let layout = Object.assign({template: this.D.template}, spec.layout);
    if (narrow) layout = LabSteps.narrowed(layout, spec.data);
    if (presenter) {
      const p = this.D.presenter; // lab.views.presenter_layout, as numbers
      layout.font = Object.assign({}, layout.font, {size: p.font_size});
      let extra = 0; // the top margin grows as the type does (the title's lines), and the figure with it
      if (layout.margin && layout.margin.t !== undefined) {
        extra = Math.round(layout.margin.t * p.top_scale) - layout.margin.t;
        layout.margin = Object.assign({}, layout.margin, {t: layout.margin.t + extra});
      }
      if (layout.height) layout.height = Math.floor(layout.height * p.height_scale) + extra;
    }
    const natural = layout.height;
    // Cut to the window (a projector's 720 px); a figure of stacked panels not below its meta.min_fit share
    // of its height (lab.views.common.STACKED_MIN_FIT).
    if (maxHeight && layout.height > maxHeight) layout.height = LabSteps.fitted(layout, natural, maxHeight);
    return {data: spec.data, layout, natural};
  }
  // A figure in a plot narrower than NARROW_PX (compare side by side at 1366 px, half a screen): its legend
  // goes below the plot, so the plot area keeps the width its notes were placed for, and its subtitle breaks
  // at each "; " into lines, the top margin and the height growing by a line each (they ran past the plot's
  // right edge, and an era's note past its left: issue 37).
  static NARROW_PX = 720;
  static isNarrow(gd) {
    const w = (gd.parentElement || gd).clientWidth; // the box's width: the plot keeps its old one until redrawn
    return w > 0 && w < LabSteps.NARROW_PX;
  }
  static narrowed(layout, data) {
    const out = Object.assign({}, layout);
    let grow = {t: 0, b: 0};
    if (!(layout.legend && layout.legend.orientation === "h")) {
      // At the figure's foot, below the axis title (rotated tick labels reach past y = -0.2); two entries a row.
      // traceorder "normal": a legend in groups stacks each group's entries even when horizontal.
      const entries = (data || []).filter((t) => t.showlegend !== false && t.name).length;
      grow.b = Math.ceil(entries / 2) * 20 + 10;
      out.legend = Object.assign({}, layout.legend, {
        orientation: "h", x: 0, xanchor: "left", yref: "container", y: 0, yanchor: "bottom", traceorder: "normal",
      });
    }
    const text = (layout.title && layout.title.text) || "";
    const sub = text.indexOf("<sup>");
    const breaks = sub < 0 ? 0 : (text.slice(sub).match(/; /g) || []).length;
    if (breaks) {
      // A title line is 1.3x the title's font (1.4x the figure's). The title hangs from the figure's top (its
      // first line's baseline a line down: Plotly anchors a title of several lines there), the margin grows by
      // the added lines.
      const size = (layout.title.font && layout.title.font.size) || 1.4 * ((layout.font && layout.font.size) || 12);
      const line = Math.ceil(1.3 * size);
      grow.t = breaks * line;
      out.title = Object.assign({}, layout.title, {
        text: text.slice(0, sub) + text.slice(sub).replace(/; /g, ";</sup><br><sup>"),
        yref: "container", yanchor: "top",
      });
      out.title.__labLine = line;
    }
    const margin = Object.assign({t: 100, b: 80}, layout.margin);
    out.margin = Object.assign({}, layout.margin, {t: margin.t + grow.t, b: margin.b + grow.b});
    if (layout.height) out.height = layout.height + grow.t + grow.b;
    if (out.title && out.title.__labLine) {
      const line = out.title.__labLine;
      delete out.title.__labLine;
      out.title.y = 1 - (line + 12) / (out.height || 450);
    }
    return out;
  }
  static fitted(layout, natural, maxHeight) {
    const minFit = (layout.meta && layout.meta.min_fit) || 0;
    return Math.max(Math.floor(maxHeight), Math.floor(natural * minFit));
  }
  // Move the step marker. Plotly.relayout of a shape recomputes the whole figure (a shape can move the
  // autorange): on a long trace that is every step's bars again. The marker is moved in the drawing
  // instead (its path shifted by the pixels between the two steps) and its layout entry updated, so a
  // later redraw puts it in the same place; relayout where the drawing is not what is expected.
  static moveMarker(gd, i) {
    const shapes = (gd.layout && gd.layout.shapes) || [];
    const k = shapes.findIndex((s) => s.name === "step");
    if (k < 0 || shapes[k].x0 === i) return;
    const s = shapes[k];
    const full = gd._fullLayout || {};
    const ax = full[`xaxis${(s.xref || "x").slice(1)}`];
    const paths = gd.querySelectorAll(`.shapelayer path[data-index="${k}"]`);
    if (!ax || !ax.l2p || s.x0 !== s.x1 || paths.length === 0) {
      return Plotly.relayout(gd, {[`shapes[${k}].x0`]: i, [`shapes[${k}].x1`]: i});
    }
    for (const p of paths) {
      if (p.__labDrawnAt === undefined) p.__labDrawnAt = s.x0; // where Plotly drew it
      p.setAttribute("transform", `translate(${ax.l2p(i) - ax.l2p(p.__labDrawnAt)},0)`);
    }
    s.x0 = s.x1 = i;
    if (full.shapes && full.shapes[k]) full.shapes[k].x0 = full.shapes[k].x1 = i;
  }
  // Draw step i of a view into the plot gd; draws into one plot run one after another, in call order.
  draw(gd, view, i, presenter, maxHeight) {
    const run = async () => {
      const v = this.byName[view];
      i = this.clamp(i);
      const narrow = LabSteps.isNarrow(gd);
      const id = `${this.id}|${view}|${!!presenter}|${maxHeight || ""}|${narrow}`;
      if (!(v.wide && gd.__labDrawn === id)) {
        const fig = await this.figure(view, i, presenter, maxHeight, narrow);
        await Plotly.react(gd, fig.data, fig.layout, {responsive: true, displaylogo: false});
        gd.__labDrawn = id;
        gd.__labNatural = fig.natural; // the height before any cut: lab/app/page.js fits from it
        gd.__labSized = gd.layout;
        gd.__labNarrow = narrow;
      }
      if (v.wide) await LabSteps.moveMarker(gd, i);
    };
    gd.__labQueue = (gd.__labQueue || Promise.resolve()).then(run, run);
    return gd.__labQueue;
  }
};
