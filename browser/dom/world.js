// Runs only in tabwarden's isolated world of the top frame. Page scripts
// cannot reach this global; nothing here writes into the page's DOM: refs
// live in a WeakMap (element -> ref) and a Map of WeakRefs (ref -> element).
// The global dies with the document, so refs are stable within a document
// and never outlive it.
(() => {
  // Installing twice would mint a new token and orphan every ref.
  if (globalThis.__tw) return true;
  const W = {};
  const refOf = new WeakMap();
  const byRef = new Map();
  let nextRef = 1;
  const token = (crypto.randomUUID ? crypto.randomUUID() : String(Math.random()).slice(2)) ;
  let muts = 0, scrolls = 0;
  const mo = new MutationObserver(() => { muts++; });
  const watched = new WeakSet();
  const frameWatched = new WeakSet();
  // Window scrolls are compared by position; this counts element scrolls.
  const onScroll = e => { if (e.target && e.target.nodeType === 1) scrolls++; };
  const onFrameLoad = () => { muts++; };

  function watchRoot(root) {
    if (watched.has(root)) return;
    watched.add(root);
    mo.observe(root, { subtree: true, childList: true, attributes: true, characterData: true });
    if (root.nodeType === 9) root.addEventListener('scroll', onScroll, { capture: true, passive: true });
  }
  function watchFrame(el) {
    if (frameWatched.has(el)) return;
    frameWatched.add(el);
    el.addEventListener('load', onFrameLoad, { passive: true });
  }

  const SEL = 'a[href],area[href],button,input,textarea,select,[role=button],[role=link],[role=checkbox],[role=tab],[role=menuitem],[role=option],[role=switch],[contenteditable]';
  const TEXTLIKE = new Set(['', 'text', 'search', 'email', 'url', 'tel', 'number', 'password']);

  const norm = s => (s || '').replace(/\s+/g, ' ').trim();
  const cut = (s, n) => s.length > n ? s.slice(0, n - 1) + '…' : s;

  function textOf(node, skip, budget) {
    let out = '';
    const rec = n => {
      if (out.length > budget) return;
      if (n === skip) return;
      if (n.nodeType === 3) { out += n.data; return; }
      if (n.nodeType !== 1) return;
      const ln = n.localName;
      if (ln === 'script' || ln === 'style' || ln === 'template' || ln === 'noscript') return;
      if (ln === 'img' || (ln === 'input' && n.type === 'image')) { out += ' ' + (n.getAttribute('alt') || '') + ' '; return; }
      if (ln === 'select' || ln === 'textarea') return;
      const al = n !== node && n.getAttribute('aria-label');
      if (al) { out += ' ' + al + ' '; return; }
      for (let c = n.firstChild; c; c = c.nextSibling) rec(c);
      if (ln === 'br' || ln === 'p' || ln === 'div') out += ' ';
    };
    rec(node);
    return norm(out);
  }

  function isSensitive(el) {
    if (el.localName !== 'input') return false;
    const t = (el.type || '').toLowerCase();
    if (t === 'password' || t === 'file') return true;
    return /\bone-time-code\b/i.test(el.getAttribute('autocomplete') || '');
  }

  function roleOf(el) {
    const r = norm(el.getAttribute('role')).split(' ')[0].toLowerCase();
    if (r && r !== 'presentation' && r !== 'none' && r !== 'generic') return r;
    switch (el.localName) {
      case 'a': case 'area': return 'link';
      case 'button': return 'button';
      case 'select': return (el.multiple || el.size > 1) ? 'listbox' : 'combobox';
      case 'textarea': return 'textbox';
      case 'input': {
        const t = (el.type || 'text').toLowerCase();
        if (t === 'checkbox') return 'checkbox';
        if (t === 'radio') return 'radio';
        if (t === 'range') return 'slider';
        if (t === 'search') return 'searchbox';
        if (t === 'button' || t === 'submit' || t === 'reset' || t === 'image' || t === 'file' || t === 'color') return 'button';
        return 'textbox';
      }
    }
    if (el.isContentEditable) return 'textbox';
    return el.localName;
  }

  function nameOf(el, role) {
    let s = '';
    const lb = el.getAttribute('aria-labelledby');
    if (lb) {
      const root = el.getRootNode();
      s = norm(lb.split(/\s+/).map(id => {
        const n = root.getElementById ? root.getElementById(id) : null;
        return n ? textOf(n, null, 200) : '';
      }).join(' '));
    }
    if (!s) s = norm(el.getAttribute('aria-label'));
    if (!s) {
      const ls = labelsOf(el);
      if (ls.length) s = norm(ls.map(l => textOf(l, el, 200)).join(' '));
    }
    const ln = el.localName;
    if (!s && ln === 'input') {
      const t = (el.type || '').toLowerCase();
      if (t === 'submit' || t === 'button' || t === 'reset') s = norm(el.value) || (t === 'submit' ? 'Submit' : t === 'reset' ? 'Reset' : '');
      else if (t === 'image') s = norm(el.getAttribute('alt'));
    }
    if (!s) s = norm(el.getAttribute('placeholder') || el.getAttribute('aria-placeholder'));
    if (!s && ln === 'img') s = norm(el.getAttribute('alt'));
    if (!s && !(ln === 'input' || ln === 'select' || ln === 'textarea' || el.isContentEditable)) s = textOf(el, null, 200);
    if (!s) s = norm(el.getAttribute('title'));
    return cut(s, 100);
  }

  // labelsOf is el.labels without its cost: el.labels scans the whole tree
  // on each call, quadratic over a large page. label[for] maps are built
  // once per root per observe.
  const LABELABLE = new Set(['input', 'select', 'textarea', 'button', 'meter', 'output', 'progress']);
  let labelCache = null;
  function labelsOf(el) {
    if (!LABELABLE.has(el.localName)) return [];
    const root = el.getRootNode();
    let m = labelCache && labelCache.get(root);
    if (!m) {
      m = new Map();
      if (root.querySelectorAll) {
        for (const l of root.querySelectorAll('label[for]')) {
          const id = l.htmlFor;
          if (!m.has(id)) m.set(id, []);
          m.get(id).push(l);
        }
      }
      if (labelCache) labelCache.set(root, m);
    }
    const out = [];
    const w = el.closest('label');
    if (w && !w.htmlFor) out.push(w);
    if (el.id && m.has(el.id)) out.push(...m.get(el.id));
    return out;
  }

  function isDisabled(el) {
    try { if (el.matches(':disabled')) return true; } catch (e) {}
    for (let n = el; n; n = n.parentElement) {
      if (n.getAttribute && n.getAttribute('aria-disabled') === 'true') return true;
    }
    return false;
  }

  function describe(el, role) {
    const d = { role, name: nameOf(el, role) };
    const ln = el.localName;
    const sens = isSensitive(el);
    if (sens) d.sensitive = true;
    if (ln === 'input') {
      const t = (el.type || 'text').toLowerCase();
      if (t === 'checkbox' || t === 'radio') { if (el.checked) d.checked = 'checked'; if (el.indeterminate) d.checked = 'mixed'; }
      else if (!sens && (TEXTLIKE.has(t) || t === 'range' || t === 'date' || t === 'time' || t === 'datetime-local' || t === 'month' || t === 'week')) {
        if (el.value !== '') d.value = cut(el.value, 80);
      }
    } else if (ln === 'textarea') {
      if (el.value !== '') d.value = cut(norm(el.value), 80);
    } else if (ln === 'select') {
      const opts = Array.from(el.options);
      const sel = opts.filter(o => o.selected).map(o => norm(o.label || o.text));
      d.value = cut(sel.join(', '), 80);
      d.hasValue = true;
      d.options = opts.slice(0, 25).map(o => cut(norm(o.label || o.text), 40));
      if (opts.length > 25) d.moreOptions = opts.length - 25;
    } else if (el.isContentEditable) {
      const v = norm(el.innerText);
      if (v) d.value = cut(v, 80);
    }
    if (d.value !== undefined) d.hasValue = true;
    const ac = el.getAttribute('aria-checked');
    if (!d.checked && (ac === 'true' || ac === 'mixed')) d.checked = ac === 'true' ? 'checked' : 'mixed';
    if (el.getAttribute('aria-selected') === 'true') d.selected = true;
    if (el.getAttribute('aria-expanded') === 'true') d.expanded = true;
    if (isDisabled(el)) d.disabled = true;
    return d;
  }

  const TAGS = new Set(['a', 'area', 'button', 'input', 'textarea', 'select']);
  function isCandidate(el) {
    // Cheap pre-filter: matches() on every node dominates a large page.
    if (!TAGS.has(el.localName) && !el.hasAttribute('role') && !el.hasAttribute('contenteditable')) return false;
    if (!el.matches(SEL)) return false;
    if (el.localName === 'input' && (el.type || '').toLowerCase() === 'hidden') return false;
    if (el.hasAttribute('contenteditable') && el.localName !== 'input' && el.localName !== 'textarea') {
      if (!el.isContentEditable) return false;
      // Only the editing host: a nested editable is part of its host's value.
      const p = el.parentElement;
      if (p && p.isContentEditable && !el.matches('a[href],button,input,textarea,select,[role]')) return false;
    }
    return true;
  }

  function ensureRef(el) {
    let r = refOf.get(el);
    if (!r) { r = 'e' + (nextRef++); refOf.set(el, r); byRef.set(r, new WeakRef(el)); }
    return r;
  }

  function inter(a, b) {
    const x1 = Math.max(a.x1, b.x1), y1 = Math.max(a.y1, b.y1);
    const x2 = Math.min(a.x2, b.x2), y2 = Math.min(a.y2, b.y2);
    return (x2 > x1 && y2 > y1) ? { x1, y1, x2, y2 } : null;
  }

  // Frame geometry: offset of a frame's viewport in top-level coordinates
  // and the clip (visible part of that viewport) in top-level coordinates.
  function frameBox(ifr, fr) {
    const r = ifr.getBoundingClientRect();
    const cs = getComputedStyle(ifr);
    const ox = fr.ox + r.left + ifr.clientLeft + parseFloat(cs.paddingLeft || 0);
    const oy = fr.oy + r.top + ifr.clientTop + parseFloat(cs.paddingTop || 0);
    const box = { x1: ox, y1: oy, x2: ox + ifr.clientWidth - parseFloat(cs.paddingLeft || 0) - parseFloat(cs.paddingRight || 0), y2: oy + ifr.clientHeight - parseFloat(cs.paddingTop || 0) - parseFloat(cs.paddingBottom || 0) };
    return { ox, oy, clip: inter(box, fr.clip) || { x1: 0, y1: 0, x2: 0, y2: 0 } };
  }

  function topFrame() {
    return { ox: 0, oy: 0, clip: { x1: 0, y1: 0, x2: document.documentElement.clientWidth || innerWidth, y2: document.documentElement.clientHeight || innerHeight }, depth: 0 };
  }

  function visibleBox(el, fr) {
    if (el.checkVisibility && !el.checkVisibility({ visibilityProperty: true })) return null;
    const r = el.getBoundingClientRect();
    if (r.width <= 0 || r.height <= 0) return null;
    return { x1: fr.ox + r.left, y1: fr.oy + r.top, x2: fr.ox + r.right, y2: fr.oy + r.bottom };
  }

  // walk visits every listed element, region and frame in document order,
  // entering open shadow roots and same-origin frames.
  function walk(root, fr, v) {
    watchRoot(root);
    const all = root.querySelectorAll('*');
    for (let i = 0; i < all.length; i++) {
      const el = all[i];
      const ln = el.localName;
      if (isCandidate(el)) {
        const box = visibleBox(el, fr);
        if (box) v.el(el, box, fr);
      }
      if (el.shadowRoot) {
        walk(el.shadowRoot, fr, v);
      } else if (ln.indexOf('-') > 0 && v.cand) {
        const box = visibleBox(el, fr);
        if (box) v.cand(el, box);
      }
      if (ln === 'iframe' || ln === 'frame') {
        const box = visibleBox(el, fr);
        if (!box) continue;
        watchFrame(el);
        let doc = null;
        try { doc = el.contentDocument; } catch (e) { doc = null; }
        if (doc && doc.documentElement && fr.depth < 8) {
          const sub = frameBox(el, fr);
          sub.depth = fr.depth + 1;
          if (v.frame) v.frame(el, doc);
          walk(doc, sub, v);
        } else if (v.region) {
          let origin = '';
          try { origin = new URL(el.src, document.baseURI).origin; } catch (e) {}
          v.region('frame', origin, box);
        }
      }
    }
  }

  function lines(s) { return s.replace(/[ \t\u00a0]+/g, ' ').replace(/ *\n[\s]*/g, '\n').trim(); }

  // Caches of what the host already holds for this document: an unchanged
  // element list or text is not sent again.
  let elemGen = 0, lastElems = '', textGen = 0, lastText = null;
  const F_VALUE = 1, F_CHECKED = 2, F_MIXED = 4, F_SELECTED = 8, F_EXPANDED = 16, F_DISABLED = 32, F_SENSITIVE = 64, F_INVIEW = 128;

  W.observe = (opt) => {
    labelCache = new Map();
    const top = topFrame();
    const els = [], regions = [];
    W.cand = [];
    const cands = [];
    const texts = [];
    let sensitiveVisible = false;
    if (document.body) texts.push(document.body.innerText || '');
    walk(document, top, {
      el(el, box, fr) {
        const role = roleOf(el);
        const d = describe(el, role);
        const inView = !!inter(box, fr.clip);
        if (d.sensitive && el.localName === 'input' && el.type !== 'file') sensitiveVisible = true;
        const flags = (d.hasValue ? F_VALUE : 0) | (d.checked === 'checked' ? F_CHECKED : 0) | (d.checked === 'mixed' ? F_MIXED : 0) |
          (d.selected ? F_SELECTED : 0) | (d.expanded ? F_EXPANDED : 0) | (d.disabled ? F_DISABLED : 0) |
          (d.sensitive ? F_SENSITIVE : 0) | (inView ? F_INVIEW : 0);
        const row = [ensureRef(el), role, d.name, d.value === undefined ? '' : d.value, flags,
          Math.round(box.x1), Math.round(box.y1), Math.round(box.x2 - box.x1), Math.round(box.y2 - box.y1)];
        if (d.options) row.push(d.options, d.moreOptions || 0);
        els.push(row);
      },
      cand(el, box) {
        if (W.cand.length >= 20) return;
        W.cand.push(el);
        cands.push({ tag: el.localName, x: Math.round(box.x1), y: Math.round(box.y1), w: Math.round(box.x2 - box.x1), h: Math.round(box.y2 - box.y1) });
      },
      region(kind, label, box) {
        regions.push({ kind, label, x: Math.round(box.x1), y: Math.round(box.y1), w: Math.round(box.x2 - box.x1), h: Math.round(box.y2 - box.y1) });
      },
      frame(el, doc) {
        if (doc.body) texts.push('[frame ' + (norm(doc.title) || el.getAttribute('src') || '') + ']\n' + (doc.body.innerText || ''));
      },
    });
    labelCache = null;
    let text = lines(texts.join('\n'));
    const textLen = text.length;
    if (text.length > opt.maxText) text = text.slice(0, opt.maxText);
    const ej = JSON.stringify(els);
    if (ej !== lastElems) { elemGen++; lastElems = ej; }
    if (text !== lastText) { textGen++; lastText = text; }
    const mine = opt.token === token;
    let out = '{"state":' + JSON.stringify(W.state()) + ',"elemGen":' + elemGen + ',"textGen":' + textGen +
      ',"regions":' + JSON.stringify(regions) + ',"cands":' + JSON.stringify(cands) + ',"textLen":' + textLen +
      ',"sensitiveVisible":' + sensitiveVisible;
    if (!mine || opt.elemGen !== elemGen) out += ',"elements":' + ej;
    if (!mine || opt.textGen !== textGen) out += ',"text":' + JSON.stringify(text);
    return out + '}';
  };

  W.state = () => {
    if (mo.takeRecords().length) muts++;
    const de = document.documentElement;
    return { token, muts, scrolls, sx: scrollX, sy: scrollY, vw: (de && de.clientWidth) || innerWidth, vh: (de && de.clientHeight) || innerHeight, dpr: devicePixelRatio, href: location.href, title: document.title };
  };

  W.stateJSON = () => JSON.stringify(W.state());

  function get(ref) {
    const w = byRef.get(ref);
    const el = w && w.deref();
    if (!el || !el.isConnected) return null;
    return el;
  }

  // frameOf returns the chain of frame elements from el's document up to
  // the top document, or null when a frame in between was detached.
  function frameChain(el) {
    const chain = [];
    let doc = el.ownerDocument;
    while (doc !== document) {
      const win = doc.defaultView;
      const fe = win && win.frameElement;
      if (!fe || !fe.isConnected) return null;
      chain.push(fe);
      doc = fe.ownerDocument;
    }
    return chain;
  }

  function frameOf(el) {
    const chain = frameChain(el);
    if (!chain) return null;
    let fr = topFrame();
    for (let i = chain.length - 1; i >= 0; i--) { const sub = frameBox(chain[i], fr); sub.depth = fr.depth + 1; fr = sub; }
    return { fr, chain };
  }

  // grantFacts are what the consent engine needs to keep a step off the
  // never-grantable list (design.md §4): the field's autocomplete tokens and
  // name/id (payment or identity data), and whether the step leaves the
  // page's origin (a link or a form submit to another origin, or an
  // element in a frame of another origin).
  function grantFacts(el, d) {
    const ac = el.getAttribute && el.getAttribute('autocomplete');
    if (ac) d.autocomplete = cut(ac, 120);
    const field = (el.getAttribute && (el.getAttribute('name') || el.id)) || '';
    if (field) d.field = cut(field, 120);
    const page = document.location.origin;
    const other = (u) => {
      try {
        const x = new URL(u, el.baseURI);
        return (x.protocol === 'http:' || x.protocol === 'https:') && x.origin !== page;
      } catch (e) { return false; }
    };
    if (el.ownerDocument && el.ownerDocument.location && el.ownerDocument.location.origin !== page) d.crossOrigin = true;
    // A point over a frame of another origin (a coordinate click) lands in
    // that origin's page.
    if ((el.localName === 'iframe' || el.localName === 'frame') && el.getAttribute('src') && other(el.getAttribute('src'))) d.crossOrigin = true;
    const link = el.closest && el.closest('a[href], area[href]');
    if (link && other(link.getAttribute('href'))) d.crossOrigin = true;
    const t = (el.type || '').toLowerCase();
    if (el.form && (el.localName === 'button' && t !== 'button' && t !== 'reset' || el.localName === 'input' && (t === 'submit' || t === 'image'))) {
      if (other(el.formAction || el.form.action)) d.crossOrigin = true;
    }
    return d;
  }

  W.target = (ref) => {
    const el = get(ref);
    if (!el) return JSON.stringify({ err: 'stale_element' });
    const d = grantFacts(el, describe(el, roleOf(el)));
    d.ref = ref;
    d.tag = el.localName;
    d.type = el.localName === 'input' ? (el.type || 'text').toLowerCase() : '';
    d.editable = editableKind(el) !== '';
    d.readOnly = !!el.readOnly;
    return JSON.stringify(d);
  };

  // W.box is the element's border box in top-level viewport coordinates,
  // for the operator's mark of an action review's target; {} when it is
  // gone or not rendered.
  W.box = (ref) => {
    const el = get(ref);
    const f = el && frameOf(el);
    if (!f) return '{}';
    const r = el.getBoundingClientRect();
    if (r.width <= 0 || r.height <= 0) return '{}';
    return JSON.stringify({ x: f.fr.ox + r.left, y: f.fr.oy + r.top, w: r.width, h: r.height });
  };

  function editableKind(el) {
    if (el.localName === 'textarea') return 'text';
    if (el.localName === 'input') return TEXTLIKE.has((el.type || 'text').toLowerCase()) ? 'text' : '';
    if (el.isContentEditable) return 'ce';
    return '';
  }

  function deepHit(doc, x, y) {
    let h = doc.elementFromPoint(x, y);
    while (h && h.shadowRoot) {
      const i = h.shadowRoot.elementFromPoint(x, y);
      if (!i || i === h) break;
      h = i;
    }
    return h;
  }

  function composedContains(a, b) {
    for (let n = b; n; n = n.parentNode || n.host) { if (n === a) return true; }
    return false;
  }

  function label(el) {
    if (!el) return 'nothing';
    const role = roleOf(el);
    const name = nameOf(el, role);
    return el.localName + (el.id ? '#' + el.id : '') + (name ? ' "' + cut(name, 60) + '"' : '') + (refOf.get(el) ? ' (' + refOf.get(el) + ')' : '');
  }

  // W.point scrolls el into view (part of the approved action) and returns
  // the top-level point to click, or the reason it cannot be clicked.
  W.point = (ref) => {
    const el = get(ref);
    if (!el) return JSON.stringify({ err: 'stale_element' });
    if (isSensitive(el)) return JSON.stringify({ err: 'sign_in_required' });
    if (isDisabled(el)) return JSON.stringify({ err: 'element_disabled', detail: label(el) });
    el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
    const f = frameOf(el);
    if (!f) return JSON.stringify({ err: 'stale_element' });
    const { fr, chain } = f;
    let best = null;
    for (const r of el.getClientRects()) {
      if (r.width <= 0 || r.height <= 0) continue;
      const b = inter({ x1: fr.ox + r.left, y1: fr.oy + r.top, x2: fr.ox + r.right, y2: fr.oy + r.bottom }, fr.clip);
      if (b) { best = b; break; }
    }
    if (!best) return JSON.stringify({ err: 'element_outside_viewport', detail: label(el) });
    const x = (best.x1 + best.x2) / 2, y = (best.y1 + best.y2) / 2;
    // Hit-test in the element's own document, then each frame up to the top.
    const hit = deepHit(el.ownerDocument, x - fr.ox, y - fr.oy);
    const ok = hit && (composedContains(el, hit) || labelsOf(el).some(l => composedContains(l, hit)));
    if (!ok) return JSON.stringify({ err: 'element_obscured', detail: label(hit) });
    let sub = topFrame();
    for (let i = chain.length - 1; i >= 0; i--) {
      const h = deepHit(chain[i].ownerDocument, x - sub.ox, y - sub.oy);
      if (h !== chain[i]) return JSON.stringify({ err: 'element_obscured', detail: label(h) });
      const s2 = frameBox(chain[i], sub); s2.depth = sub.depth + 1; sub = s2;
    }
    return JSON.stringify({ x, y });
  };

  function deepActive() {
    let a = document.activeElement;
    for (;;) {
      if (a && a.shadowRoot && a.shadowRoot.activeElement) { a = a.shadowRoot.activeElement; continue; }
      if (a && (a.localName === 'iframe' || a.localName === 'frame')) {
        let d = null;
        try { d = a.contentDocument; } catch (e) {}
        if (d && d.activeElement) { a = d.activeElement; continue; }
      }
      return a;
    }
  }

  W.focusSensitive = () => { const a = deepActive(); return !!(a && isSensitive(a)); };

  // brief describes an element for a review: what a key goes to, or what
  // lies under a point. Elements not listed before get a ref here too.
  function brief(el) {
    if (!el || el === document.body || el === document.documentElement) return JSON.stringify({});
    const d = grantFacts(el, describe(el, roleOf(el)));
    return JSON.stringify({ ref: ensureRef(el), role: d.role, name: d.name, sensitive: !!d.sensitive, disabled: !!d.disabled,
      autocomplete: d.autocomplete, field: d.field, crossOrigin: !!d.crossOrigin });
  }
  W.focused = () => brief(deepActive());
  W.at = (x, y) => brief(deepHit(document, x, y));

  // W.prepFill focuses el and selects its whole content so that the next
  // insertText replaces it.
  W.prepFill = (ref) => {
    const el = get(ref);
    if (!el) return JSON.stringify({ err: 'stale_element' });
    if (isSensitive(el)) return JSON.stringify({ err: 'sign_in_required' });
    const kind = editableKind(el);
    if (!kind || el.readOnly) return JSON.stringify({ err: 'not_editable', detail: label(el) });
    if (isDisabled(el)) return JSON.stringify({ err: 'element_disabled', detail: label(el) });
    el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
    el.focus({ preventScroll: true });
    if (deepActive() !== el) return JSON.stringify({ err: 'not_editable', detail: label(el) + ' did not take focus' });
    if (kind === 'ce') {
      const sel = el.ownerDocument.getSelection();
      sel.selectAllChildren(el);
    } else {
      try { el.select(); } catch (e) { return JSON.stringify({ selectAll: true }); }
    }
    return JSON.stringify({ ok: true });
  };

  // W.select chooses one option of a <select> by value, then by label, and
  // fires input and change as a user's choice would.
  W.select = (ref, value, lbl, dry) => {
    const el = get(ref);
    if (!el) return JSON.stringify({ err: 'stale_element' });
    if (el.localName !== 'select') return JSON.stringify({ err: 'invalid_action', detail: label(el) + ' is not a select' });
    if (isDisabled(el)) return JSON.stringify({ err: 'element_disabled', detail: label(el) });
    const opts = Array.from(el.options);
    let o = null;
    if (value !== '') o = opts.find(x => x.value === value) || null;
    if (!o && lbl !== '') {
      const want = norm(lbl).toLowerCase();
      o = opts.find(x => norm(x.label || x.text) === norm(lbl)) || opts.find(x => norm(x.label || x.text).toLowerCase() === want) || null;
    }
    if (!o) return JSON.stringify({ err: 'invalid_action', detail: 'no option matches; options: ' + opts.slice(0, 25).map(x => norm(x.label || x.text)).join('|') });
    if (o.disabled) return JSON.stringify({ err: 'element_disabled', detail: 'option "' + norm(o.label || o.text) + '" is disabled' });
    if (dry) return JSON.stringify({ ok: true, label: norm(o.label || o.text) });
    el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
    o.selected = true;
    el.dispatchEvent(new Event('input', { bubbles: true, composed: true }));
    el.dispatchEvent(new Event('change', { bubbles: true }));
    return JSON.stringify({ ok: true, label: norm(o.label || o.text) });
  };

  W.text = () => {
    const texts = [];
    if (document.body) texts.push(document.body.innerText || '');
    walk(document, topFrame(), { el() {}, frame(el, doc) { if (doc.body) texts.push(doc.body.innerText || ''); } });
    return lines(texts.join('\n'));
  };

  W.visible = (role, name) => {
    labelCache = new Map();
    const want = norm(name).toLowerCase();
    const found = [], near = [];
    const top = topFrame();
    walk(document, top, {
      el(el, box, fr) {
        const r = roleOf(el);
        if (r !== role) return;
        const n = nameOf(el, r);
        const hit = { ref: ensureRef(el), name: n, inView: !!inter(box, fr.clip) };
        if (n.toLowerCase() === want) found.push(hit); else if (near.length < 5) near.push(hit);
      },
    });
    labelCache = null;
    return JSON.stringify({ found, near });
  };

  globalThis.__tw = W;
  return true;
})()
