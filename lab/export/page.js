// The exported page (lab/export): every view at every step of one trace, stepped here with no server
// and no network. The drawing is LabSteps' (lab/export/stepper.js, the app steps with it too).
(function () {
  "use strict";
  const D = JSON.parse(document.getElementById("lab-data").textContent);
  const S = new LabSteps(D);
  const $ = (id) => document.getElementById(id);
  const state = {step: 0, view: D.views[0].name, timer: null, seq: 0};

  async function draw() {
    const seq = ++state.seq;
    const view = state.view;
    const i = state.step;
    const [headline, summary] = await S.words(i);
    if (seq !== state.seq) return; // a later step or view was asked for meanwhile
    $("headline").innerHTML = headline;
    $("summary").innerHTML = summary;
    $("loading") && $("loading").remove();
    await S.draw($("plot"), view, i, false);
    if (seq !== state.seq) return;
    document.body.dataset.drawn = `${view}:${i}`;
    if (!window.__labFirstFigure) window.__labFirstFigure = performance.now();
  }

  function show() {
    $("step").value = state.step;
    $("stepbox").value = state.step;
    for (const b of $("views").children) b.setAttribute("aria-selected", String(b.dataset.view === state.view));
    $("note").innerHTML = S.byName[state.view].note;
    clearTimeout(state.hashTimer);
    state.hashTimer = setTimeout(() => history.replaceState(null, "", `#step=${state.step}&view=${state.view}`), 300);
    return draw();
  }
  function go(i) {
    state.step = S.clamp(Number.isFinite(Number(i)) ? i : state.step);
    return show();
  }
  function setView(name) {
    if (S.byName[name]) state.view = name;
    return show();
  }
  function setPlaying(on) {
    clearInterval(state.timer);
    state.timer = null;
    if (on) {
      if (state.step >= S.last) go(0);
      state.timer = setInterval(() => (state.step >= S.last ? setPlaying(false) : go(state.step + 1)), 200);
    }
    $("play").textContent = on ? "❚❚ pause" : "▶ play";
    $("play").setAttribute("aria-label", on ? "pause" : "play (5 steps a second)");
  }

  function build() {
    document.title = `max_seq_len lab: ${D.title}`;
    // The title comes from the trace (scenario.name): text, never markup.
    const brand = document.createElement("b");
    brand.textContent = "max_seq_len lab";
    $("brand").replaceChildren(brand, ` · ${D.title}`);
    $("brand").title = D.spec;
    $("step").max = S.last;
    $("stepbox").max = S.last;
    $("of").textContent = `of 0–${S.last}`;
    for (const v of D.views) {
      const b = document.createElement("button");
      b.textContent = v.label;
      b.dataset.view = v.name;
      b.setAttribute("role", "tab");
      b.addEventListener("click", () => setView(v.name));
      $("views").appendChild(b);
    }
    // The tour: chapters whose sentence is drawn on the figure (lab/views/tour_marks.py); the box's
    // "▶ continue" opens the next one, and the page scrolls to the figure (issue 49).
    const chapter = async (k) => {
      const t = D.tour[k];
      if (!t) return;
      if (S.byName[t.view]) state.view = t.view;
      await go(t.step);
      const next = k + 1 < D.tour.length ? () => chapter(k + 1) : null;
      await LabSteps.mark($("plot"), t.mark, next, `${state.view}|${S.clamp(t.step)}`);
      $("plot").scrollIntoView({block: "start"});
    };
    D.tour.forEach((t, k) => {
      const b = document.createElement("button");
      b.textContent = `${k + 1}. step ${t.step}: ${t.text}`;
      b.addEventListener("click", () => chapter(k));
      $("tour").appendChild(b);
    });
    $("prev").addEventListener("click", () => go(state.step - 1));
    $("next").addEventListener("click", () => go(state.step + 1));
    $("play").addEventListener("click", () => setPlaying(!state.timer));
    $("step").addEventListener("input", (e) => go(e.target.value));
    $("stepbox").addEventListener("change", (e) => go(e.target.value));
    document.addEventListener("keydown", (e) => {
      const tag = (e.target.tagName || "").toLowerCase();
      if (tag === "input" || tag === "textarea" || e.altKey || e.ctrlKey || e.metaKey) return;
      const to = {ArrowRight: state.step + 1, ArrowLeft: state.step - 1, Home: 0, End: S.last}[e.key];
      if (to !== undefined) {
        e.preventDefault();
        go(to);
      }
    });
    const h = new URLSearchParams(location.hash.slice(1));
    if (S.byName[h.get("view")]) state.view = h.get("view");
    go(h.get("step") || 0);
  }

  window.labPage = {go, setView, setPlaying, state, data: D};
  build();
})();
