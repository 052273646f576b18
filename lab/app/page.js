// The app's page steps by itself (lab/app/steps_data.py): after a load it fetches the trace's step data
// once (GET lab/steps/<key>), and ◀ ▶, the slider (and its arrow keys) and play redraw the main figure,
// the side-by-side one, the headline and the summary here, with LabSteps (lab/export/stepper.js).
// The events that call window.labApp run no Python (lab/app/ui.py): the server is not asked.
window.labApp = (() => {
  const sets = new Map(); // trace key -> Promise<LabSteps>
  const ready = new Map(); // trace key -> its LabSteps, once its data came (compare's pairHeight does not wait)
  const state = {timer: null, ticket: 0, pending: 0};

  // While step data is on its way, the figure says so, on it (review 5 minor 2: a cold preset waits 8-15 s under
  // load, and an 11 px note under the brand was far from where the attendee looks): the figures are dimmed and
  // #step-loading sits over the top of the main one. A click made meanwhile is applied when it arrives (go).
  function loading(delta) {
    state.pending = Math.max(0, state.pending + delta);
    const on = state.pending > 0;
    let note = document.querySelector("#step-loading");
    const box = document.querySelector("#plot");
    if (!note && box) {
      note = document.createElement("div");
      note.id = "step-loading";
      note.setAttribute("role", "status");
      note.textContent = "loading this trace's steps… the figure changes when they come";
      // styled here: the app's CSS is scoped
      Object.assign(note.style, {position: "absolute", top: "56px", left: "50%", transform: "translateX(-50%)",
        zIndex: 20, fontSize: "16px", fontWeight: 600, color: "#6b4500", background: "#fff4d6",
        border: "1px solid #d9a400", borderRadius: "6px", padding: "8px 16px", pointerEvents: "none",
        boxShadow: "0 2px 8px rgba(0,0,0,.15)", maxWidth: "90%", textAlign: "center"});
      box.appendChild(note);
    }
    document.body.classList.toggle("lab-loading", on);
    if (note) note.style.visibility = on ? "visible" : "hidden";
    for (const gd of document.querySelectorAll("#plot .js-plotly-plot, #plot-compare .js-plotly-plot")) {
      gd.style.opacity = on ? "0.35" : "";
      gd.style.transition = "opacity .15s";
    }
  }

  function route(name, key) {
    return new URL(`lab/${name}/${encodeURIComponent(key)}`, location.origin + location.pathname);
  }

  // The server builds step data one trace at a time (lab/app/steps_data.py): 202 while it is queued or being
  // built, 503 while its queue is full; ask again after its Retry-After, for up to about three minutes.
  async function fetchSteps(key) {
    for (let t = 0; ; t++) {
      const r = await fetch(route("steps", key), {cache: "no-cache"});
      if ((r.status !== 503 && r.status !== 202) || t >= 90) return r;
      await new Promise((ok) => setTimeout(ok, 1000 * Number(r.headers.get("Retry-After") || 3)));
    }
  }

  // fresh: the trace's data changed on the server (kernel timings measured in the background); a new
  // id, so that a view of the whole trace is drawn again rather than only its marker moved.
  function data(key, fresh) {
    if (!key) return Promise.reject(new Error("no trace yet: run a scenario or upload a trace first"));
    if (!sets.has(key)) {
      loading(+1);
      const p = fetchSteps(key)
        .then(async (r) => {
          if (!r.ok) throw new Error(`the step data of this trace did not come (${r.status}): run it again`);
          const S = new LabSteps(await r.json(), fresh ? `${key}@${Date.now()}` : key);
          S.measuring = r.headers.get("X-Lab-Kernels") === "running";
          S.timed = r.headers.get("X-Lab-Kernels") === "done";
          ready.set(key, S);
          while (ready.size > 8) ready.delete(ready.keys().next().value);
          return S;
        });
      p.then(() => loading(-1), () => loading(-1));
      p.catch(() => sets.delete(key));
      sets.set(key, p);
      while (sets.size > 8) sets.delete(sets.keys().next().value);
    }
    return sets.get(key);
  }

  function plotDiv(id) {
    return document.querySelector(`#${id} .js-plotly-plot`);
  }

  // Presenter mode on a small screen (a projector's 1280x720): the figure ends above the fold, its
  // legend and axis included, with the page at its top.
  function maxHeight(gd, presenter) {
    if (!presenter || !gd) return undefined;
    const top = gd.getBoundingClientRect().top + window.scrollY;
    return Math.max(300, window.innerHeight - top - 8);
  }
  function fit(presenter) {
    const gd = plotDiv("plot");
    const h = maxHeight(gd, presenter);
    if (!gd || !gd.layout || !h) return;
    // A figure Gradio drew from the server is at its natural height; one LabSteps drew says its own.
    if (gd.__labSized !== gd.layout) gd.__labNatural = gd.layout.height;
    gd.__labSized = gd.layout; // relayout changes this object in place; a new figure brings another
    const want = LabSteps.fitted(gd.layout, gd.__labNatural || gd.layout.height, h);
    if (gd.layout.height > want) return Plotly.relayout(gd, {height: want});
  }

  // Step i (clamped) of the session's trace: the figures drawn here; [step, headline, summary] for Gradio.
  // Every call takes a ticket when it is made. Clicks made while the step data loads all wait for it; when
  // it arrives each draws what the LAST click asked for, so the figure, the headline and the step box never
  // show two different steps (a view picked, then a step typed, on a cold preset: issue 37 M1).
  async function go(key, ckey, i, view, presenter) {
    state.ticket += 1;
    state.shown = {key, ckey, i, view, presenter};
    document.body.dataset.labView = view; // the kernel view's ⟳ time again shows on it only (style.py)
    let S;
    for (;;) {
      const ticket = state.ticket;
      ({key, ckey, i, view, presenter} = state.shown);
      S = await data(key);
      if (ticket === state.ticket) break;
    }
    i = S.clamp(i);
    const draws = [];
    const gd = plotDiv("plot");
    const cg = ckey ? plotDiv("plot-compare") : null;
    // The pair's height where the compared trace's data is here; the main figure never waits for it (a cold
    // compared preset takes seconds): it is drawn again at the pair's height when that data comes, unless the
    // attendee has moved on meanwhile.
    const C0 = cg && ready.get(ckey);
    const level = gd && C0 ? await pairHeight(S, C0, view, i, presenter, gd, cg) : undefined;
    if (gd) draws.push(S.draw(gd, view, i, presenter, maxHeight(gd, presenter), level));
    if (cg) {
      const h = maxHeight(cg, presenter);
      draws.push(data(ckey).then(async (C) => {
        const pair = level || (gd ? await pairHeight(S, C, view, i, presenter, gd, cg) : undefined);
        await C.draw(cg, view, Math.min(i, C.last), presenter, h, pair);
        const now = state.shown;
        const still = now.key === key && now.ckey === ckey && S.clamp(now.i) === i && now.view === view;
        if (pair && !level && gd && still) {
          await S.draw(gd, view, i, presenter, maxHeight(gd, presenter), pair);
        }
      }));
    }
    const [words] = await Promise.all([S.words(i), ...draws]);
    window.__labStepped = (window.__labStepped || 0) + 1;
    if (state.timer && i >= S.last) stop();
    return [i, words[0], words[1]];
  }

  // Compare side by side: the two figures take the taller one's height, so that they end level and neither has a
  // gap the other lacks (their own heights follow their traces' rows: review 5 minor 12). C: the compared trace's
  // steps, once its data came (go draws the main figure meanwhile).
  async function pairHeight(S, C, view, i, presenter, gd, cg) {
    const height = async (T, g, j) => {
      const width = (g.parentElement || g).clientWidth;
      const fig = await T.figure(view, j, presenter, maxHeight(g, presenter), LabSteps.isNarrow(g), width);
      return fig.layout.height || 0;
    };
    return Math.max(await height(S, gd, i), await height(C, cg, Math.min(i, C.last))) || undefined;
  }

  // After compare is switched on or off, or presenter mode toggled: both plots take their box's width, and
  // are drawn again where that made them narrow or wide (LabSteps.narrowed). ckey: the compared trace's key.
  async function relayout(presenter, ckey) {
    // Compare side by side: the two figures take the row; the knobs step aside (style.py, body.comparing).
    if (ckey !== undefined) document.body.classList.toggle("comparing", !!ckey);
    await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
    for (const id of ["plot", "plot-compare"]) {
      const gd = plotDiv(id);
      if (gd && gd.offsetParent) await Plotly.Plots.resize(gd);
    }
    const s = state.shown;
    if (s && ckey !== undefined) s.ckey = ckey || null;
    if (s && s.key) await go(s.key, s.ckey, s.i, s.view, presenter);
    await fit(presenter);
  }

  // A plot that became narrow or wide after its drawing (compare on or off, the window resized) is drawn
  // again, once the boxes settle (LabSteps.narrowed).
  const resized = new ResizeObserver(() => {
    const s = state.shown;
    const stale = ["plot", "plot-compare"].some((id) => {
      const gd = plotDiv(id);
      return gd && gd.offsetParent && LabSteps.isNarrow(gd) !== !!gd.__labNarrow;
    });
    if (!s || !s.key || !stale) return;
    clearTimeout(state.redraw);
    state.redraw = setTimeout(() => {
      const now = state.shown; // read when it fires: a step clicked meanwhile is the one to draw
      go(now.key, now.ckey, now.i, now.view, now.presenter);
    }, 150);
  });
  function watchWidths() {
    for (const id of ["plot", "plot-compare"]) {
      const box = document.getElementById(id);
      if (box && !box.__labWatched) {
        resized.observe(box);
        box.__labWatched = true;
      }
    }
  }

  // Another view picked: drawn here at this step; its note (markdown) for Gradio.
  // Its ticket is taken at the click (go), not after the data came: a step typed later still wins.
  async function show(key, ckey, i, view, presenter) {
    await go(key, ckey, i, view, presenter);
    const s = state.shown;
    return (await data(s.key)).byName[s.view].note_md;
  }

  // A tour stop ("step|view"): that step in that view; [step, view, headline, summary, note] for Gradio.
  async function tour(key, ckey, stop, presenter) {
    const m = /^(\d+)\|(\w+)$/.exec(stop || "");
    if (!m || !(await data(key)).byName[m[2]]) throw new Error(`not a tour stop: ${stop}`);
    const [i, headline, summary] = await go(key, ckey, Number(m[1]), m[2], presenter);
    // The chapter's sentence on the figure, at what it names; the page scrolls to the figure (issue 49).
    const chapters = (await data(key)).D.tour || [];
    const at = chapters.findIndex((t) => `${t.step}|${t.view}` === stop);
    const gd = plotDiv("plot");
    const cont = at + 1 < chapters.length ? continueTour : null;
    if (at >= 0 && gd) await LabSteps.mark(gd, chapters[at].mark, cont, `${state.shown.view}|${i}`);
    (document.querySelector("#plot") || document.querySelector("#topbar")).scrollIntoView({block: "start"});
    const s = state.shown;
    return [i, s.view, headline, summary, (await data(s.key)).byName[s.view].note_md];
  }

  function label(text, aria) {
    const b = document.querySelector("#play");
    if (b) {
      b.textContent = text;
      b.setAttribute("aria-label", aria);
    }
  }
  function stop() {
    clearInterval(state.timer);
    state.timer = null;
    label("▶ play", "play (5 steps a second)");
  }
  // Play / pause, one toggle: each tick is a click on ▶ next (so it redraws here too); play at the last
  // step starts again at 0.
  async function toggle(key, ckey, i, view, presenter, headline, summary) {
    if (state.timer) {
      stop();
      return [i, headline, summary];
    }
    const S = await data(key);
    const out = i >= S.last ? await go(key, ckey, 0, view, presenter) : [i, headline, summary];
    if (S.last > 0) {
      label("❚❚ pause", "pause");
      state.timer = setInterval(() => document.querySelector("#next").click(), 200);
    }
    return out;
  }

  // After a load: stop playing and fetch the new trace's step data. The server drew this step's figure;
  // a view of the whole trace is adopted as it is (the next step only moves its marker).
  // A load refused (the status says "Not run"), or a bad value in the address on the first load: the
  // message sits in the settings, far below the top bar where the click was; bring it into view.
  async function showProblem() {
    await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
    const msg = document.querySelector("#spec-msg .inline-error, #upload-msg .inline-error");
    const status = document.querySelector("#status");
    const refused = status && status.innerText.trim().startsWith("Not run");
    if (msg && (refused || !state.loadedOnce)) msg.scrollIntoView({block: "center"});
    state.loadedOnce = true;
  }

  // ▶ continue: the next chapter of the tour (the radio after the one picked; the first where none is).
  function continueTour() {
    const labels = Array.from(document.querySelectorAll("#tour label"));
    const now = labels.findIndex((l) => l.querySelector("input:checked"));
    const next = labels[now + 1];
    if (next) next.click();
  }
  function add_continue() {
    const box = document.querySelector("#tour");
    if (!box || document.querySelector("#tour-next")) return;
    const b = document.createElement("button");
    b.id = "tour-next";
    b.type = "button";
    b.textContent = "▶ continue the story";
    b.title = "the next chapter of the guided tour, drawn on the figure";
    b.addEventListener("click", continueTour);
    box.prepend(b);
  }

  // Names for the top bar's glyph buttons (a screen reader otherwise reads "◀" and "▶").
  function label_buttons() {
    for (const [id, name] of [["prev", "previous step"], ["next", "next step"], ["play", "play (5 steps a second)"]]) {
      const b = document.querySelector(`#${id}`);
      if (b && !b.getAttribute("aria-label")) b.setAttribute("aria-label", name);
    }
  }

  // A short screen (a projector's 720 px): presenter mode's type a size smaller (ui.py's CSS, body.short;
  // Gradio's CSS scoping leaves no @media rule working).
  function mark_short() {
    document.body.classList.toggle("short", window.innerHeight < 820);
  }
  window.addEventListener("resize", mark_short);

  // Half a laptop (683 px, the workshop's side-by-side layout): below NARROW_PAGE_PX the page is compact
  // (lab/app/style.py, body.narrow): one control row (◀ step ▶ play and the keys' hint), the runner, Run and
  // presenter behind "⋯ more", the headline one line that opens its era table on a click, the view picker one
  // scrolling row; the figure's top within the first 450 px at 683x768 (issue 49, ux review 5 major A).
  const NARROW_PAGE_PX = 800;
  // Below KNOBS_BESIDE_PX the knobs are behind "⋯ more" and, opened, above the figure: beside it they left the
  // figure under LabSteps.NARROW_PX at 960 px.
  const KNOBS_BESIDE_PX = 1200;
  function mark_narrow() {
    document.body.classList.toggle("narrow", window.innerWidth < NARROW_PAGE_PX);
    const above = window.innerWidth < KNOBS_BESIDE_PX;
    document.body.classList.toggle("knobs-above", above);
    // Set on the element (the app's scoped CSS outranks a body-class rule on this one).
    const knobs = document.querySelector("#knobs");
    if (knobs) {
      for (const [k, v] of [["flex", "1 1 100%"], ["order", "-1"], ["flex-direction", "row"], ["flex-wrap", "wrap"]]) {
        if (above) knobs.style.setProperty(k, v, "important");
        else knobs.style.removeProperty(k);
      }
    }
  }
  window.addEventListener("resize", mark_narrow);
  function add_compact_controls() {
    const bar = document.querySelector("#topbar");
    if (!bar || document.querySelector("#keys-hint")) return;
    const hint = document.createElement("span");
    hint.id = "keys-hint";
    hint.textContent = "← → step · space plays";
    hint.title = "anywhere on the page: ← previous step, → next step, Space play / pause";
    const more = document.createElement("button");
    more.id = "more";
    more.type = "button";
    more.textContent = "⋯ more";
    more.title = "runner, Run, presenter mode and the what-if knobs";
    more.setAttribute("aria-expanded", "false");
    more.addEventListener("click", () => {
      const open = document.body.classList.toggle("lab-more");
      more.setAttribute("aria-expanded", String(open));
    });
    // Under the step slider, beside ◀ ▶ and play: in the bar's row it pushed presenter onto a row of its own.
    (document.querySelector("#step") || bar).appendChild(hint);
    bar.appendChild(more);
  }
  // ↩ after a custom run is an icon (a name in it wrapped the top bar at 1366, minor 18): its class names the
  // preset it leads back to (lab/app/loading.py back_class), said on hover and to a screen reader.
  const backTitle = (e) => {
    const b = e.target.closest && e.target.closest("#back");
    const c = b && [...b.classList].find((x) => x.startsWith("back-to-"));
    if (c) b.title = "back to the preset " + c.slice(8), b.setAttribute("aria-label", b.title);
  };
  document.addEventListener("pointerover", backTitle);
  // Gradio's bundled Source Sans Pro SemiBold (its weight 600) is a 5 kB subset: bold words drew some capitals
  // from the regular face, lighter ("FLᴀSHINFER", "CTᴀ": ux review 5, minor 22). Weight 600 takes the bundled
  // Bold face, declared after the theme's so it wins (the theme's URL, relative to the page).
  const semibold = document.createElement("style");
  semibold.id = "lab-semibold";
  semibold.textContent = "@font-face {font-family: 'Source Sans Pro'; font-weight: 600; font-style: normal; " +
    "src: url('static/fonts/SourceSansPro/SourceSansPro-Bold.woff2') format('woff2')}";
  document.head.appendChild(semibold);
  document.addEventListener("focusin", backTitle);
  // The headline's one line opens (and closes) its era table at half a laptop.
  document.addEventListener("click", (e) => {
    if (e.target.closest && e.target.closest("#headline .hl-line") && !e.target.closest("a")) {
      document.body.classList.toggle("hl-open");
    }
  });
  // The slider's ↺ sets its value back to 0 without an input event: send one, so the page redraws step 0.
  document.addEventListener("click", (e) => {
    if (!e.target.closest || !e.target.closest("#step .reset-button")) return;
    setTimeout(() => {
      const range = document.querySelector("#step input[type=range]");
      if (range) range.dispatchEvent(new Event("input", {bubbles: true}));
    }, 0);
  });

  // ←/→ step and Space plays anywhere on the page, as in the exported file (lab/export/page.js), unless the
  // key goes to something that takes text or its own arrows (a box, a list, the slider, a radio).
  window.addEventListener("keydown", (e) => {
    const t = e.target;
    if (e.altKey || e.ctrlKey || e.metaKey || e.shiftKey || e.defaultPrevented) return;
    if (t.closest && t.closest("input, textarea, select, [contenteditable], [role=listbox], [role=option]")) return;
    if (e.key === " " && t.closest && t.closest("button")) return; // Space presses the focused button itself
    const id = {ArrowLeft: "prev", ArrowRight: "next", " ": "play"}[e.key];
    const b = id && document.querySelector(`#${id}`);
    if (!b || !b.offsetParent) return; // not on the lab's tab (the deployment tab, say)
    e.preventDefault();
    b.click();
  });

  // Tab out of a dropdown closes its list: Gradio's key handler reopens it after the blur has closed it
  // (it awaits a tick first), leaving the list open over the headline. Tab only moves the focus here.
  window.addEventListener(
    "keydown",
    (e) => {
      if (e.key === "Tab" && e.target.matches && e.target.matches("input[role=combobox]")) e.stopPropagation();
    },
    true,
  );

  // The opening preset's kernel timings are being measured in the background (lab/app/background.py):
  // ask every 2 s how that goes; once done, fetch the trace's data again and redraw what is on screen
  // (a view of the whole trace is drawn anew: the kernel view then shows the timings).
  async function watch(key) {
    if (state.watching === key) return;
    state.watching = key;
    for (let t = 0; t < 300 && state.watching === key; t++) {
      await new Promise((r) => setTimeout(r, 2000));
      let now;
      try {
        now = (await (await fetch(route("kernels", key), {cache: "no-store"})).json()).kernels;
      } catch (e) {
        break;
      }
      if (now === "running") continue;
      if (now === "done") {
        sets.delete(key);
        await data(key, true);
        const s = state.shown;
        if (s && s.key === key) await go(s.key, s.ckey, s.i, s.view, s.presenter);
      }
      break;
    }
    if (state.watching === key) state.watching = null;
  }

  // Timed in the background before this page's step data came: the server drew the page's first kernel figure
  // from the engine's trace, without the timings; draw it again, once, from the data that has them.
  async function retimed(key) {
    if (state.retimed === key) return;
    state.retimed = key;
    sets.delete(key);
    await data(key, true);
    const s = state.shown;
    if (s && s.key === key) await go(s.key, s.ckey, s.i, s.view, s.presenter);
  }

  async function loaded(key, ckey, i, view, presenter) {
    state.shown = {key, ckey, i, view, presenter};
    document.body.dataset.labView = view;
    // presenter mode's layout (style.py) before anything is measured: the URL sync sets it too, later
    document.body.classList.toggle("presenter", !!presenter);
    stop();
    mark_short();
    mark_narrow();
    add_compact_controls();
    add_continue();
    label_buttons();
    await showProblem();
    if (!key) return;
    watchWidths();
    const ready = Promise.all([data(key), ckey ? data(ckey) : null]).catch((e) => console.warn(e));
    for (let t = 0; t < 100 && !(plotDiv("plot") || {}).data; t++) await new Promise((r) => setTimeout(r, 50));
    const gd = plotDiv("plot");
    // LabSteps.draw's id: a wide view moves its marker. A narrow plot is drawn again (LabSteps.narrowed).
    if (gd && !presenter && !LabSteps.isNarrow(gd)) {
      gd.__labDrawn = `${key}|${view}|false||false`;
      gd.__labNarrow = false;
    }
    if (presenter) await fit(presenter);
    if (gd) LabSteps.walkButton(gd); // the hero the server drew: its ▶ walk (LabSteps.walk)
    await ready;
    await redrawServersFigure();
    keepInPlace();
    const S = await data(key).catch(() => null);
    if (S && S.measuring) watch(key);
    else if (S && S.timed && view === "kernels") await retimed(key);
    window.__labLoaded = (window.__labLoaded || 0) + 1;
  }

  // The server's first figure knows neither its box's width nor presenter mode's window (review 5 minors 10-11:
  // at 1280x720 the hero's and the block table's subtitles ran past the right edge, and the plot kept the width
  // it had beside the knobs): where presenter mode is on or its subtitle is wider than the box, the page draws it
  // again by its own rules (LabSteps: the subtitle behind the "?", the figure cut to the window).
  async function redrawServersFigure() {
    const gd = plotDiv("plot");
    const s = state.shown;
    if (!gd || !gd.layout || !s || !s.key) return;
    const width = (gd.parentElement || gd).clientWidth;
    if (!s.presenter && !LabSteps.subtitleTooWide(gd.layout, width)) return;
    gd.__labDrawn = null; // drawn by Gradio: LabSteps must not take it for its own
    if (gd.offsetParent) await Plotly.Plots.resize(gd);
    await go(s.key, s.ckey, s.i, s.view, s.presenter);
    if (s.presenter) await fit(s.presenter);
  }

  // A knob's background run lands without moving what the attendee looks at: the figure's top is noted when
  // the knob changes (anchor) and, once the new trace is drawn, the page scrolls by however far a grown
  // headline or top bar pushed it (issue 49).
  function anchor(...args) {
    const gd = plotDiv("plot");
    state.anchor = gd ? gd.getBoundingClientRect().top : null;
    return args;
  }
  function keepInPlace() {
    const gd = plotDiv("plot");
    if (state.anchor === null || state.anchor === undefined || !gd) return;
    const moved = gd.getBoundingClientRect().top - state.anchor;
    state.anchor = null;
    if (Math.abs(moved) > 1) window.scrollBy(0, moved);
  }

  return {data, go, show, tour, toggle, stop, loaded, relayout, fit, state, anchor};
})();
