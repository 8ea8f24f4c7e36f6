/**
 * When two tool names read as one: the same name with its case or separators changed, written with
 * confusable characters, decorated with a word that claims authority ("official_x", "x_v2"), or one typing
 * slip apart. What counts as confusable is a small table of the Cyrillic, Greek and digit lookalikes of Latin
 * letters (after NFKC folds full-width and compatibility forms), not Unicode's whole confusables list.
 */

/** Letters that render like a Latin letter, mapped to it. */
const CONFUSABLE: Readonly<Record<string, string>> = {
  а: 'a', в: 'b', е: 'e', ё: 'e', к: 'k', м: 'm', н: 'h', о: 'o', р: 'p', с: 'c', т: 't', у: 'y', х: 'x', ѕ: 's', і: 'i', ї: 'i', ј: 'j', ԁ: 'd', һ: 'h', ԛ: 'q', ԝ: 'w', ɡ: 'g',
  α: 'a', β: 'b', ε: 'e', η: 'n', ι: 'i', κ: 'k', ν: 'v', ο: 'o', ρ: 'p', τ: 't', υ: 'u', χ: 'x', ω: 'w', ϲ: 'c',
  '0': 'o', '1': 'l', '|': 'l', i: 'l', '5': 's', '$': 's', '@': 'a',
};

/** Separators that do not change how a name reads. */
const SEPARATORS = /[\s_.\-:/]+/g;

/** The name with case and separators folded: `Send-Email` and `send_email` fold alike. */
export function foldName(name: string): string {
  return name.normalize('NFKC').toLowerCase().replace(SEPARATORS, '');
}

/** The name as it looks: folded, every confusable character mapped to the Latin letter it imitates, `rn` read as `m`. */
export function nameSkeleton(name: string): string {
  return [...foldName(name)]
    .map((ch) => CONFUSABLE[ch] ?? ch)
    .join('')
    .replace(/rn/g, 'm')
    .replace(/vv/g, 'w');
}

/** Optimal string alignment distance (Damerau-Levenshtein with adjacent swaps), stopping early above `limit`. */
export function editDistance(a: string, b: string, limit = Infinity): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  let prev2: number[] = [];
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    let best = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, prev2[j - 2]! + 1);
      row.push(d);
      best = Math.min(best, d);
    }
    if (best > limit) return limit + 1;
    prev2 = prev;
    prev = row;
  }
  return prev[b.length]!;
}

/** Words a lookalike tool adds to another's name to claim it is the one to use. */
const DECORATIONS = ['official', 'secure', 'safe', 'verified', 'trusted', 'real', 'true', 'new', 'latest', 'updated', 'fixed', 'better', 'enhanced', 'improved', 'pro', 'plus', 'premium', 'smart', 'turbo', 'fast', 'ultra', 'max', 'v2', 'v3', '2', 'internal', 'admin'];

/** Fewest folded characters a name needs before a one-edit difference or a decoration counts (short names differ by one edit by chance). */
export const MIN_LOOKALIKE_CHARS = 5;

/** A name with the forms the comparisons read, computed once per name. */
export interface NameForms {
  name: string;
  folded: string;
  skeleton: string;
  /** The folded name, and for a dotted name also its folded last part (`text_to_speech.convert` is called `convert` too). */
  parts: string[];
}

/** The forms of `name` that {@link lookalike} compares. */
export function nameForms(name: string): NameForms {
  const folded = foldName(name);
  return { name, folded, skeleton: nameSkeleton(name), parts: [folded, ...(name.includes('.') ? [foldName(name.slice(name.lastIndexOf('.') + 1))] : [])] };
}

/** How one name imitates another. */
export type LookalikeKind = 'same-name' | 'case-or-separators' | 'confusable-characters' | 'decorated' | 'one-edit';

/** How `a` imitates `b` (names or their precomputed forms), or null when they read as different names. */
export function lookalike(a: string | NameForms, b: string | NameForms): LookalikeKind | null {
  const x = typeof a === 'string' ? nameForms(a) : a;
  const y = typeof b === 'string' ? nameForms(b) : b;
  if (x.name === y.name) return 'same-name';
  if (x.folded === y.folded) return 'case-or-separators';
  if (x.skeleton === y.skeleton) return 'confusable-characters';
  for (const p of x.parts) {
    for (const q of y.parts) {
      const [short, long] = p.length <= q.length ? [p, q] : [q, p];
      if (short.length >= MIN_LOOKALIKE_CHARS && long.length > short.length && long.includes(short) && DECORATIONS.some((d) => long === `${d}${short}` || long === `${short}${d}`)) return 'decorated';
    }
  }
  if (Math.min(x.skeleton.length, y.skeleton.length) >= MIN_LOOKALIKE_CHARS && editDistance(x.skeleton, y.skeleton, 1) <= 1) return 'one-edit';
  return null;
}
