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
  async figure(view, i, presenter, maxHeight) {
    const v = this.byName[view];
    const spec = JSON.parse((await this.lines(view, v.gz))[v.wide ? 0 : this.clamp(i)]);
    const layout = Object.assign({template: this.D.template}, spec.layout);
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
      const id = `${this.id}|${view}|${!!presenter}|${maxHeight || ""}`;
      if (!(v.wide && gd.__labDrawn === id)) {
        const fig = await this.figure(view, i, presenter, maxHeight);
        await Plotly.react(gd, fig.data, fig.layout, {responsive: true, displaylogo: false});
        gd.__labDrawn = id;
        gd.__labNatural = fig.natural; // the height before any cut: lab/app/page.js fits from it
        gd.__labSized = gd.layout;
      }
      if (v.wide) await LabSteps.moveMarker(gd, i);
    };
    gd.__labQueue = (gd.__labQueue || Promise.resolve()).then(run, run);
    return gd.__labQueue;
  }
};
