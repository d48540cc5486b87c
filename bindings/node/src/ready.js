// The text aimux_poll_ready returns, decoded: `[[handle, ended, events | null, envelope | null], ...]`
// (CONTRACT §5), the same value JSON.parse gives.
//
// JSON.parse is most of this binding's work per event: V8 interns every string value of up to 10
// characters it parses (a string-table lookup each), and a text delta is such a string. The
// deltas (`{"type":"text-delta","text":"..."}`, and `reasoning-delta`) without an escape are read
// here with a slice instead (a long one is copied out by JSON.parse of its string alone); every
// other event, the envelope and anything unexpected go to JSON.parse (the whole text, if its
// layout is not the library's own).

const TEXT_DELTA = '{"type":"text-delta","text":"';
const REASONING_DELTA = '{"type":"reasoning-delta","text":"';
/** V8 copies a slice shorter than this (SlicedString::kMinLength); a longer one is a view. */
const SLICE_COPIES = 13;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;

/** The end (index after) of the JSON object or array starting at `i` (JSON text, no check). */
function valueEnd(t, i) {
  let depth = 0;
  for (let j = i; j < t.length; j++) {
    const c = t.charCodeAt(j);
    if (c === QUOTE) {
      for (j++; j < t.length && t.charCodeAt(j) !== QUOTE; j++) if (t.charCodeAt(j) === BACKSLASH) j++;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      depth++;
    } else if ((c === CLOSE_BRACE || c === CLOSE_BRACKET) && --depth === 0) {
      return j + 1;
    }
  }
  return -1;
}

/** Digits at `i` as a number and where they end, or null. */
function integerAt(t, i) {
  let j = i;
  while (j < t.length && t.charCodeAt(j) >= 0x30 && t.charCodeAt(j) <= 0x39) j++;
  return j > i && j - i <= 15 ? [Number(t.slice(i, j)), j] : null;
}

/** The events array at `i` (`[` already there) and where it ends, or null (not the usual layout). */
function eventsAt(t, i, state) {
  const events = [];
  let j = i + 1;
  if (t.charCodeAt(j) === CLOSE_BRACKET) return [events, j + 1];
  for (;;) {
    if (t.charCodeAt(j) !== OPEN_BRACE) return null;
    let end = -1;
    const type = t.startsWith(TEXT_DELTA, j) ? 'text-delta' : t.startsWith(REASONING_DELTA, j) ? 'reasoning-delta' : null;
    if (type !== null) {
      const s = j + (type === 'text-delta' ? TEXT_DELTA.length : REASONING_DELTA.length);
      const q = t.indexOf('"', s);
      if (state.backslash !== -1 && state.backslash < s) state.backslash = t.indexOf('\\', s);
      // no escape in the text (else JSON.parse reads it) and nothing after it but the `}`
      if (q !== -1 && (state.backslash === -1 || state.backslash > q) && t.charCodeAt(q + 1) === CLOSE_BRACE) {
        // a slice of 13 characters or more would be V8's view of the whole text, keeping it alive
        // as long as the delta lives: a longer text is copied out by JSON.parse (not interned)
        events.push({ type, text: q - s < SLICE_COPIES ? t.slice(s, q) : JSON.parse(t.slice(s - 1, q + 1)) });
        end = q + 2;
      }
    }
    if (end === -1) {
      end = valueEnd(t, j);
      if (end === -1) return null;
      events.push(JSON.parse(t.slice(j, end)));
    }
    const c = t.charCodeAt(end);
    if (c === CLOSE_BRACKET) return [events, end + 1];
    if (c !== COMMA) return null;
    j = end + 1;
  }
}

/** The entries, or null when the text is not laid out as the library writes it. */
function entries(t) {
  const out = [];
  const state = { backslash: t.indexOf('\\') };
  if (t.charCodeAt(0) !== OPEN_BRACKET) return null;
  let i = 1;
  for (;;) {
    if (t.charCodeAt(i) !== OPEN_BRACKET) return null;
    const handle = integerAt(t, i + 1);
    if (handle === null) return null;
    i = handle[1];
    const ended = t.charCodeAt(i + 1);
    if (t.charCodeAt(i) !== COMMA || (ended !== 0x30 && ended !== 0x31) || t.charCodeAt(i + 2) !== COMMA) return null;
    i += 3;
    let events = null;
    if (t.startsWith('null', i)) {
      i += 4;
    } else if (t.charCodeAt(i) === OPEN_BRACKET) {
      const got = eventsAt(t, i, state);
      if (got === null) return null;
      [events, i] = got;
    } else {
      return null;
    }
    if (t.charCodeAt(i) !== COMMA) return null;
    i++;
    let envelope = null;
    if (t.startsWith('null', i)) {
      i += 4;
    } else if (t.charCodeAt(i) === OPEN_BRACE) {
      const end = valueEnd(t, i);
      if (end === -1) return null;
      envelope = JSON.parse(t.slice(i, end));
      i = end;
    } else {
      return null;
    }
    if (t.charCodeAt(i) !== CLOSE_BRACKET) return null;
    out.push([handle[0], ended - 0x30, events, envelope]);
    i++;
    const c = t.charCodeAt(i);
    if (c === CLOSE_BRACKET && i === t.length - 1) return out;
    if (c !== COMMA) return null;
    i++;
  }
}

/** aimux_poll_ready's text as JSON.parse reads it (a SyntaxError as JSON.parse throws it). */
export function parseReady(text) {
  let got = null;
  try {
    got = entries(text);
  } catch {
    // JSON.parse below says what is wrong
  }
  return got ?? JSON.parse(text);
}
