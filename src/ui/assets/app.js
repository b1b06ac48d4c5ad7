// engram ui: a little progressive JavaScript. Every page works without it.
// - the filter's selects apply themselves when changed;
// - "/" moves to the search box (unless typing in a field);
// - a form is sent once (its button is disabled while the answer comes).
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
  document.querySelectorAll("form[method=post]").forEach((f) => {
    f.addEventListener("submit", () => {
      f.querySelectorAll("button[type=submit]").forEach((b) => { b.disabled = true; });
    });
  });
});
