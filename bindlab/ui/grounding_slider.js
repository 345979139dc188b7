// The α slider computed in the browser (issue 31). Loaded once per page when the first payload arrives
// (bindlab/ui/slider_js.py wraps it); no server call while the slider moves.
//
// The server sends, on Load, `bindlab.studies.grounding.slider_payload`: per test image and value the native score
// s_q and the direction score s_e (float32, base64), the labels, qe = q·d per value and the margin curves. The
// grounded score of image i for value v at strength α is (s_q + α s_e) / sqrt(1 + α² + 2 α qe) — the server's
// `pencil_scores` with a = 1 — and AP, macro-mAP, top-1 and top-8 precision follow exactly as in
// `bindlab.eval.metrics` (sklearn's AP with ties as one threshold; tie-aware top-1). The views are then updated in
// place: the summary's numbers, the margin curve's current point, the grounded AP bars and the q′(α) arrow.
(() => {
  if (window.bindlabSlider) return window.bindlabSlider;

  const decode = (b64, Type) => {
    const bin = atob(b64);
    const bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    return new Type(bytes.buffer);
  };

  // Prepared once per payload: decoded arrays and each value's positives (the last few payloads are kept: the
  // Grounding tab and the Walkthrough may both have one).
  const preparedById = new Map();
  const prepare = (p) => {
    if (preparedById.has(p.id)) return preparedById.get(p.id);
    const vidx = decode(p.value_idx, Uint16Array);
    const npos = new Int32Array(p.k);
    for (let i = 0; i < p.n; i++) npos[vidx[i]]++;
    const prepared = {
      id: p.id, n: p.n, k: p.k, values: p.values, qe: p.qe, c: p.c, vidx, npos, deltaNorms: p.delta_norms,
      apNative: p.ap_native.map((a) => (a === null ? NaN : a)),
      sq: decode(p.s_q, Float32Array), se: decode(p.s_e, Float32Array),
      curveAlphas: p.curve_alphas, curveMargin: decode(p.curve_margin, Float64Array),
      tieTol: p.tie_tol, topK: p.top_k,
      col: new Float64Array(p.n), srt: new Float64Array(p.n),
      scores: new Float64Array(p.n * p.k), pos: new Float64Array(p.n),
    };
    preparedById.set(p.id, prepared);
    if (preparedById.size > 3) preparedById.delete(preparedById.keys().next().value);
    return prepared;
  };

  const lowerBound = (a, x, len) => {  // first index with a[i] >= x (numpy searchsorted side="left")
    let lo = 0, hi = len;
    while (lo < hi) { const mid = (lo + hi) >>> 1; if (a[mid] < x) lo = mid + 1; else hi = mid; }
    return lo;
  };

  // AP of one column: mean over positives of TP(score >= s_i) / N(score >= s_i) (metrics.average_precision_columns).
  const averagePrecision = (P, col, v) => {
    const n = P.n, m = P.npos[v];
    if (m === 0) return NaN;
    const srt = P.srt, pos = P.pos;
    let j = 0;
    for (let i = 0; i < n; i++) {
      if (Number.isNaN(col[i])) return NaN;
      srt[i] = col[i];
      if (P.vidx[i] === v) pos[j++] = col[i];
    }
    srt.sort();
    const ps = pos.subarray(0, m).sort();
    let total = 0;
    for (let t = 0; t < m; t++) total += (m - lowerBound(ps, ps[t], m)) / (n - lowerBound(srt, ps[t], n));
    return total / m;
  };

  // Everything the views show at one α (the numbers of studies.grounding.slider_view that depend on α).
  const readout = (P, alpha, v) => {
    const { n, k, sq, se, scores } = P;
    const ap = new Array(k);
    for (let w = 0; w < k; w++) {
      const norm = Math.sqrt(Math.max(1 + alpha * alpha + 2 * alpha * P.qe[w], 0));
      const div = norm > 0 ? norm : NaN;
      const col = P.col;
      for (let i = 0; i < n; i++) col[i] = (sq[i * k + w] + se[i * k + w] * alpha) / div;
      scores.set(col, w * n);
      ap[w] = averagePrecision(P, col, w);
    }
    // top-1: tie-aware credit (metrics.mcq_credit), a NaN row scores 0
    let credit = 0;
    for (let i = 0; i < n; i++) {
      let top = -Infinity, nan = false;
      for (let w = 0; w < k; w++) { const s = scores[w * n + i]; if (Number.isNaN(s)) nan = true; else if (s > top) top = s; }
      if (nan) continue;
      let tied = 0;
      for (let w = 0; w < k; w++) if (scores[w * n + i] >= top - P.tieTol) tied++;
      if (scores[P.vidx[i] * n + i] >= top - P.tieTol) credit += 1 / Math.max(tied, 1);
    }
    // top-K of value v, descending, ties in gallery order (a stable argsort of -score)
    const best = [];
    for (let i = 0; i < n; i++) {
      const s = scores[v * n + i];
      if (Number.isNaN(s) || (best.length === P.topK && s <= best[best.length - 1][0])) continue;
      let at = best.length;
      while (at > 0 && best[at - 1][0] < s) at--;
      best.splice(at, 0, [s, i]);
      if (best.length > P.topK) best.pop();
    }
    const finite = ap.filter((a) => !Number.isNaN(a));
    return {
      alpha, value: P.values[v], value_index: v, ap_grounded: ap,
      map_grounded: finite.length ? finite.reduce((a, b) => a + b, 0) / finite.length : NaN,
      top1_grounded: credit / n,
      top_precision: best.length ? best.filter(([, i]) => P.vidx[i] === v).length / best.length : NaN,
      top_rows: best.map(([, i]) => i),
      point: interp(alpha, P.curveAlphas, (j) => P.curveMargin[j * k + v]),
    };
  };

  const interp = (x, xs, f) => {  // numpy.interp on an ascending grid
    const last = xs.length - 1;
    if (x <= xs[0]) return f(0);
    if (x >= xs[last]) return f(last);
    let j = lowerBound(xs, x, xs.length);
    if (xs[j] === x) return f(j);
    j -= 1;
    return f(j) + (x - xs[j]) * (f(j + 1) - f(j)) / (xs[j + 1] - xs[j]);
  };

  // Python's f"{x:.{d}f}": toFixed rounds the exact binary value too, but an exact tie goes to the even digit.
  const fmt = (x, d, signed = false) => {
    if (x === null || x === undefined || Number.isNaN(x)) return "nan";
    let s = x.toFixed(d);
    const exact = Math.abs(x).toFixed(Math.min(d + 30, 100));
    const tail = exact.slice(exact.indexOf(".") + 1 + d);
    if (/^50*$/.test(tail)) {  // a tie: round half to even, as Python does
      const scaled = Math.floor(Math.abs(x) * 10 ** d);
      const even = scaled % 2 === 0 ? scaled : scaled + 1;
      s = (Math.sign(x) * even / 10 ** d).toFixed(d);
    }
    return signed && !s.startsWith("-") ? "+" + s : s;
  };

  const setText = (id, text) => { const el = document.getElementById(id); if (el) el.textContent = text; };
  const plot = (id) => document.querySelector(`#${id} .js-plotly-plot`);
  const Plotly = () => window.Plotly;

  // The figures of bindlab.present.grounding_figures, updated in two ways. While the slider moves, the parts that
  // move (the margin curve's current point, the grounded AP bars, the q'(α) arrow) are drawn as overlays above
  // plotly's SVG and moved by CSS transforms only, placed with plotly's own axis mappings; the originals are hidden.
  // The compositor moves such an element without repainting anything, where editing the SVG repaints the whole
  // figure (the plane's 1,500 points) and a plotly restyle costs 30-70 ms per figure without a GPU. Once the slider
  // rests for SETTLE_MS, the overlays go and plotly redraws the same state, legends included (its figure data stay
  // canonical).
  const SETTLE_MS = 250;
  const traceGroup = (gd, layer, index) =>
    [...gd.querySelectorAll(`.${layer} .trace`)].find((g) => g.__data__ && g.__data__[0] && g.__data__[0].trace
                                                         && g.__data__[0].trace.index === index);
  const axes = (gd) => gd._fullLayout && gd._fullLayout.xaxis && gd._fullLayout.yaxis
    ? [gd._fullLayout.xaxis, gd._fullLayout.yaxis] : null;
  const X = (ax, v) => ax[0]._offset + ax[0].l2p(v), Y = (ax, v) => ax[1]._offset + ax[1].l2p(v);

  // An absolutely placed element over the figure, in its own compositing layer (will-change: transform).
  const overlay = (gd, key, style) => {
    const box = gd.querySelector(".svg-container");
    if (!box) return null;
    let el = box.querySelector(`.bl-overlay[data-key="${key}"]`);
    if (!el) {
      el = document.createElement("div");
      el.className = "bl-overlay";
      el.dataset.key = key;
      el.setAttribute("style", "position:absolute;left:0;top:0;pointer-events:none;will-change:transform;" +
                               "z-index:10;" + style);
      box.appendChild(el);
    }
    return el;
  };
  const hide = (el) => {  // an original plotly element, while its overlay stands in for it
    if (el && el.style.visibility !== "hidden") { el.style.visibility = "hidden"; el.dataset.blHidden = "1"; }
  };
  const clearOverlays = (gd) => {
    gd.querySelectorAll(".bl-overlay").forEach((el) => el.remove());
    gd.querySelectorAll("[data-bl-hidden]").forEach((el) => { el.style.visibility = ""; delete el.dataset.blHidden; });
  };
  const colourOf = (el, fallback) => (el && (el.style.fill || el.getAttribute("fill"))) || fallback;

  const drawPoint = (gd, r) => {  // margin curve: trace 1 is the current point
    const ax = axes(gd), g = traceGroup(gd, "scatterlayer", 1), pt = g && g.querySelector("path.point");
    if (!ax || !pt || !Number.isFinite(r.point)) return;
    const size = 12;
    const dot = overlay(gd, "point", `width:${size}px;height:${size}px;border-radius:50%;` +
                                     `background:${colourOf(pt, "#000")};`);
    if (!dot) return;
    hide(pt);
    dot.style.transform = `translate(${X(ax, r.alpha) - size / 2}px,${Y(ax, r.point) - size / 2}px)`;
  };
  const drawBars = (gd, r) => {  // AP bars: trace 1 is grounded AP, one bar per value
    const ax = axes(gd), g = traceGroup(gd, "barlayer", 1);
    if (!ax || !g) return;
    const base = ax[1].l2p(0), tall = Math.max(base, 1);  // a bar is a full-height block scaled down from y = 0
    g.querySelectorAll(".point path").forEach((bar, w) => {
      const m = /^M([-\d.e]+),[-\d.e]+V[-\d.e]+H([-\d.e]+)V/.exec(bar.getAttribute("d") || "");
      const ap = r.ap_grounded[w];
      if (!m) return;
      const x0 = Math.min(+m[1], +m[2]), width = Math.abs(+m[2] - +m[1]);
      const el = overlay(gd, `bar${w}`, `width:${width}px;height:${tall}px;transform-origin:50% 100%;` +
                                         `background:${colourOf(bar, "#d62728")};`);
      if (!el) return;
      hide(g);
      const h = Number.isFinite(ap) ? Math.max(base - ax[1].l2p(ap), 0) / tall : 0;
      el.style.transform = `translate(${ax[0]._offset + x0}px,${ax[1]._offset + base - tall}px) scaleY(${h})`;
    });
  };
  const arrowTip = (gd, r) => {  // q'(α) = norm(q + α d) in the plane of d (x) and q⊥ (y), from the arrows' centre
    const [q, , d] = gd.layout.annotations;
    const length = Math.hypot(q.x - q.ax, q.y - q.ay);
    const perp = Math.sqrt(Math.max(1 - r.c * r.c, 1e-12));
    const ux = r.c + r.alpha, uy = perp, un = Math.max(Math.hypot(ux, uy), 1e-12);
    return [d.ax, d.ay, d.ax + length * ux / un, d.ay + length * uy / un];
  };
  // plane: annotation 1 is the q'(α) arrow: a shaft (a 1-px-wide bar stretched and turned) and a head (a triangle
  // turned about its tip).
  const drawArrow = (gd, r) => {
    const ax = axes(gd), original = gd.querySelector('.annotation[data-index="1"]');
    if (!ax || !original) return;
    const [x0, y0, x1, y1] = arrowTip(gd, r);
    const px0 = X(ax, x0), py0 = Y(ax, y0), px1 = X(ax, x1), py1 = Y(ax, y1);
    const colour = gd.layout.annotations[1].arrowcolor || "#d62728", head = 12, half = 5, stroke = 3;
    const shaft = overlay(gd, "shaft", `width:1px;height:${stroke}px;transform-origin:0 50%;background:${colour};`);
    const tip = overlay(gd, "head", `width:${head}px;height:${2 * half}px;transform-origin:100% 50%;` +
                                    `background:${colour};clip-path:polygon(0 0,100% 50%,0 100%);`);
    if (!shaft || !tip) return;
    hide(original);
    const angle = Math.atan2(py1 - py0, px1 - px0), length = Math.max(Math.hypot(px1 - px0, py1 - py0) - head, 0);
    shaft.style.transform = `translate(${px0}px,${py0 - stroke / 2}px) rotate(${angle}rad) scaleX(${length})`;
    tip.style.transform = `translate(${px1 - head}px,${py1 - half}px) rotate(${angle}rad)`;
  };

  const settle = (ids, r) => {  // plotly redraws the resting state (its own figure data follow the slider)
    const P = Plotly();
    if (!P) return Promise.resolve();
    const a2 = fmt(r.alpha, 2), done = [];
    const margin = plot(ids.margin);
    if (margin && margin.data && margin.data.length > 1) {
      clearOverlays(margin);
      done.push(P.restyle(margin, { x: [[r.alpha]], y: [[r.point]], name: `α = ${a2}` }, [1]));
    }
    const bars = plot(ids.bars);
    if (bars && bars.data && bars.data.length > 1) {
      clearOverlays(bars);
      done.push(P.restyle(bars, { y: [r.ap_grounded.map((a) => (Number.isNaN(a) ? null : a))],
                                  name: `grounded (α = ${a2})` }, [1]));
    }
    const plane = ids.plane && plot(ids.plane);
    if (plane && plane.layout && (plane.layout.annotations || []).length >= 3) {
      const [, , x1, y1] = arrowTip(plane, r);
      clearOverlays(plane);
      done.push(P.update(plane, { name: `q'(α=${a2}) (grounded)` },
                         { "annotations[1].x": x1, "annotations[1].y": y1 }, [plane.data.length - 2]));
    }
    return Promise.all(done);
  };

  const timers = {};
  const redrawFigures = (ids, r) => {
    const margin = plot(ids.margin), bars = plot(ids.bars), plane = ids.plane && plot(ids.plane);
    if (margin && margin.data) drawPoint(margin, r);
    if (bars && bars.data) drawBars(bars, r);
    if (plane && plane.layout && (plane.layout.annotations || []).length >= 3) drawArrow(plane, r);
    clearTimeout(timers[ids.margin]);
    timers[ids.margin] = setTimeout(() => { api.settled = settle(ids, r).then(() => r); }, SETTLE_MS);
  };

  const VIEWS = {
    grounding: (r) => {  // ui/grounding.summary_html
      setText("gd-alpha-shown", fmt(r.alpha, 2));
      setText("gd-map-grounded", fmt(r.map_grounded, 3));
      setText("gd-top1-grounded", fmt(r.top1_grounded, 3));
      setText("gd-ap-value", fmt(r.ap_grounded[r.value_index], 3));
      setText("gd-top-precision", fmt(r.top_precision, 3));
      redrawFigures({ margin: "gd-margin", bars: "gd-ap", plane: "gd-plane" }, r);
    },
    walkthrough: (r, P) => {  // ui/walkthrough.grounding_md
      const v = r.value_index;
      setText("wt-grounding-alpha", fmt(r.alpha, 2));
      setText("wt-grounding-grounded", fmt(r.ap_grounded[v], 3));
      setText("wt-grounding-gain", fmt(r.ap_grounded[v] - P.apNative[v], 3, true));
      setText("wt-grounding-map", fmt(r.map_grounded, 3));
      setText("wt-grounding-margin", fmt(r.margin_grounded, 3, true));
      redrawFigures({ margin: "wt-grounding-curve", bars: "wt-grounding-bars" }, r);
    },
  };

  // Where each view's slider and value selector are in the page. One listener on the document (capture phase, so it
  // runs before Gradio's own) drives the moves from the slider's DOM input events: it holds for a slider Gradio draws
  // afresh, and no Gradio event fires for a move (Gradio snapshots an event's inputs every time it fires, which cost
  // more main-thread time per move than the move itself).
  const SOURCES = {
    grounding: { slider: "#gd-alpha", value: "#gd-value input" },
    walkthrough: { slider: "#wt-grounding-alpha-slider", value: "#wt-grounding-value input" },
  };
  const payloads = {};
  let listening = false;
  const listen = () => {
    if (listening) return;
    listening = true;
    document.addEventListener("input", (event) => {
      const el = event.target;
      if (!(el instanceof HTMLInputElement) || (el.type !== "range" && el.type !== "number")) return;
      for (const view of Object.keys(SOURCES)) {
        if (!payloads[view] || !el.closest(SOURCES[view].slider)) continue;
        const chosen = document.querySelector(SOURCES[view].value);
        if (chosen) api.move(view, el.value, chosen.value, payloads[view]);
      }
    }, true);
  };

  const api = {
    last: null,   // the last readout (tests compare it with the server's)
    moves: 0,
    settled: null,  // a promise of the last readout once plotly has redrawn it (SETTLE_MS after the last move)
    // The payload of `view` arrived (or was cleared): decode it now, so the first move is as fast as the rest.
    setPayload(view, payload) {
      payloads[view] = payload && payload.s_q ? payload : null;
      if (payloads[view]) prepare(payloads[view]);
      listen();
    },
    // Recompute at `alpha` for `value` and redraw `view`; returns the readout (drawn when this returns).
    move(view, alpha, value, payload) {
      if (!payload || !payload.s_q) return null;
      const t0 = performance.now();
      const P = prepare(payload);
      const v = P.values.indexOf(value);
      const a = Number(alpha);
      if (v < 0 || !Number.isFinite(a) || a < 0) return null;
      const r = readout(P, a, v);
      r.view = view;
      r.payload = P.id;
      r.c = P.c[v];
      const den = Math.sqrt(Math.max(1 + a * a + 2 * a * r.c, 0));
      r.margin_grounded = den > 0 ? P.deltaNorms[v] * (r.c + a) / den : NaN;  // analysis.grounding.grounded_margin
      r.compute_ms = performance.now() - t0;
      api.last = r;
      api.moves += 1;
      VIEWS[view](r, P);
      r.drawn_ms = performance.now() - t0;
      return r;
    },
    readout(alpha, value, payload) {  // numbers only, no drawing (the equality test's hook)
      const P = prepare(payload);
      return readout(P, Number(alpha), P.values.indexOf(value));
    },
    fmt,
  };
  window.bindlabSlider = api;
  return api;
})()
