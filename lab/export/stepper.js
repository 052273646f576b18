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
  async figure(view, i, presenter, maxHeight, narrow, width) {
    const v = this.byName[view];
    const spec = JSON.parse((await this.lines(view, v.gz))[v.wide ? 0 : this.clamp(i)]);
    let layout = Object.assign({template: this.D.template}, spec.layout);
    if (narrow) layout = LabSteps.narrowed(layout, spec.data, width);
    const g = layout.legend; // a legend hung from under the x axis: as many px above the foot at any height
    const legendPx = g && g.yref === "container" && g.yanchor === "top" ? g.y * (layout.height || 450) : null;
    if (presenter) {
      const p = this.D.presenter; // lab.views.presenter_layout, as numbers
      layout.font = Object.assign({}, layout.font, {size: p.font_size});
      let extra = 0; // the top margin grows as the type does (the title's lines), and the figure with it
      if (layout.margin && layout.margin.t !== undefined) {
        extra = Math.round(layout.margin.t * p.top_scale) - layout.margin.t;
        layout.margin = Object.assign({}, layout.margin, {t: layout.margin.t + extra});
      }
      if (layout.height) layout.height = Math.floor(layout.height * p.height_scale) + extra;
      // Cut to a short window (1280x720), larger small type would only squeeze the plot under its legend.
      const cut = maxHeight && layout.height > maxHeight;
      layout = LabSteps.largerSmallType(layout, cut ? 1 : p.font_size / 12, width);
    }
    // After presenter mode's type: a subtitle wider than its box goes behind the "?".
    if (!narrow && width && LabSteps.subtitleTooWide(layout, width)) layout = LabSteps.subtitleBehind(layout, width);
    const natural = layout.height;
    // Cut to the window (a projector's 720 px); a figure of stacked panels not below its meta.min_fit share
    // of its height (lab.views.common.STACKED_MIN_FIT) before presenter mode grew it: of the grown height, the
    // timeline and the out-of-range view stayed 100-150 px taller than 1280x720 (review 5 minor 10).
    const floor = Math.min(natural, spec.layout.height || natural);
    if (maxHeight && layout.height > maxHeight) {
      layout.height = Math.max(LabSteps.fitted(layout, floor, maxHeight), LabSteps.panelFloor(layout));
    }
    if (legendPx !== null) layout.legend = Object.assign({}, layout.legend, {y: legendPx / (layout.height || 450)});
    return {data: narrow ? LabSteps.shortNames(spec.data, layout, width) : spec.data, layout, natural};
  }
  // A figure in a plot narrower than NARROW_PX (compare side by side at 1366 px, half a screen): its legend
  // goes below the plot, so the plot area keeps the width its notes were placed for, and its subtitle breaks
  // at each "; " into lines, the top margin and the height growing by a line each (they ran past the plot's
  // right edge, and an era's note past its left: issue 37).
  static NARROW_PX = 720;
  // Plotly's toolbar without its "Share chart…" upload to Plotly Cloud (on by default in plotly.js): the
  // exported file works with no network and uploads nothing (ux review 5 minor 9).
  static CONFIG = {responsive: true, displaylogo: false, showSendToCloud: false, showLink: false,
    modeBarButtonsToRemove: ["sendChartToCloud"]};
  static isNarrow(gd) {
    const w = (gd.parentElement || gd).clientWidth; // the box's width: the plot keeps its old one until redrawn
    return w > 0 && w < LabSteps.NARROW_PX;
  }
  // Break an HTML line (no <br>) at spaces into pieces of at most ``chars`` visible characters.
  static wrapped(line, chars) {
    const pieces = [];
    let cur = "", n = 0;
    for (const word of line.split(" ")) {
      const len = word.replace(/<[^>]*>/g, "").length;
      if (cur && n + 1 + len > chars) {
        pieces.push(cur);
        cur = word;
        n = len;
      } else {
        n += (cur ? 1 : 0) + len;
        cur = cur ? `${cur} ${word}` : word;
      }
    }
    return cur ? [...pieces, cur] : pieces;
  }
  // Lines of a text at most ``width`` px wide at font ``size`` (a character is about 0.56 of the size): each
  // <br> line, and each <sup> line at 0.7 of the size, broken at spaces. [text, lines added].
  static fitText(text, width, size) {
    let added = 0;
    // A <br> inside a <sup> (lab.views' subtitles of two lines): each line its own <sup>.
    text = text.replace(/<sup>([\s\S]*?)<\/sup>/g, (_, inner) => `<sup>${inner.split("<br>").join("</sup><br><sup>")}</sup>`);
    const lines = text.split("<br>").flatMap((line) => {
      const sup = /^<sup>(.*)<\/sup>$/.exec(line);
      const chars = Math.max(20, Math.floor(width / (0.56 * size * (sup ? 0.7 : 1))));
      const pieces = LabSteps.wrapped(sup ? sup[1] : line, chars);
      added += pieces.length - 1;
      return sup ? pieces.map((p) => `<sup>${p}</sup>`) : pieces;
    });
    return [lines.join("<br>"), added];
  }
  // A wide figure whose subtitle is longer than its box (the block table beside the knobs at 1366 px): the
  // subtitle goes behind the "?" as at half a screen; nothing else changes.
  // Presenter mode's type reaches the legend and the notes at the figure's foot too (lab.views.common
  // _larger_small_type, the server's twin: review 5 minor 11), the bottom margin grown by a foot note's lines.
  // ``width``: the plot box's, in px (a foot note is broken to it, as LabSteps.narrowed does).
  static largerSmallType(layout, scale, width) {
    const out = Object.assign({}, layout);
    const lf = layout.legend && layout.legend.font && layout.legend.font.size;
    if (lf !== undefined && lf !== null) {
      const font = Object.assign({}, layout.legend.font, {size: Math.round(lf * scale)});
      out.legend = Object.assign({}, layout.legend, {font});
    }
    const m = Object.assign({t: 100, b: 80}, layout.margin);
    const plot = (layout.height || 0) - m.t - m.b;
    let need = m.b;
    out.annotations = (layout.annotations || []).map((a) => {
      if (a.xref !== "paper" || a.yanchor !== "top" || !((a.y || 0) < 0) || typeof a.text !== "string") return a;
      const size = Math.round(((a.font && a.font.size) || 12) * scale);
      const room = a.xanchor === "left" ? width * (1 - (a.x || 0)) : width;
      const text = width ? LabSteps.fitText(a.text, room - 24, size)[0] : a.text;
      need = Math.max(need, Math.ceil(-a.y * plot + text.split("<br>").length * 1.3 * size + 6));
      return Object.assign({}, a, {text, font: Object.assign({}, a.font, {size})});
    });
    if (need > m.b && out.height) { // the plot area keeps its height; the margin takes the rest
      out.height += need - m.b;
      out.margin = Object.assign({}, layout.margin, {b: need});
    }
    return out;
  }
  static subtitleTooWide(layout, width) {
    const text = (layout.title && layout.title.text) || "";
    const sub = text.indexOf("<sup>");
    if (sub < 0) return false;
    const size = 1.4 * ((layout.font && layout.font.size) || 12);
    return LabSteps.fitText(text.slice(sub), width - 24, size)[1] > 0;
  }
  static subtitleBehind(layout, width) {
    const text = layout.title.text;
    const sub = text.indexOf("<sup>");
    const head = text.slice(0, sub).replace(/(<br>)+$/, "");
    const out = Object.assign({}, layout, {title: Object.assign({}, layout.title, {text: head})});
    const m = Object.assign({l: 80, r: 80, t: 100, b: 80}, layout.margin);
    // The top margin was sized for the subtitle's lines too: the kernel view's 170 px left its two panels 55 px
    // tall in presenter mode at 1280x720 (review 5 minor 10). It shrinks to the title's own lines and what hangs
    // above the plot (a panel's title), the title put at the top; the figure shrinks as much (the plot keeps its
    // height, or takes the room where the figure is cut to the window afterwards).
    // The title shares its row with the "?": broken to stop 48 px short of the right edge (as LabSteps.narrowed).
    const size = (layout.title.font && layout.title.font.size) || 1.4 * ((layout.font && layout.font.size) || 12);
    const [fitted] = LabSteps.fitText(head, width - 48, size);
    const t = LabSteps.topForTitle(out, fitted, m);
    if (t < m.t) {
      out.title.text = fitted;
      out.margin = Object.assign({}, layout.margin, {t});
      if (out.height) out.height -= m.t - t;
      // In pixels from the top, so that a figure cut to the window afterwards keeps it there; Plotly hangs a title
      // of several lines from its last line, the lines above it going up by a line each.
      const down = LabSteps.TITLE_TOP_PX + (fitted.split("<br>").length - 1) * Math.ceil(1.3 * size);
      out.title = Object.assign(out.title, {yref: "container", y: 1, yanchor: "top", pad: {t: down}});
      out.title.font = Object.assign({}, layout.title.font, {size});
      m.t = t;
    }
    const q = LabSteps.whatIs(text.slice(sub));
    q.yshift = Math.max(0, m.t - 30);
    q.x = 1 + (m.r - 4) / Math.max(1, width - m.l - m.r);
    out.annotations = (layout.annotations || []).concat([q]);
    return out;
  }
  // The top margin a title of its own lines needs above a plot, with what hangs over the plot's top (paper y >= 1:
  // a panel's title); the margin as it is where something else is placed there (a legend above the plot, a title
  // placed by the view itself).
  static TITLE_TOP_PX = 8;
  static topForTitle(layout, head, m) {
    const legend = layout.legend || {};
    const placed = layout.title.y !== undefined || layout.title.yref !== undefined;
    if (placed || (layout.showlegend !== false && legend.y !== undefined && legend.y > 1)) return m.t;
    const fontSize = (layout.font && layout.font.size) || 12;
    const size = (layout.title.font && layout.title.font.size) || 1.4 * fontSize;
    const plot = Math.max(0, (layout.height || 450) - m.t - m.b);
    let above = 0;
    for (const a of layout.annotations || []) {
      if (a.yref !== "paper" || !(a.y >= 1) || typeof a.text !== "string") continue;
      const px = ((a.font && a.font.size) || fontSize) * 1.3 * a.text.split("<br>").length;
      const rise = { bottom: px, middle: px / 2 }[a.yanchor || "middle"] || 0;
      above = Math.max(above, (a.y - 1) * plot + (a.yshift || 0) + rise);
    }
    return Math.ceil(LabSteps.TITLE_TOP_PX + 1.3 * size * head.split("<br>").length + 14 + above);
  }
  // ``width``: the plot box's, in px.
  // A side panel's y-axis title (its x axis's domain starts right of the middle: the out-of-range view's totals)
  // stands on the main panel's bars at half a screen (ux review: the rotated "entries" over the bars at 683 px);
  // its panel title says what it counts, so a narrow figure drops it, as the notebook fit does.
  static sidePanelTitles(layout) {
    for (const key of Object.keys(layout)) {
      const axis = layout[key];
      if (!/^yaxis\d*$/.test(key) || !axis || !axis.title) continue;
      const x = layout["xaxis" + String(axis.anchor || "x").slice(1)] || {};
      if ((x.domain || [0, 1])[0] > 0.5) layout[key] = Object.assign({}, axis, {title: {text: ""}});
    }
  }

  static narrowed(layout, data, width) {
    const out = Object.assign({}, layout);
    const fontSize = (layout.font && layout.font.size) || 12;
    width = width || LabSteps.NARROW_PX;
    let grow = {t: 0, b: 0};
    // A legend beside the plot, or one under it (the draft windows': three rows at half a screen ran into the
    // note under it), goes to the very foot.
    let legendFrom = null; // px under the plot where the legend's top goes (null: at the figure's very foot)
    if (!(layout.legend && layout.legend.yref === "container")) {
      // The right margin kept for a legend beside the plot (recorded eras: 250 px) goes to the plot; not where
      // more legends stay beside their panels (the timeline's legend2, legend3).
      if (!layout.legend2 && layout.margin && layout.margin.r > 60 && (layout.legend || {}).x >= 1) {
        out.margin = Object.assign({}, layout.margin, {r: 30});
      }
      // Under the x axis: where the view's legend under the plot started, else under the view's bottom margin
      // (its axis's ticks and title); at the very foot where a note hangs under the plot (the draft windows'
      // "why", under which the legend's three rows ran at half a screen). Its room: its rows as Plotly lays them
      // (LabSteps.legendRows). The room was two entries a row, under the view's whole margin: about 70 px stood
      // empty above compare's block-table legends at 1366 px (ux review 5 minor 12).
      // traceorder "normal": a legend in groups stacks each group's entries even when horizontal.
      const m0 = Object.assign({t: 100, b: 80, l: 80, r: 80}, layout.margin);
      const y0 = (layout.legend || {}).y;
      const plotH = (layout.height || 450) - m0.t - m0.b;
      const offset = typeof y0 === "number" && y0 < 0 ? Math.min(m0.b, -y0 * plotH, LabSteps.axisFoot(layout)) : m0.b;
      const foot = (layout.annotations || []).some((a) => a.xref === "paper" && a.y < 0);
      const m1 = Object.assign({}, m0, out.margin);
      const shortData = LabSteps.shortNames(data, Object.assign({}, layout, {margin: m1}), width);
      const band = LabSteps.legendRows(layout, shortData, width - m1.l - m1.r) * 20 + 10;
      grow.b = foot ? band : Math.max(0, offset + band - m0.b);
      if (!foot) legendFrom = offset;
      out.legend = Object.assign({}, layout.legend, {
        orientation: "h", x: 0, xanchor: "left", yref: "container", y: 0, yanchor: foot ? "bottom" : "top",
        traceorder: "normal",
      });
    }
    LabSteps.sparseTicks(out, width - Object.assign({l: 80}, out.margin).l - Object.assign({r: 80}, out.margin).r);
    LabSteps.sidePanelTitles(out);
    const text = (layout.title && layout.title.text) || "";
    if (text) {
      // The subtitle's parts in lines at each "; ", then every line broken to the width. A title line is 1.3x
      // the title's font (1.4x the figure's). The title hangs from the figure's top (its first line's baseline
      // a line down: Plotly anchors a title of several lines there), the margin grows by the added lines.
      const size = (layout.title.font && layout.title.font.size) || 1.4 * fontSize;
      // The subtitle goes behind a "?" at the figure's top right (its words on hover): at half a laptop's
      // width its lines pushed the figure below the fold (issue 49, ux review 5 major A).
      const sub = text.indexOf("<sup>");
      const head = sub < 0 ? text : text.slice(0, sub).replace(/(<br>)+$/, "");
      if (sub >= 0) out.annotations = (out.annotations || layout.annotations || []).concat([LabSteps.whatIs(text.slice(sub))]);
      const [fitted] = LabSteps.fitText(head, width - 48, size);
      if (fitted !== text) {
        const line = Math.ceil(1.3 * size);
        grow.t = (fitted.split("<br>").length - text.split("<br>").length) * line;
        out.title = Object.assign({}, layout.title, {text: fitted, yref: "container", yanchor: "top"});
        out.title.__labLine = line;
      }
    }
    // A note at the figure's foot (on the paper, hanging below the plot) broken to the width, the figure grown
    // by its added lines (the draft windows' "why" note ran past the right edge at half a screen); a message
    // in the middle of an empty figure (lab.views.common.message_figure) broken in place.
    out.annotations = (out.annotations || layout.annotations || []).map((a) => {
      const foot = a.yanchor === "top" && a.y < 0;
      const message = a.x === 0.5 && a.y === 0.5;
      if (a.xref !== "paper" || !(foot || message) || typeof a.text !== "string") return a;
      const size = (a.font && a.font.size) || fontSize;
      const room = a.xanchor === "left" ? width * (1 - (a.x || 0)) : width;
      const [fitted, added] = LabSteps.fitText(a.text, room - 24, size);
      if (foot) grow.b += Math.ceil(added * 1.3 * size);
      if (message && out.height) out.height += Math.ceil(added * 1.3 * size); // the plot, not a margin, grows
      return added ? Object.assign({}, a, {text: fitted}) : a;
    });
    const margin = Object.assign({t: 100, b: 80}, out.margin);
    out.margin = Object.assign({}, out.margin, {t: margin.t + grow.t, b: margin.b + grow.b});
    if (out.height) out.height += grow.t + grow.b;
    // The "?" hangs at the figure's top right, over the top margin (a paper y of 1 is the plot area's top).
    // At the figure's right edge, past any right margin (a paper x of 1 is the plot area's right edge, under a
    // long title where a legend sits beside the plot); the title is fitted 48 px short of that edge.
    const m = Object.assign({l: 80, r: 80}, out.margin);
    for (const a of out.annotations) {
      if (a.name !== "subtitle") continue;
      a.yshift = Math.max(0, out.margin.t - 30);
      a.x = 1 + (m.r - 4) / Math.max(1, width - m.l - m.r);
    }
    if (out.title && out.title.__labLine) {
      const line = out.title.__labLine;
      delete out.title.__labLine;
      out.title.y = 1 - (line + 12) / (out.height || 450);
    }
    if (legendFrom !== null) out.legend.y = (out.margin.b - legendFrom) / (out.height || 450);
    return out;
  }
  // A narrow figure's legend names broken to the plot's width (the legend starts at its left; 40 px of swatch,
  // the legend's 10 px type): at 683 px compare's "baseline walk (before #40654): … (sized by 32,768)" ran past
  // the figure's right edge. The legend's rows (LabSteps.legendRows) count the lines. lab.views.notebook_fit's twin.
  static shortNames(data, layout, width) {
    const room = (width || LabSteps.NARROW_PX) - ((layout.margin || {}).l ?? 80) - 48;
    return (data || []).map((t) => {
      if (typeof t.name !== "string" || t.showlegend === false) return t;
      const [name, added] = LabSteps.fitText(t.name, room, 10);
      return added ? Object.assign({}, t, {name}) : t;
    });
  }
  // Ticks the view placed itself over a fixed range (the block table's scale break: 70, 1,000 and 1,992 a few px
  // apart in compare side by side at 683 px, printed over each other): a tick nearer the last one kept than
  // their labels' half widths goes; the row's last tick is kept rather than its neighbour. The plot is taken as
  // 0.8 of its box (the y axis's labels take more than the margin). lab.views.notebook_fit's twin.
  static sparseTicks(out, plotW) {
    for (const key of Object.keys(out).filter((k) => /^xaxis\d*$/.test(k))) {
      const axis = out[key] || {};
      const [vals, texts, range] = [axis.tickvals, axis.ticktext, axis.range];
      if (!vals || !texts || !range || vals.length !== texts.length || !(range[1] > range[0])) continue;
      const [lo, hi] = axis.domain || [0, 1];
      const size = (axis.tickfont && axis.tickfont.size) || 12;
      const px = vals.map((v) => ((v - range[0]) / (range[1] - range[0])) * 0.8 * plotW * (hi - lo));
      const keep = [];
      vals.forEach((_, i) => {
        const last = keep[keep.length - 1];
        const room = last === undefined ? 0 : 0.3 * size * (String(texts[i]).length + String(texts[last]).length) + 6;
        if (last === undefined || px[i] - px[last] >= room) keep.push(i);
      });
      if (keep.length > 1 && keep[keep.length - 1] !== vals.length - 1) keep[keep.length - 1] = vals.length - 1;
      if (keep.length < vals.length) {
        out[key] = Object.assign({}, axis, {tickvals: keep.map((i) => vals[i]), ticktext: keep.map((i) => texts[i])});
      }
    }
    // An axis over the plot (the true-scale strip's): Plotly stood its five labels up into the strip's title at
    // 683 px; as many as lie flat, about 60 px each (three at least).
    for (const key of Object.keys(out).filter((k) => /^xaxis\d*$/.test(k))) {
      const axis = out[key] || {};
      if (axis.side !== "top" || axis.tickvals || axis.nticks) continue;
      const [lo, hi] = axis.domain || [0, 1];
      out[key] = Object.assign({}, axis, {nticks: Math.max(3, Math.floor((0.8 * plotW * (hi - lo)) / 60))});
    }
  }
  // How far under the plot its x axis's tick labels and title reach (px), about: a legend under the plot at a
  // paper y (the block table's -0.2) hung lower as the plot grew taller with its rows, 49 px under the title
  // beside a table of 24 rows. A tick label's row about 20 px, the title's standoff, its line about 18 px.
  static axisFoot(layout) {
    const axis = layout.xaxis || {};
    const title = axis.title && (typeof axis.title === "string" ? axis.title : axis.title.text);
    const standoff = (axis.title && axis.title.standoff) || 12;
    return 4 + 20 + (title ? standoff + 18 : 0);
  }
  // The rows of the figure's (first) legend laid horizontally in a plot ``plotW`` px wide, as Plotly lays them
  // (plotly.js src/components/legend/draw.js computeLegendDimensions): all in one row where they fit, else every
  // entry as wide as the widest, as many a row as fit. An entry: 40 px of swatch and gaps, about 6 px a
  // character at the legend's 10 px; a name of two lines, a taller row. lab.views.notebook_fit's twin.
  static legendRows(layout, data, plotW) {
    const shown = (data || []).filter((t) => t.name && (t.legend || "legend") === "legend" &&
      (t.showlegend === true || (t.showlegend !== false && !/^(heatmap|histogram2d|contour)/.test(t.type || ""))));
    const names = shown.map((t) => String(t.name));
    const legendTitle = ((layout.legend || {}).title || {}).text;
    if (legendTitle) names.unshift(legendTitle);
    if (!names.length) return 0;
    const lines = names.map((n) => n.split("<br>").map((l) => l.replace(/<[^>]*>/g, "")));
    const entries = lines.map((ls) => 40 + 6 * Math.max(...ls.map((l) => l.length)));
    const extra = lines.reduce((k, ls) => k + (ls.length - 1) * 0.65, 0);
    if (entries.reduce((a, b) => a + b + 5, 0) <= plotW) return Math.ceil(1 + extra);
    const perRow = Math.max(1, Math.floor(plotW / (Math.max(...entries) + 5)));
    return Math.ceil(Math.ceil(names.length / perRow) + extra);
  }
  // The "?" that holds a narrow figure's subtitle: its words show on hover (and on a tap).
  static whatIs(subtitle) {
    const words = subtitle.replace(/<\/?sup>/g, "").replace(/<br>/g, " ").replace(/; /g, ";<br>");
    return {
      text: "<b> ? </b>", hovertext: words, name: "subtitle", xref: "paper", yref: "paper", x: 1, y: 1,
      xanchor: "right", yanchor: "bottom", showarrow: false, bgcolor: "#eef3fa", bordercolor: "#1f77b4",
      borderwidth: 1, borderpad: 3, font: {size: 13, color: "#1f77b4"}, hoverlabel: {align: "left"},
    };
  }
  // A figure of stacked panels (meta.min_fit) is cut no lower than where its thinnest panel keeps MIN_PANEL_PX.
  static MIN_PANEL_PX = 50;
  static panelFloor(layout) {
    if (!(layout.meta && layout.meta.min_fit)) return 0;
    const spans = Object.keys(layout).filter((k) => /^yaxis\d*$/.test(k))
      .map((k) => (layout[k] && layout[k].domain) || [0, 1]).map((d) => d[1] - d[0]).filter((x) => x > 0);
    if (spans.length < 2) return 0;
    const m = Object.assign({t: 100, b: 80}, layout.margin);
    return Math.ceil(m.t + m.b + LabSteps.MIN_PANEL_PX / Math.min(...spans));
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
  // A chapter of the tour drawn on the figure (lab/views/tour_marks.py: shapes and annotations named "tour"), or
  // the marks taken off (mark null: the next step). onContinue: a click on the chapter's box, "▶ continue",
  // opens the next chapter.
  // ``at``: the "view|step" the mark belongs to (LabSteps.draw draws it again on a redraw of that same figure).
  static async mark(gd, mark, onContinue, at) {
    if (!gd || !gd.layout) return;
    gd.__labMark = mark ? {mark, onContinue, at} : null;
    const keep = (a) => (a || []).filter((x) => x.name !== "tour");
    const had = (gd.layout.shapes || []).concat(gd.layout.annotations || []).some((x) => x.name === "tour");
    if (!mark && !had) return;
    const notes = ((mark && mark.annotations) || []).map((a) =>
      onContinue ? Object.assign({}, a, {text: `${a.text}<br><b>▶ continue</b>`, captureevents: true}) : a);
    gd.__labContinue = onContinue || null;
    if (!gd.__labContinueWired && gd.on) {
      gd.on("plotly_clickannotation", (ev) => {
        if (ev.annotation && ev.annotation.name === "tour" && gd.__labContinue) gd.__labContinue();
      });
      gd.__labContinueWired = true;
    }
    await Plotly.relayout(gd, {
      shapes: keep(gd.layout.shapes).concat((mark && mark.shapes) || []),
      annotations: keep(gd.layout.annotations).concat(notes),
    });
  }
  // ▶ walk (issue 49 item 4): a figure that carries layout.meta.walk (the hero, lab/views/hero.py) gets a button
  // under its plot's left corner; a click sweeps one cursor along each bar, every cursor at the same speed in columns a
  // millisecond (the widest bar takes meta.walk.ms), so the time a cursor runs is its era's walk, at true scale.
  // A second click stops it where it is; the next drawing takes the cursors off. Under prefers-reduced-motion the
  // cursors are drawn at once where they end. gd.__labWalk: the run (its frames: each bar's x per frame drawn).
  static walkPlan(gd) {
    return (gd && gd.layout && gd.layout.meta && gd.layout.meta.walk) || null;
  }
  static walkMarks(plan, t) {
    const speed = plan.widest / plan.ms;
    const xs = plan.bars.map((b) => Math.min(b.columns, speed * Math.max(t, 0)));
    const shapes = plan.bars.map((b, k) => ({
      type: "line", name: "walk", xref: "x", yref: "y", x0: xs[k], x1: xs[k],
      y0: b.y - b.half - 0.08, y1: b.y + b.half + 0.08, line: {color: b.color, width: 3},
    }));
    const annotations = plan.bars.filter((b) => !b.drafts).map((b) => {
      const x = xs[plan.bars.indexOf(b)];
      const done = x >= b.columns;
      return {name: "walk", xref: "x", yref: "y", x, y: b.y + b.half, yanchor: "bottom", xanchor: "left",
        showarrow: false, font: {size: 11, color: b.color},
        text: `${done ? "walked" : "walking"} ${Math.round(x).toLocaleString("en-US")}`};
    });
    return {xs, shapes, annotations};
  }
  static async drawWalk(gd, marks) {
    const keep = (a) => (a || []).filter((x) => x.name !== "walk");
    await Plotly.relayout(gd, {
      shapes: keep(gd.layout.shapes).concat(marks.shapes),
      annotations: keep(gd.layout.annotations).concat(marks.annotations),
    });
  }
  static walkLabel(gd, running) {
    const b = gd.__labWalkButton;
    if (!b) return;
    b.textContent = running ? "■ stop the walk" : "▶ walk the columns";
    b.setAttribute("aria-pressed", String(running));
  }
  static stopWalk(gd) {
    if (gd && gd.__labWalk) gd.__labWalk.stopped = true;
    if (gd) LabSteps.walkLabel(gd, false);
  }
  static async walk(gd) {
    const plan = LabSteps.walkPlan(gd);
    if (!plan) return;
    LabSteps.stopWalk(gd);
    const run = {frames: [], stopped: false, done: false};
    gd.__labWalk = run;
    const still = !!(window.matchMedia && window.matchMedia("(prefers-reduced-motion: reduce)").matches);
    LabSteps.walkLabel(gd, !still);
    const t0 = performance.now();
    for (;;) {
      const t = still ? plan.ms : performance.now() - t0;
      // stopped, or another figure drawn meanwhile (its layout is another object): nothing more is drawn
      if (run.stopped || LabSteps.walkPlan(gd) !== plan) return run;
      const marks = LabSteps.walkMarks(plan, t);
      await LabSteps.drawWalk(gd, marks);
      run.frames.push(marks.xs);
      if (t >= plan.ms) break;
      await new Promise((r) => requestAnimationFrame(r));
    }
    run.done = true;
    LabSteps.walkLabel(gd, false);
    return run;
  }
  // The button over gd, shown while gd's figure carries a walk; placed in gd's box (absolute, no room taken: the
  // figure does not move). A button of a plot no longer in the box (Gradio drew a new one) goes.
  static walkButton(gd) {
    const box = gd && gd.parentElement;
    if (!box) return;
    for (const old of box.querySelectorAll(":scope > button.lab-walk")) if (old.__labGd !== gd) old.remove();
    let b = gd.__labWalkButton;
    if (!b || !b.isConnected) {
      b = document.createElement("button");
      b.type = "button";
      b.className = "lab-walk";
      b.__labGd = gd;
      b.title = "a cursor walks each era's block-table columns, all at one speed: the time each takes is that " +
        "era's walk, at true scale (click again to stop)";
      Object.assign(b.style, {position: "absolute", zIndex: 5, fontSize: "13px", padding: "3px 10px",
        border: "1px solid #1f77b4", borderRadius: "6px", background: "#eef3fa", color: "#08306b",
        cursor: "pointer", whiteSpace: "nowrap"});
      b.addEventListener("click", () => {
        const r = gd.__labWalk;
        if (r && !r.done && !r.stopped) LabSteps.stopWalk(gd);
        else LabSteps.walk(gd);
      });
      if (getComputedStyle(box).position === "static") box.style.position = "relative";
      box.insertBefore(b, gd);
      gd.__labWalkButton = b;
      LabSteps.walkLabel(gd, false);
    }
    if (!gd.__labWalkPlaced && gd.on) { // placed again after every drawing (a resize, a narrow figure)
      gd.on("plotly_afterplot", () => LabSteps.placeWalkButton(gd));
      gd.__labWalkPlaced = true;
    }
    LabSteps.placeWalkButton(gd);
  }
  // Under the plot's left corner, beside where every cursor starts (0 columns), on the row of the x axis's
  // title (centred, it leaves the corner free); in the top margin it covered a bar's note at half a laptop.
  static placeWalkButton(gd) {
    const b = gd.__labWalkButton;
    const size = gd._fullLayout && gd._fullLayout._size;
    if (!b) return;
    const shown = !!(LabSteps.walkPlan(gd) && size);
    b.style.display = shown ? "" : "none";
    if (!shown) return; // a hidden button is not placed: reading offsetTop forces a layout at every drawing
    b.style.top = `${gd.offsetTop + size.t + size.h + 24}px`;
    b.style.left = `${gd.offsetLeft + 4}px`;
  }
  // A figure grown to ``height`` px (the pair of compare side by side takes the taller one's height): the plot takes
  // the room; a title placed from the figure's top (LabSteps.narrowed) stays as many pixels down.
  static grownTo(layout, height) {
    if (!layout.height || layout.height >= height) return layout;
    const out = Object.assign({}, layout, {height});
    const t = layout.title;
    if (t && t.yref === "container" && typeof t.y === "number") {
      out.title = Object.assign({}, t, {y: 1 - ((1 - t.y) * layout.height) / height});
    }
    // a legend hung from under the x axis (LabSteps.narrowed) stays as many px above the figure's foot
    const g = layout.legend;
    if (g && g.yref === "container" && g.yanchor === "top" && typeof g.y === "number") {
      out.legend = Object.assign({}, g, {y: (g.y * layout.height) / height});
    }
    return out;
  }
  // Plotly's default for the tick labels of a numeric axis, ticklabeloverflow "hide past div", measures every label
  // at every drawing to hide those that reach past the figure's edge: Drawing.bBox of the label's group, which it
  // cannot cache, one forced style-and-layout pass a label, twice where the labels are turned (about 100 a click on
  // the per-request lengths view at 683 px, 40% of its Plotly.react; issue 49's ▶ next). LabSteps draws with "allow"
  // (nothing measured) and reads the labels' boxes once after: where a label reaches past the edge, the figure is
  // drawn again as it is, so what shows is what Plotly's default draws. LabSteps.PLAIN: always as it is (the route
  // tests/test_app_browser_next.py and tests/test_stepper_labels.py compare the fast one with).
  static PLAIN = false;
  static AXIS_KEY = /^[xy]axis\d*$/;
  static unmeasured(layout) {
    const out = Object.assign({}, layout);
    for (const k of Object.keys(layout).filter((k) => LabSteps.AXIS_KEY.test(k))) {
      const ax = layout[k];
      // an axis that says how its labels overflow, or puts them inside the plot, is left to Plotly
      if (!ax || typeof ax !== "object" || ax.ticklabeloverflow !== undefined || ax.ticklabelposition !== undefined) {
        continue;
      }
      out[k] = Object.assign({}, ax, {ticklabeloverflow: "allow"});
    }
    return out;
  }
  // Whether a tick label drawn reaches past the figure's box (where "hide past div" hides it), read after the drawing
  // (one layout pass): each axis's layer of labels as a whole, and its labels one by one where the layer reaches out.
  static labelsPastEdge(gd) {
    const paper = gd.querySelector(".main-svg");
    if (!paper) return false;
    const box = paper.getBoundingClientRect();
    const out = (r) => (r.width || r.height) && (r.left < box.left || r.right > box.right || r.top < box.top ||
      r.bottom > box.bottom);
    for (const layer of gd.querySelectorAll(".xaxislayer-above, .yaxislayer-above")) {
      if (!out(layer.getBoundingClientRect())) continue;
      for (const t of layer.querySelectorAll("text")) if (out(t.getBoundingClientRect())) return true;
    }
    return false;
  }
  // Draw a figure into gd: the quick route (LabSteps.unmeasured, then the check), or Plotly.react of it as it is.
  // gd.__labUnmeasured: the axes drawn unmeasured, until a label reaches past the edge.
  static async paint(gd, data, layout) {
    if (!LabSteps.PLAIN) {
      const quick = LabSteps.unmeasured(layout);
      gd.__labPainting = true;
      try {
        await Plotly.react(gd, data, quick, LabSteps.CONFIG);
      } finally {
        gd.__labPainting = false;
      }
      gd.__labUnmeasured = Object.keys(quick).filter((k) => quick[k] !== layout[k]);
      LabSteps.guardLabels(gd);
      if (!LabSteps.labelsPastEdge(gd)) return;
      gd.__labDrawnAgain = (gd.__labDrawnAgain || 0) + 1; // a label past the edge: drawn as it is
    }
    gd.__labUnmeasured = null;
    await Plotly.react(gd, data, layout, LabSteps.CONFIG);
  }
  // A later drawing of the same figure (a chapter's mark, the walk, presenter mode's fit: Plotly.relayout) is checked
  // too: where it brought a label past the edge, the axes get Plotly's default back.
  // Added again at each paint: Plotly.purge (newPlot, a figure Gradio draws) takes a plot's listeners off.
  static guardLabels(gd) {
    if (!gd.on) return;
    if (gd.__labGuard && gd.removeListener) gd.removeListener("plotly_afterplot", gd.__labGuard);
    gd.__labGuard = () => {
      const axes = gd.__labUnmeasured;
      if (gd.__labPainting || !axes || !axes.length || !LabSteps.labelsPastEdge(gd)) return;
      gd.__labUnmeasured = null;
      gd.__labDrawnAgain = (gd.__labDrawnAgain || 0) + 1;
      Plotly.relayout(gd, Object.fromEntries(axes.map((k) => [`${k}.ticklabeloverflow`, null])));
    };
    gd.on("plotly_afterplot", gd.__labGuard);
  }
  // Draw step i of a view into the plot gd; draws into one plot run one after another, in call order.
  // ``level``: the height a side-by-side pair shares (lab/app/page.js pairHeight), or none.
  draw(gd, view, i, presenter, maxHeight, level) {
    const run = async () => {
      const v = this.byName[view];
      i = this.clamp(i);
      const narrow = LabSteps.isNarrow(gd);
      const id = `${this.id}|${view}|${!!presenter}|${maxHeight || ""}|${narrow}${level ? `|${level}` : ""}`;
      LabSteps.stopWalk(gd); // the cursors are of the figure drawn: the next one starts without them
      if (!(v.wide && gd.__labDrawn === id)) {
        const fig = await this.figure(view, i, presenter, maxHeight, narrow, (gd.parentElement || gd).clientWidth);
        if (level) fig.layout = LabSteps.grownTo(fig.layout, level);
        await LabSteps.paint(gd, fig.data, fig.layout);
        gd.__labDrawn = id;
        gd.__labNatural = fig.natural; // the height before any cut: lab/app/page.js fits from it
        gd.__labSized = gd.layout;
        gd.__labNarrow = narrow;
      }
      if (v.wide) await LabSteps.moveMarker(gd, i);
      // A chapter's marks are of its own step and view: drawn again when that same figure is drawn again (a
      // resize, Gradio's echo of the chapter's step a moment later took them off: a warm server answers sooner),
      // off at any other.
      const kept = gd.__labMark;
      if (kept && kept.at === `${view}|${i}`) await LabSteps.mark(gd, kept.mark, kept.onContinue, kept.at);
      else await LabSteps.mark(gd, null);
      LabSteps.walkButton(gd);
    };
    gd.__labQueue = (gd.__labQueue || Promise.resolve()).then(run, run);
    return gd.__labQueue;
  }
};
