// Serializes the page for a model: the visible interactive elements, each with a CSS
// selector that matches exactly it, and the visible text, in document order.
// Evaluated as an expression; returns a JSON object (see dom.rs `Raw`).
(() => {
  // Natively interactive elements; other elements are interactive through a widget role, an
  // `onclick` attribute, being editable or focusable (`tabindex` >= 0), or, for a label, by
  // standing in for a control that does not show itself (a styled toggle for a hidden
  // checkbox).
  const NATIVE = 'a[href], area[href], button, input:not([type=hidden]), select, textarea, summary';
  const WIDGET_ROLES = new Set(['button', 'link', 'checkbox', 'radio', 'switch', 'tab', 'menuitem',
    'menuitemcheckbox', 'menuitemradio', 'option', 'combobox', 'textbox', 'searchbox', 'slider',
    'spinbutton', 'treeitem']);
  const CANDIDATES = NATIVE + ', [role], [onclick], [tabindex], [contenteditable], label';
  const LEAF = new Set(['A', 'BUTTON', 'INPUT', 'SELECT', 'TEXTAREA', 'OPTION', 'SUMMARY']);
  const SKIP = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'HEAD', 'META', 'LINK']);
  const BLOCK = /^(block|flex|grid|list-item|table|table-row|table-cell|flow-root)/;
  const TEXT_INPUTS = new Set(['', 'text', 'search', 'email', 'url', 'tel', 'password', 'number', 'date',
    'datetime-local', 'month', 'week', 'time']);
  const vw = window.innerWidth, vh = window.innerHeight;
  const clean = (s) => (s || '').replace(/\s+/g, ' ').trim();
  const cut = (s, n) => (s.length > n ? s.slice(0, n - 1) + '…' : s);
  const q = (v) => "'" + String(v).replace(/\\/g, '\\\\').replace(/'/g, "\\'") + "'";

  const roleAttr = (el) => (el.getAttribute('role') || '').trim().split(/\s+/)[0].toLowerCase();

  // Whether the element itself shows: not hidden (by an attribute on it or an ancestor, across
  // shadow roots and frames), laid out, visible and of a non-zero size.
  const up = (n) => {
    const p = n.parentNode;
    if (!p) return null;
    if (p.nodeType === 11) return p.host || null;
    if (p.nodeType === 9) return (p.defaultView && p.defaultView.frameElement) || null;
    return p;
  };
  const showsItself = (el) => {
    for (let n = el; n; n = up(n)) {
      if (n.nodeType !== 1) continue;
      if (n.hasAttribute('hidden') || n.getAttribute('aria-hidden') === 'true') return false;
      // Laid out: checkVisibility() looks at the ancestors in the element's own document (and
      // is false for `display: contents`, so only the element and the frames are asked).
      if ((n === el || n.tagName === 'IFRAME') && !n.checkVisibility()) return false;
    }
    if (el.ownerDocument.defaultView.getComputedStyle(el).visibility !== 'visible') return false;
    const r = el.getBoundingClientRect();
    return r.width > 0 && r.height > 0;
  };

  // A label clicked in place of its control, which does not show itself.
  const standsIn = (el) => el.tagName === 'LABEL' && !!el.control && !showsItself(el.control);

  const isInteractive = (el) => {
    if (!el.matches(CANDIDATES)) return false;
    if (el.matches(NATIVE) || el.hasAttribute('onclick')) return true;
    if (WIDGET_ROLES.has(roleAttr(el))) return true;
    const editable = el.getAttribute('contenteditable');
    if (editable !== null && editable.toLowerCase() !== 'false') return true;
    if (el.hasAttribute('tabindex') && parseInt(el.getAttribute('tabindex'), 10) >= 0) return true;
    return standsIn(el);
  };

  const unique = (root, sel, el) => {
    try {
      const found = root.querySelectorAll(sel);
      return found.length === 1 && found[0] === el;
    } catch (e) {
      return false;
    }
  };

  const step = (el) => {
    const tag = el.tagName.toLowerCase();
    const parent = el.parentElement || el.parentNode;
    if (!parent || !parent.children) return tag;
    const same = Array.from(parent.children).filter((c) => c.tagName === el.tagName);
    return same.length === 1 ? tag : `${tag}:nth-of-type(${same.indexOf(el) + 1})`;
  };

  const selectorFor = (el, root) => {
    if (el.id && unique(root, '#' + CSS.escape(el.id), el)) return '#' + CSS.escape(el.id);
    const testid = el.getAttribute('data-testid');
    if (testid) {
      const sel = `[data-testid=${q(testid)}]`;
      if (unique(root, sel, el)) return sel;
    }
    const name = el.getAttribute('name');
    if (name) {
      const tag = el.tagName.toLowerCase();
      const sel = `${tag}[name=${q(name)}]`;
      if (unique(root, sel, el)) return sel;
      if (el.form && el.form !== el) {
        const form = selectorFor(el.form, root);
        const value = el.getAttribute('value');
        const scoped = `${form} ${sel}`;
        if (unique(root, scoped, el)) return scoped;
        if (value !== null) {
          const valued = `${scoped}[value=${q(value)}]`;
          if (unique(root, valued, el)) return valued;
        }
      }
    }
    const steps = [];
    let node = el;
    while (node && node.nodeType === 1) {
      steps.unshift(step(node));
      const sel = steps.join(' > ');
      if (unique(root, sel, el)) return sel;
      const parent = node.parentElement;
      if (parent && parent.id && unique(root, '#' + CSS.escape(parent.id), parent)) {
        const anchored = '#' + CSS.escape(parent.id) + ' > ' + sel;
        if (unique(root, anchored, el)) return anchored;
      }
      node = parent;
    }
    return steps.join(' > ');
  };

  const displayed = (el) => {
    if (el.hidden) return false;
    if (el.getAttribute('aria-hidden') === 'true') return false;
    if (el.tagName === 'DIALOG' && !el.open) return false;
    const style = getComputedStyle(el);
    return style.display !== 'none';
  };

  const roleOf = (el) => {
    const explicit = roleAttr(el);
    if (explicit) return explicit;
    const tag = el.tagName;
    if (standsIn(el)) return roleOf(el.control);
    if (tag === 'A') return 'link';
    if (tag === 'BUTTON' || tag === 'SUMMARY') return 'button';
    if (tag === 'SELECT') return el.multiple ? 'listbox' : 'combobox';
    if (tag === 'TEXTAREA') return 'textbox';
    if (tag === 'INPUT') {
      const type = (el.getAttribute('type') || '').toLowerCase();
      if (type === 'checkbox' || type === 'radio') return type;
      if (['submit', 'button', 'reset', 'image'].includes(type)) return 'button';
      if (type === 'search') return 'searchbox';
      if (type === 'range') return 'slider';
      return 'textbox';
    }
    if (el.isContentEditable) return 'textbox';
    return 'clickable';
  };

  const nameOf = (el, doc) => {
    const label = el.getAttribute('aria-label');
    if (clean(label)) return clean(label);
    const by = el.getAttribute('aria-labelledby');
    if (by) {
      const text = by.split(/\s+/).map((id) => doc.getElementById(id))
        .filter(Boolean).map((n) => n.textContent).join(' ');
      if (clean(text)) return clean(text);
    }
    if (el.labels && el.labels.length) {
      const text = Array.from(el.labels).map((l) => l.innerText || l.textContent).join(' ');
      if (clean(text)) return clean(text);
    }
    if (el.getAttribute('alt')) return clean(el.getAttribute('alt'));
    const img = el.querySelector && el.querySelector('img[alt]');
    const text = clean(el.innerText || el.textContent);
    if (text) return cut(text, 100);
    if (img && clean(img.getAttribute('alt'))) return clean(img.getAttribute('alt'));
    if (el.getAttribute('title')) return clean(el.getAttribute('title'));
    if (el.getAttribute('placeholder')) return clean(el.getAttribute('placeholder'));
    if (el.tagName === 'INPUT' && ['submit', 'button', 'reset'].includes(el.type)) return clean(el.value);
    return '';
  };

  const stateOf = (el, role) => {
    if (standsIn(el)) return stateOf(el.control, role);
    const state = {};
    if (el.disabled || el.getAttribute('aria-disabled') === 'true') state.disabled = true;
    if (role === 'checkbox' || role === 'radio') {
      state.checked = el.tagName === 'INPUT' ? el.checked : el.getAttribute('aria-checked') === 'true';
    }
    if (el.hasAttribute('aria-expanded')) state.expanded = el.getAttribute('aria-expanded') === 'true';
    if (el.hasAttribute('aria-selected')) state.selected = el.getAttribute('aria-selected') === 'true';
    if (el.tagName === 'OPTION') state.selected = el.selected;
    if (el.tagName === 'TEXTAREA' || el.tagName === 'SELECT' ||
        (el.tagName === 'INPUT' && !['checkbox', 'radio', 'submit', 'button', 'reset', 'image'].includes(el.type))) {
      state.value = el.type === 'password' ? (el.value ? '••••' : '') : cut(String(el.value), 200);
    }
    return state;
  };

  const kindOf = (el, role) => {
    if (el.tagName === 'TEXTAREA' || el.isContentEditable) return 'type';
    if (role === 'textbox' || role === 'searchbox') return 'type';
    if (el.tagName === 'INPUT' && TEXT_INPUTS.has((el.getAttribute('type') || '').toLowerCase())) return 'type';
    return 'click';
  };

  // The open modal on top, if any: the last one in document order.
  const modals = Array.from(document.querySelectorAll(
    'dialog[open], [role=dialog], [role=alertdialog], [aria-modal=true]'))
    .filter((d) => {
      for (let n = d; n; n = n.parentElement) if (!displayed(n)) return false;
      const r = d.getBoundingClientRect();
      return r.width > 0 && r.height > 0;
    });
  const modal = modals.length ? modals[modals.length - 1] : null;

  const elements = [];
  const items = [];
  let buffer = [];
  let bufferY = 0;
  const flush = () => {
    const text = clean(buffer.join(' '));
    if (text) items.push({ text, y: bufferY });
    buffer = [];
  };

  const walk = (node, root, doc, prefix, offX, offY, inModal) => {
    for (const child of Array.from(node.childNodes)) {
      if (child.nodeType === 3) {
        if (!inModal) continue;
        const parent = child.parentElement;
        if (parent && getComputedStyle(parent).visibility !== 'visible') continue;
        const text = child.textContent;
        if (clean(text)) {
          if (!buffer.length && parent) bufferY = offY + parent.getBoundingClientRect().top;
          buffer.push(text);
        }
        continue;
      }
      if (child.nodeType !== 1) continue;
      const el = child;
      if (SKIP.has(el.tagName) || !displayed(el)) continue;
      const here = inModal || el === modal;
      const style = getComputedStyle(el);
      // Not laid out at all (the closed part of a <details>, content-visibility: hidden).
      if (style.display !== 'contents' && !el.checkVisibility()) continue;
      const box = el.getBoundingClientRect();
      // A zero-size box that clips its content shows nothing.
      if ((box.width === 0 || box.height === 0) && style.display !== 'contents' &&
          (style.overflow !== 'visible' || (LEAF.has(el.tagName) && isInteractive(el)))) continue;
      const block = BLOCK.test(style.display);
      if (block) flush();
      if (here && isInteractive(el) && style.visibility === 'visible') {
        const r = el.getBoundingClientRect();
        if (r.width > 0 && r.height > 0) {
          flush();
          const role = roleOf(el);
          const top = offY + r.top, left = offX + r.left;
          elements.push({
            selector: prefix + selectorFor(el, root),
            role,
            name: nameOf(el, doc),
            text: cut(clean(el.innerText || el.textContent), 200),
            kind: kindOf(el, role),
            state: stateOf(el, role),
            in_viewport: top < vh && top + r.height > 0 && left < vw && left + r.width > 0,
            below: top >= vh,
          });
          items.push({ element: elements.length - 1, y: top });
          // A leaf's contents are its name, unless they hold interactive elements of their
          // own (the links in a <summary>).
          if (LEAF.has(el.tagName) && !el.shadowRoot &&
              !Array.from(el.querySelectorAll(CANDIDATES)).some(isInteractive)) continue;
        }
      }
      if (el.tagName === 'IFRAME') {
        let inner = null;
        try { inner = el.contentDocument; } catch (e) { inner = null; }
        if (inner && inner.body) {
          flush();
          const r = el.getBoundingClientRect();
          walk(inner.body, inner, inner, prefix + selectorFor(el, root) + ' >>> ',
            offX + r.left + el.clientLeft, offY + r.top + el.clientTop, here);
          flush();
        }
        continue;
      }
      if (el.shadowRoot) {
        flush();
        walk(el.shadowRoot, el.shadowRoot, doc, prefix + selectorFor(el, root) + ' >>> ', offX, offY, here);
        flush();
      }
      walk(el, root, doc, prefix, offX, offY, here);
      if (block) flush();
    }
  };
  if (document.body) walk(document.body, document, document, '', 0, 0, modal === null);
  flush();
  return {
    url: location.href,
    title: document.title,
    modal: modal !== null,
    viewport_height: vh,
    elements,
    items: items.map((i) => ({ text: i.text === undefined ? null : i.text,
      element: i.element === undefined ? null : i.element, below: i.y >= vh })),
  };
})()
