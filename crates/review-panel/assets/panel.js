// The review panel's page: live updates over server-sent events, the history,
// and the file view. Only HTML the panel rendered (and sanitised) is ever
// assigned to innerHTML; everything else goes in as text.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const content = $("content");
  const body = document.body;
  let latest = null; // the latest version's payload
  let viewing = null; // the number of an earlier version on screen, or null
  const history = new Map(); // number → summary

  const sections = () =>
    [...content.children].filter((element) => element.classList.contains("review-section"));

  // The first section still visible at the top, and where it is, so an update
  // above the reader does not move what they are reading.
  function scrollAnchor() {
    for (const element of sections()) {
      const box = element.getBoundingClientRect();
      if (box.bottom > 0) return { key: element.id, top: box.top };
    }
    return null;
  }

  function restoreScroll(anchor) {
    if (!anchor) return;
    const element = document.getElementById(anchor.key);
    if (!element) return;
    const moved = element.getBoundingClientRect().top - anchor.top;
    if (Math.abs(moved) >= 1) window.scrollBy(0, moved);
  }

  function time(milliseconds) {
    return new Date(milliseconds).toLocaleTimeString();
  }

  function describe(summary) {
    let text = `v${summary.version} · ${summary.mode}`;
    if (summary.section) text += ` “${summary.section}”`;
    return `${text} · ${time(summary.received_at_ms)}`;
  }

  // Shows `payload`, keeping unchanged sections as they are (same DOM nodes)
  // and marking the others when `mark` is set.
  function show(payload, mark) {
    const anchor = scrollAnchor();
    const existing = new Map(sections().map((element) => [element.id, element]));
    const changed = [];
    const next = payload.sections.map((section) => {
      const old = existing.get(section.key);
      if (old && old.dataset.hash === section.hash) {
        old.classList.remove("changed");
        return old;
      }
      const element = document.createElement("section");
      element.className = "review-section";
      element.id = section.key;
      element.dataset.hash = section.hash;
      element.innerHTML = section.html;
      if (mark) {
        element.classList.add("changed");
        changed.push(section.key);
      }
      return element;
    });
    content.replaceChildren(...next);

    const toc = $("toc");
    toc.replaceChildren(
      ...payload.toc.map((entry) => {
        const item = document.createElement("li");
        item.className = `toc-level-${entry.level}`;
        const link = document.createElement("a");
        link.href = `#${entry.key}`;
        link.dataset.key = entry.key;
        link.textContent = entry.text;
        if (changed.includes(entry.key)) link.classList.add("changed");
        item.append(link);
        return item;
      }),
    );

    let status = describe(payload);
    if (mark) status += changed.length === 1 ? " · 1 section changed" : ` · ${changed.length} sections changed`;
    $("status").textContent = status;
    body.dataset.version = String(payload.version);
    body.dataset.changed = changed.join(" ");
    restoreScroll(anchor);
    markHistory();
  }

  function markHistory() {
    const current = viewing ?? (latest && latest.version);
    for (const item of $("history").children) {
      item.classList.toggle("current", Number(item.dataset.version) === current);
    }
  }

  function addHistory(summary) {
    if (history.has(summary.version)) return;
    history.set(summary.version, summary);
    const item = document.createElement("li");
    item.dataset.version = String(summary.version);
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = describe(summary);
    button.addEventListener("click", () => openVersion(summary.version));
    item.append(button);
    $("history").prepend(item);
    markHistory();
  }

  async function openVersion(number) {
    if (latest && number === latest.version) {
      backToLatest();
      return;
    }
    const response = await fetch(`/api/version/${number}`);
    if (!response.ok) return;
    const payload = await response.json();
    viewing = number;
    $("old-version-number").textContent = String(number);
    $("old-version").hidden = false;
    body.dataset.viewing = String(number);
    show(payload, false);
  }

  function backToLatest() {
    viewing = null;
    $("old-version").hidden = true;
    delete body.dataset.viewing;
    if (latest) show(latest, false);
  }

  function connect() {
    const events = new EventSource("/events");
    const connection = $("connection");
    events.addEventListener("open", () => {
      connection.dataset.state = "live";
      connection.textContent = "live";
    });
    events.addEventListener("error", () => {
      connection.dataset.state = "reconnecting";
      connection.textContent = "reconnecting…";
    });
    events.addEventListener("version", (event) => {
      const payload = JSON.parse(event.data);
      const hadReview = Number(body.dataset.version) > 0;
      latest = payload;
      addHistory(payload);
      if (viewing === null) show(payload, hadReview);
    });
  }

  // --- The file view -------------------------------------------------------

  function safeEditorLink(url) {
    return typeof url === "string" && !/^\s*(javascript|data|vbscript):/i.test(url);
  }

  function showFile(view) {
    const pane = $("file-pane");
    pane.hidden = false;
    $("layout").classList.add("with-file");
    $("file-path").textContent = view.path;
    const message = $("file-message");
    const editor = $("file-editor");
    const gutter = $("file-gutter");
    const code = $("file-code");
    const mark = $("file-mark");
    pane.dataset.path = view.path;
    pane.dataset.start = view.start ? String(view.start) : "";
    pane.dataset.end = view.end ? String(view.end) : "";
    mark.hidden = true;
    if (!view.ok) {
      pane.dataset.state = view.refused ? "refused" : "error";
      message.textContent = view.error || "This file cannot be shown.";
      message.hidden = false;
      editor.hidden = true;
      gutter.replaceChildren();
      code.replaceChildren();
      return;
    }
    pane.dataset.state = view.notice ? "notice" : "shown";
    message.textContent = view.notice || "";
    message.hidden = !view.notice;
    if (safeEditorLink(view.editor_url)) {
      editor.href = view.editor_url;
      editor.hidden = false;
    } else {
      editor.hidden = true;
    }
    code.innerHTML = view.html;
    const numbers = [];
    for (let line = 1; line <= view.line_count; line += 1) {
      const number = document.createElement("span");
      number.id = `L${line}`;
      number.dataset.line = String(line);
      number.textContent = String(line);
      if (view.start && line >= view.start && line <= view.end) number.classList.add("marked");
      numbers.push(number);
    }
    gutter.replaceChildren(...numbers);
    if (view.start) {
      const first = numbers[view.start - 1];
      const height = first.getBoundingClientRect().height;
      mark.style.top = `${first.offsetTop}px`;
      mark.style.height = `${height * (view.end - view.start + 1)}px`;
      mark.hidden = false;
      first.scrollIntoView({ block: "center" });
    } else {
      $("file-body").scrollTop = 0;
    }
  }

  async function openFile(href) {
    const pane = $("file-pane");
    pane.dataset.state = "loading";
    let view;
    try {
      // Resolve against the base of the version on screen.
      const version = viewing ?? (latest ? latest.version : Number(body.dataset.version));
      const response = await fetch(`${href.replace(/^\/file\?/, "/api/file?")}&v=${version}`);
      view = await response.json();
    } catch (error) {
      view = { ok: false, path: href, error: `The panel did not answer: ${error}` };
    }
    showFile(view);
  }

  document.addEventListener("click", (event) => {
    const link = event.target.closest && event.target.closest("a.file-ref");
    if (!link || event.button !== 0 || event.ctrlKey || event.metaKey || event.shiftKey) return;
    event.preventDefault();
    openFile(link.getAttribute("href"));
  });

  $("file-close").addEventListener("click", () => {
    $("file-pane").hidden = true;
    $("layout").classList.remove("with-file");
  });
  $("back-to-latest").addEventListener("click", backToLatest);

  fetch("/api/versions")
    .then((response) => response.json())
    .then((versions) => versions.forEach(addHistory))
    .catch(() => {});
  connect();
})();
