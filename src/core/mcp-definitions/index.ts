/** Tool definitions checked without the model: pins, collisions, shadowing, hidden text and schema anomalies. */
export * from './types.js';
export { canonicalJson, definitionDiff, definitionHash } from './canonical.js';
export { sha256Hex } from './sha256.js';
export { findHiddenText, sanitizeHiddenText, type HiddenKind, type HiddenText } from './hidden-text.js';
export { editDistance, foldName, lookalike, nameSkeleton } from './names.js';
export { hiddenTextFindings, nameCollisions, reviewServers, schemaAnomalies, shadowingFindings } from './checks.js';
export * from './pins.js';
export { blockingFindings, findingsAbout } from './policy.js';
