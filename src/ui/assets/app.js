// engram ui: a little progressive JavaScript. Every page works without it.
// - the filter's selects apply themselves when changed;
// - "/" moves to the search box (unless typing in a field);
// - a form is sent once (its buttons are disabled while the answer comes; the one pressed is
//   sent as a field);
// - a memory's "History" opens in its card: its commits are fetched the first time (without
//   the script, the card holds a link to the same commits on their own page);
// - the graph's picture pans and zooms.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  const filter = document.querySelector("form.filter");
  if (filter) {
    filter.querySelectorAll("select").forEach((s) => s.addEventListener("change", () => filter.submit()));
  }
  document.addEventListener("keydown", (e) => {
    const t = e.target;
    const typing = t instanceof HTMLInputElement || t instanceof HTMLTextAreaElement || t instanceof HTMLSelectElement;
    if (e.key === "/" && !typing) {
      const q = document.getElementById("q");
      if (q) { e.preventDefault(); q.focus(); }
    }
  });
  document.querySelectorAll("details.history[data-src]").forEach((d) => {
    d.addEventListener("toggle", () => {
      if (!d.open || d.dataset.loaded) return;
      d.dataset.loaded = "1";
      const box = d.querySelector(".commits");
      fetch(d.dataset.src, { credentials: "same-origin" })
        .then((r) => (r.ok ? r.text() : Promise.reject(new Error(r.status + " " + r.statusText))))
        .then((html) => { box.innerHTML = html; box.setAttribute("data-state", "loaded"); })
        .catch((e) => { box.insertAdjacentText("afterbegin", String(e) + " — "); delete d.dataset.loaded; });
    });
  });
  const svg = document.getElementById("graph-picture");
  if (svg) panAndZoom(svg);
  document.querySelectorAll("form[method=post]").forEach((f) => {
    f.addEventListener("submit", (e) => {
      // A disabled button is not sent: the one pressed (keep mine, theirs, both) goes as a field.
      const s = e.submitter;
      if (s && s.name) {
        const h = document.createElement("input");
        h.type = "hidden"; h.name = s.name; h.value = s.value;
        f.appendChild(h);
      }
      f.querySelectorAll("button[type=submit]").forEach((b) => { b.disabled = true; });
    });
  });
});

// The graph's picture: its view box moves with a drag and scales with the wheel or the
// +/−/reset buttons. A drag that moved is not a click on the node under it.
function panAndZoom(svg) {
  const start = svg.dataset.view.split(" ").map(Number);
  let view = start.slice();
  const show = () => svg.setAttribute("viewBox", view.map((v) => v.toFixed(1)).join(" "));
  const zoom = (f, x, y) => {
    if (x === undefined) { x = view[0] + view[2] / 2; y = view[1] + view[3] / 2; }
    view = [x - (x - view[0]) * f, y - (y - view[1]) * f, view[2] * f, view[3] * f];
    show();
  };
  const tools = svg.closest("section");
  tools.querySelector(".zoom-in").addEventListener("click", () => zoom(0.8));
  tools.querySelector(".zoom-out").addEventListener("click", () => zoom(1.25));
  tools.querySelector(".zoom-reset").addEventListener("click", () => { view = start.slice(); show(); });
  const at = (e) => {
    const r = svg.getBoundingClientRect();
    return [view[0] + ((e.clientX - r.left) / r.width) * view[2], view[1] + ((e.clientY - r.top) / r.height) * view[3]];
  };
  svg.addEventListener("wheel", (e) => {
    e.preventDefault();
    const [x, y] = at(e);
    zoom(e.deltaY < 0 ? 0.9 : 1.1, x, y);
  }, { passive: false });
  let drag = null;
  let moved = false;
  svg.addEventListener("pointerdown", (e) => { drag = [e.clientX, e.clientY, view[0], view[1]]; moved = false; });
  svg.addEventListener("pointermove", (e) => {
    if (!drag) return;
    const r = svg.getBoundingClientRect();
    const dx = e.clientX - drag[0];
    const dy = e.clientY - drag[1];
    if (Math.abs(dx) + Math.abs(dy) > 4) moved = true;
    if (!moved) return;
    view[0] = drag[2] - (dx / r.width) * view[2];
    view[1] = drag[3] - (dy / r.height) * view[3];
    show();
  });
  const end = () => { drag = null; };
  svg.addEventListener("pointerup", end);
  svg.addEventListener("pointerleave", end);
  svg.addEventListener("click", (e) => { if (moved) { e.preventDefault(); moved = false; } }, true);
}
