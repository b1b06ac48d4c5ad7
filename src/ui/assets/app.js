// engram ui: a little progressive JavaScript. Every page works without it.
// - the filter's selects apply themselves when changed;
// - "/" moves to the search box (unless typing in a field);
// - a form is sent once (its buttons are disabled while the answer comes; the one pressed is
//   sent as a field);
// - a memory's "History" opens in its card: its commits are fetched the first time (without
//   the script, the card holds a link to the same commits on their own page);
// - the graph's picture pans and zooms; a click on a node shows its panel in place (without
//   the script, the node is a link to the page drawn around it).
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
  if (svg) {
    panAndZoom(svg);
    nodePanels(svg);
    // Back and forward between nodes shown in place: the page of that address.
    window.addEventListener("popstate", () => location.reload());
  }
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

// A click on a node of the graph's picture fetches the picture and the node's panel alone
// (`&part=1`) and shows the panel in place of the one shown. The whole graph's picture is kept
// as it is (pan and zoom included); a neighbourhood is replaced by the one drawn around the node.
// The address says the node, so a reload or a shared link shows the same. Anything unexpected:
// the link is followed.
function nodePanels(svg) {
  svg.addEventListener("click", (e) => {
    const a = e.target.closest("a.node");
    if (!a || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    const href = a.getAttribute("href");
    const go = () => { location.href = href; };
    fetch(href + "&part=1", { credentials: "same-origin" })
      .then((r) => (r.ok ? r.text() : Promise.reject(new Error(r.status + " " + r.statusText))))
      .then((html) => {
        const got = document.createElement("template");
        got.innerHTML = html;
        const section = got.content.getElementById("graph-view");
        const panel = got.content.getElementById("node-info");
        const picture = section && section.querySelector("#graph-picture");
        if (!panel || !picture) { go(); return; }
        const shown = document.getElementById("node-info");
        if (shown) shown.remove();
        const here = svg.closest("section");
        if ("whole" in svg.dataset && "whole" in picture.dataset) {
          svg.querySelectorAll("a.node.chosen").forEach((n) => n.classList.remove("chosen"));
          a.classList.add("chosen");
        } else {
          here.replaceWith(section);
          panAndZoom(picture);
          nodePanels(picture);
        }
        (section.isConnected ? section : here).insertAdjacentElement("afterend", panel);
        history.pushState({ node: a.dataset.name }, "", href);
      })
      .catch(go);
  });
}
