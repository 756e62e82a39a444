package browser

import (
	"fmt"
	"strconv"
)

// RefAttribute marks the interactive elements of the last snapshot with
// their numbers, so browser_click and browser_type can find element [n].
const RefAttribute = "data-fenix-ref"

// Element is one numbered interactive element of a snapshot.
type Element struct {
	Ref         int    `json:"ref"`
	Role        string `json:"role"`
	Name        string `json:"name,omitempty"`
	Tag         string `json:"tag"`
	Type        string `json:"type,omitempty"`
	Value       string `json:"value,omitempty"`
	Href        string `json:"href,omitempty"`
	Placeholder string `json:"placeholder,omitempty"`
	Disabled    bool   `json:"disabled,omitempty"`
}

// Page is a snapshot: the page as text, interactive elements numbered
// inline as "[n] role "name"", and the same elements as a list.
type Page struct {
	URL      string    `json:"url"`
	Title    string    `json:"title"`
	Text     string    `json:"text"`
	Elements []Element `json:"elements"`
	// Truncated is set when the text or the element list hit their caps.
	Truncated bool `json:"truncated,omitempty"`
}

// MaxElements caps the numbered elements of one snapshot.
const MaxElements = 500

// RefSelector is the CSS selector of element [n] of the last snapshot.
func RefSelector(ref int) string {
	return "[" + RefAttribute + "=\"" + strconv.Itoa(ref) + "\"]"
}

// snapshotJS walks the rendered DOM. Hidden elements (display:none,
// visibility:hidden, zero-size) are skipped; text of blocks goes on its own
// lines; interactive elements get numbers, replacing the numbers of any
// earlier snapshot. It stops at maxChars characters of text.
func snapshotJS(maxChars int) string {
	return fmt.Sprintf(`(() => {
const ATTR = %q, MAX_CHARS = %d, MAX_ELEMENTS = %d, MAX_TITLE = %d, MAX_URL = %d;
`+namingJS+`
for (const el of document.querySelectorAll('[' + ATTR + ']')) el.removeAttribute(ATTR);
const lines = []; let cur = ''; let chars = 0; let truncated = false;
const elements = [];
const flush = () => { const t = cur.replace(/\s+/g, ' ').trim(); if (t) { lines.push(t); chars += t.length + 1; } cur = ''; };
const clip = (s, n) => { s = (s || '').replace(/\s+/g, ' ').trim(); return s.length > n ? s.slice(0, n) + '…' : s; };
const BLOCK = new Set(['ADDRESS','ARTICLE','ASIDE','BLOCKQUOTE','BR','DD','DIV','DL','DT','FIELDSET','FIGCAPTION','FIGURE','FOOTER','FORM','H1','H2','H3','H4','H5','H6','HEADER','HR','LI','MAIN','NAV','OL','P','PRE','SECTION','TABLE','TD','TH','TR','UL','LABEL']);
const SKIP = new Set(['SCRIPT','STYLE','NOSCRIPT','TEMPLATE','SVG','HEAD','META','LINK','IFRAME','OBJECT','CANVAS']);
const visible = (el) => {
  const s = getComputedStyle(el);
  if (s.display === 'none' || s.visibility === 'hidden') return false;
  const r = el.getBoundingClientRect();
  return r.width > 0 || r.height > 0 || s.display === 'contents';
};
const walk = (node) => {
  if (chars >= MAX_CHARS) { truncated = true; return; }
  if (node.nodeType === Node.TEXT_NODE) { cur += node.nodeValue; return; }
  if (node.nodeType !== Node.ELEMENT_NODE) return;
  const el = node;
  if (SKIP.has(el.tagName) || !visible(el)) return;
  const role = roleOf(el);
  if (INTERACTIVE.has(role)) {
    if (elements.length >= MAX_ELEMENTS) { truncated = true; return; }
    const ref = elements.length + 1;
    el.setAttribute(ATTR, String(ref));
    const e = { ref, role, name: clip(nameOf(el, role), 100), tag: el.tagName.toLowerCase() };
    if (el.tagName === 'INPUT') e.type = (el.type || 'text').toLowerCase();
    if ((role === 'textbox' || role === 'combobox' || role === 'searchbox') && 'value' in el) e.value = clip(e.type === 'password' ? (el.value ? '••••' : '') : el.value, 200);
    if (role === 'checkbox' || role === 'radio') e.value = el.checked ? 'checked' : 'unchecked';
    if (el.getAttribute('placeholder')) e.placeholder = clip(el.getAttribute('placeholder'), 100);
    if (role === 'link') e.href = clip(el.href, MAX_URL);
    if (el.disabled) e.disabled = true;
    elements.push(e);
    let desc = '[' + ref + '] ' + role + (e.name ? ' "' + e.name + '"' : '');
    if (e.type && e.type !== 'text' && role === 'textbox') desc += ' type=' + e.type;
    if (e.placeholder) desc += ' placeholder="' + e.placeholder + '"';
    if (e.value !== undefined && e.value !== '') desc += ' value="' + e.value + '"';
    if (e.disabled) desc += ' (disabled)';
    cur += ' ' + desc + ' ';
    return;
  }
  const block = BLOCK.has(el.tagName);
  if (block) flush();
  for (const child of el.childNodes) walk(child);
  if (block) flush();
};
if (document.body) walk(document.body);
flush();
let text = lines.join('\n');
if (text.length > MAX_CHARS) { text = text.slice(0, MAX_CHARS); truncated = true; }
return { url: clip(location.href, MAX_URL), title: clip(document.title, MAX_TITLE), text, elements, truncated };
})()`, RefAttribute, maxChars, MaxElements, maxTitleChars, maxURLChars)
}

