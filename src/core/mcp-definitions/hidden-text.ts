/**
 * Text a reviewer cannot see but a model reads: Unicode tag characters (an invisible copy of ASCII),
 * zero-width and bidi controls, other invisible format and control characters, runs of variation
 * selectors, and HTML comments (hidden wherever the description is rendered as Markdown or HTML).
 */

/** What kind of hidden text was found. */
export type HiddenKind = 'tag-characters' | 'zero-width' | 'bidi-control' | 'control-character' | 'variation-selectors' | 'html-comment';

/** Hidden text in one string: what the model reads (every hidden character spelled out) beside what a person sees. */
export interface HiddenText {
  kinds: HiddenKind[];
  /** How many hidden characters (and HTML comments) the text holds. */
  count: number;
  /** The text as the model reads it, every hidden character escaped (`\u{200B}`) and tag characters decoded (`⟦tags: ...⟧`). */
  model: string;
  /** The text as a person sees it rendered: hidden characters and HTML comments gone. */
  person: string;
}

const isTag = (c: number) => c >= 0xe0000 && c <= 0xe007f;
const isZeroWidth = (c: number) => (c >= 0x200b && c <= 0x200f) || (c >= 0x2060 && c <= 0x2064) || c === 0xfeff || c === 0x180e || c === 0x00ad || c === 0x034f || c === 0x115f || c === 0x1160 || c === 0x3164;
const isBidi = (c: number) => (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069) || c === 0x061c;
// C0 and C1 controls other than tab, newline and carriage return (an ANSI escape starts with 0x1b).
const isControl = (c: number) => (c < 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) || (c >= 0x7f && c <= 0x9f);
const isVariationSelector = (c: number) => (c >= 0xfe00 && c <= 0xfe0f) || (c >= 0xe0100 && c <= 0xe01ef);

const PICTOGRAPHIC = /\p{Extended_Pictographic}/u;
const NON_LATIN_LETTER = /[^\p{Script=Latin}\P{L}]/u;
const HTML_COMMENT = /<!--[\s\S]*?(?:-->|$)/g;
/** Any character {@link hiddenAt} may judge hidden, or a comment's start: text without one is read in one pass. */
const CANDIDATE =
  /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u00ad\u034f\u061c\u115f\u1160\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\u3164\ufe00-\ufe0f\ufeff\u{e0000}-\u{e007f}\u{e0100}-\u{e01ef}]|<!--/u;

const hex = (c: number) => `\\u{${c.toString(16).toUpperCase()}}`;

/**
 * Whether the character at `i` of `chars` is hidden here. Joiners inside emoji sequences and inside scripts that
 * need them (Persian, Indic), a byte-order mark at the very start, and one variation selector after a character
 * (emoji presentation) are how text is written, not hidden text.
 */
function hiddenAt(chars: readonly string[], i: number): HiddenKind | null {
  const c = chars[i]!.codePointAt(0)!;
  if (isTag(c)) return 'tag-characters';
  if (isBidi(c)) return 'bidi-control';
  if (isControl(c)) return 'control-character';
  if (isVariationSelector(c)) {
    const prev = i > 0 ? chars[i - 1]!.codePointAt(0)! : -1;
    const next = i + 1 < chars.length ? chars[i + 1]!.codePointAt(0)! : -1;
    return isVariationSelector(prev) || isVariationSelector(next) || c >= 0xe0100 ? 'variation-selectors' : null;
  }
  if (isZeroWidth(c)) {
    if (c === 0xfeff && i === 0) return null;
    if (c === 0x200c || c === 0x200d) {
      const around = [chars[i - 1] ?? '', chars[i + 1] ?? ''];
      if (around.some((x) => PICTOGRAPHIC.test(x)) || around.every((x) => NON_LATIN_LETTER.test(x))) return null;
    }
    return 'zero-width';
  }
  return null;
}

/** The hidden text in `text`, or null when a person sees all of it. */
export function findHiddenText(text: string): HiddenText | null {
  if (!CANDIDATE.test(text)) return null;
  const kinds = new Set<HiddenKind>();
  let count = 0;
  const comments = text.match(HTML_COMMENT) ?? [];
  if (comments.length > 0) {
    kinds.add('html-comment');
    count += comments.length;
  }
  const chars = [...text];
  let model = '';
  let person = '';
  let tags = '';
  const flushTags = () => {
    if (tags !== '') model += `⟦tags: ${tags}⟧`;
    tags = '';
  };
  chars.forEach((ch, i) => {
    const kind = hiddenAt(chars, i);
    const c = ch.codePointAt(0)!;
    if (kind === 'tag-characters') {
      kinds.add(kind);
      count += 1;
      // U+E0020-U+E007E mirror printable ASCII; the others (language tag, cancel tag) are spelled out.
      tags += c >= 0xe0020 && c <= 0xe007e ? String.fromCharCode(c - 0xe0000) : hex(c);
      return;
    }
    flushTags();
    if (kind !== null) {
      kinds.add(kind);
      count += 1;
      model += hex(c);
      return;
    }
    model += ch;
    person += ch;
  });
  flushTags();
  if (count === 0) return null;
  return { kinds: [...kinds], count, model, person: person.replace(HTML_COMMENT, '') };
}

/**
 * `text` made safe to score without hiding evidence: zero-width, bidi, control and variation-selector runs are
 * removed (they split words for the tokenizer and reorder what a person reads), and tag characters become the
 * ASCII they encode, marked `⟦tags: ...⟧`, so the model reads the hidden instruction in plain letters. HTML
 * comments stay: their text is already plain to the model. The finding keeps the original.
 */
export function sanitizeHiddenText(text: string): string {
  if (!CANDIDATE.test(text)) return text;
  const chars = [...text];
  let out = '';
  let tags = '';
  chars.forEach((ch, i) => {
    const kind = hiddenAt(chars, i);
    if (kind === 'tag-characters') {
      const c = ch.codePointAt(0)!;
      tags += c >= 0xe0020 && c <= 0xe007e ? String.fromCharCode(c - 0xe0000) : '';
      return;
    }
    if (tags !== '') out += `⟦tags: ${tags}⟧`;
    tags = '';
    if (kind === null) out += ch;
  });
  return tags !== '' ? `${out}⟦tags: ${tags}⟧` : out;
}
