// The exported page: every view at every step of one trace, stepped in the page with no server and no
// network (lab/export/payload.py writes the data it reads). A view's stream is inflated the first time
// it is shown; a step's figure is parsed when it is drawn; a view of the whole trace is drawn once and
// only its step marker (the shape named "step") moves.
(function () {
  "use strict";
  const D = JSON.parse(document.getElementById("lab-data").textContent);
  const $ = (id) => document.getElementById(id);
  const byName = Object.fromEntries(D.views.map((v) => [v.name, v]));
  const last = D.steps - 1;
  const state = {step: 0, view: D.views[0].name, drawn: null, timer: null, seq: 0};
  const streams = {};
  const config = {responsive: true, displaylogo: false};

  function bytesOf(b64) {
    const s = atob(b64);
    const a = new Uint8Array(s.length);
    for (let i = 0; i < s.length; i++) a[i] = s.charCodeAt(i);
    return a;
  }
  async function inflate(b64) {
    const stream = new Blob([bytesOf(b64)]).stream().pipeThrough(new DecompressionStream("gzip"));
    return (await new Response(stream).text()).split("\n");
  }
  function lines(key, b64) {
    return streams[key] || (streams[key] = inflate(b64));
  }

  function moveMarker(gd, i) {
    const shapes = (gd.layout && gd.layout.shapes) || [];
    const k = shapes.findIndex((s) => s.name === "step");
    if (k >= 0 && shapes[k].x0 !== i) return Plotly.relayout(gd, {[`shapes[${k}].x0`]: i, [`shapes[${k}].x1`]: i});
  }

  async function draw() {
    const seq = ++state.seq;
    const v = byName[state.view];
    const i = state.step;
    const [figLines, words] = await Promise.all([lines(v.name, v.gz), lines("words", D.words)]);
    if (seq !== state.seq) return; // a later step or view was asked for meanwhile
    const [headline, summary] = JSON.parse(words[i]);
    $("headline").innerHTML = headline;
    $("summary").innerHTML = summary;
    const gd = $("plot");
    if (v.wide && state.drawn === v.name) {
      await moveMarker(gd, i);
    } else {
      const spec = JSON.parse(figLines[v.wide ? 0 : i]);
      const layout = Object.assign({template: D.template}, spec.layout);
      $("loading") && $("loading").remove();
      await Plotly.react(gd, spec.data, layout, config);
      state.drawn = v.wide ? v.name : null;
      if (v.wide) await moveMarker(gd, i);
    }
    if (seq !== state.seq) return;
    document.body.dataset.drawn = `${v.name}:${i}`;
    if (!window.__labFirstFigure) window.__labFirstFigure = performance.now();
  }

  function show() {
    $("step").value = state.step;
    $("stepbox").value = state.step;
    for (const b of $("views").children) b.setAttribute("aria-selected", String(b.dataset.view === state.view));
    $("note").innerHTML = byName[state.view].note;
    clearTimeout(state.hashTimer);
    state.hashTimer = setTimeout(() => history.replaceState(null, "", `#step=${state.step}&view=${state.view}`), 300);
    return draw();
  }

  function go(i) {
    i = Math.round(Number(i));
    if (!Number.isFinite(i)) i = state.step;
    state.step = Math.min(Math.max(i, 0), last);
    return show();
  }
  function setView(name) {
    if (byName[name]) state.view = name;
    return show();
  }
  function setPlaying(on) {
    clearInterval(state.timer);
    state.timer = null;
    if (on) {
      if (state.step >= last) go(0);
      state.timer = setInterval(() => {
        if (state.step >= last) return setPlaying(false);
        go(state.step + 1);
      }, 200);
    }
    $("play").textContent = on ? "❚❚ pause" : "▶ play";
    $("play").setAttribute("aria-label", on ? "pause" : "play (5 steps a second)");
  }

  function build() {
    document.title = `max_seq_len lab: ${D.title}`;
    $("brand").innerHTML = `<b>max_seq_len lab</b> · ${D.title}`;
    $("brand").title = D.spec;
    $("step").max = last;
    $("stepbox").max = last;
    $("of").textContent = `of 0–${last}`;
    for (const v of D.views) {
      const b = document.createElement("button");
      b.textContent = v.label;
      b.dataset.view = v.name;
      b.setAttribute("role", "tab");
      b.addEventListener("click", () => setView(v.name));
      $("views").appendChild(b);
    }
    for (const t of D.tour) {
      const b = document.createElement("button");
      b.textContent = `step ${t.step}: ${t.text}`;
      b.addEventListener("click", () => {
        state.view = byName[t.view] ? t.view : state.view;
        go(t.step);
        $("bar").scrollIntoView({block: "start"});
      });
      $("tour").appendChild(b);
    }
    $("prev").addEventListener("click", () => go(state.step - 1));
    $("next").addEventListener("click", () => go(state.step + 1));
    $("play").addEventListener("click", () => setPlaying(!state.timer));
    $("step").addEventListener("input", (e) => go(e.target.value));
    $("stepbox").addEventListener("change", (e) => go(e.target.value));
    document.addEventListener("keydown", (e) => {
      const tag = (e.target.tagName || "").toLowerCase();
      if (tag === "input" || tag === "textarea" || e.altKey || e.ctrlKey || e.metaKey) return;
      const to = {ArrowRight: state.step + 1, ArrowLeft: state.step - 1, Home: 0, End: last}[e.key];
      if (to !== undefined) {
        e.preventDefault();
        go(to);
      }
    });
    const h = new URLSearchParams(location.hash.slice(1));
    if (byName[h.get("view")]) state.view = h.get("view");
    go(h.get("step") || 0);
  }

  window.labPage = {go, setView, setPlaying, state, data: D};
  build();
})();