// namingJS gives an element's role and accessible name, as snapshots show
// them.
const namingJS = `const roleOf = (el) => {
  const r = el.getAttribute('role'); if (r) return r;
  switch (el.tagName) {
  case 'A': return el.hasAttribute('href') ? 'link' : '';
  case 'BUTTON': case 'SUMMARY': return 'button';
  case 'SELECT': return 'combobox';
  case 'TEXTAREA': return 'textbox';
  case 'INPUT': {
    const t = (el.type || 'text').toLowerCase();
    if (t === 'hidden') return '';
    if (t === 'submit' || t === 'button' || t === 'reset' || t === 'image') return 'button';
    if (t === 'checkbox' || t === 'radio') return t;
    return 'textbox';
  }
  }
  if (el.isContentEditable && el.getAttribute('contenteditable') !== null) return 'textbox';
  if (el.hasAttribute('onclick') || el.tabIndex >= 0 && el.hasAttribute('tabindex')) return 'button';
  return '';
};
const INTERACTIVE = new Set(['link','button','textbox','combobox','checkbox','radio','searchbox','menuitem','tab','switch','option','slider','spinbutton']);
const labelFor = (el) => {
  const aria = el.getAttribute('aria-label'); if (aria) return aria;
  if (el.id) { const l = document.querySelector('label[for="' + CSS.escape(el.id) + '"]'); if (l) return l.innerText; }
  const wrap = el.closest('label'); if (wrap && wrap !== el) return wrap.innerText;
  return '';
};
const nameOf = (el, role) => {
  if (el.tagName === 'INPUT' || el.tagName === 'TEXTAREA' || el.tagName === 'SELECT') {
    if (role === 'button') return el.value || el.getAttribute('aria-label') || el.name || '';
    return labelFor(el) || el.getAttribute('title') || el.name || '';
  }
  return el.getAttribute('aria-label') || el.innerText || el.getAttribute('title') || '';
};
`

// describeJS describes the first element matching a selector, null when
// there is none, or the selector's syntax error.
func describeJS(selector string) string {
	return fmt.Sprintf(`(() => {
let el;
try { el = document.querySelector(%q); } catch (e) { return { invalid: String(e.message || e) }; }
if (!el) return null;
`+namingJS+`
return { tag: el.tagName.toLowerCase(), name: nameOf(el, roleOf(el)).replace(/\s+/g, ' ').trim().slice(0, 100) };
})()`, selector)
}
