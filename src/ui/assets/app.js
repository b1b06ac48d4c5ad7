// engram ui: a little progressive JavaScript. Every page works without it.
// - the filter's selects apply themselves when changed;
// - "/" moves to the search box (unless typing in a field);
// - a form is sent once (its buttons are disabled while the answer comes; the one pressed is
//   sent as a field);
// - a memory's "History" opens in its card: its commits are fetched the first time (without
//   the script, the card holds a link to the same commits on their own page).
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
