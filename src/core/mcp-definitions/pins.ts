/**
 * Pinned tool definitions: trusted on first use, compared on every later listing, changed only by an
 * explicit approval. The store holds text (a file in Node, an IndexedDB record in the browser); reading
 * and checking it is here, so a corrupt or edited store is refused the same way on every host. The
 * integrity hash catches corruption and hand edits that do not recompute it; it is not a signature, so
 * whoever can write the store and knows the format can forge it (docs/mcp-definitions.md).
 */
import { PinStoreError } from '../errors.js';
import { isPlainObject } from '../json.js';
import type { JsonObject } from '../types.js';
import { canonicalJson, definitionDiff, definitionHash } from './canonical.js';
import { sha256Hex } from './sha256.js';
import type { DefinitionFinding, ServerTools, ToolDefinition } from './types.js';

/** The `schema` field of a pin store. */
export const PIN_STORE_SCHEMA = 'edgearmor-tool-pins';
/** The version of the pin store's format. */
export const PIN_STORE_VERSION = 1;

/** One approved definition and its hash. */
export interface PinnedTool {
  hash: string;
  definition: ToolDefinition;
}

/** Approved definitions by server, then by tool name. */
export type PinnedServers = Record<string, Record<string, PinnedTool>>;

/** Where pins are kept: text in, text out; null when nothing was stored yet. */
export interface PinStore {
  /** Where the store is, for messages (a file path, an IndexedDB database and key). */
  readonly location: string;
  read(): Promise<string | null>;
  write(text: string): Promise<void>;
}

/** The hash over a store's servers that its `integrity` field must equal. */
const integrityOf = (servers: PinnedServers) => sha256Hex(canonicalJson(servers as unknown as JsonObject));

/** The store's text for `servers`, with its integrity hash. */
export function serializePins(servers: PinnedServers): string {
  return `${JSON.stringify({ schema: PIN_STORE_SCHEMA, version: PIN_STORE_VERSION, integrity: integrityOf(servers), servers }, null, 2)}\n`;
}

const refuse = (location: string, problem: string, message: string) =>
  new PinStoreError(`tool pins at ${location}: ${message}; the pins were not re-trusted. Move the store aside to pin the servers afresh, or restore it.`, { location, problem });

function isDefinition(value: unknown): value is ToolDefinition {
  return (
    isPlainObject(value) &&
    typeof value['name'] === 'string' &&
    typeof value['description'] === 'string' &&
    isPlainObject(value['inputSchema']) &&
    (value['annotations'] === undefined || isPlainObject(value['annotations']))
  );
}

/** The servers of a store's text; a store that does not parse, has another schema, or whose integrity hash does not match is a PinStoreError. */
export function parsePins(text: string, location: string): PinnedServers {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw refuse(location, 'unparseable', `the store is not JSON (${(e as Error).message}): it is corrupt`);
  }
  if (!isPlainObject(value) || value['schema'] !== PIN_STORE_SCHEMA || value['version'] !== PIN_STORE_VERSION) {
    const got = isPlainObject(value) ? `schema ${JSON.stringify(value['schema'])}, version ${JSON.stringify(value['version'])}` : 'no object';
    throw refuse(location, 'wrong-schema', `received ${got}; expected schema "${PIN_STORE_SCHEMA}", version ${PIN_STORE_VERSION}`);
  }
  const servers = value['servers'];
  const wellFormed =
    isPlainObject(servers) &&
    Object.values(servers).every((tools) => isPlainObject(tools) && Object.entries(tools).every(([name, p]) => isPlainObject(p) && typeof p['hash'] === 'string' && isDefinition(p['definition']) && p['definition'].name === name));
  if (!wellFormed) throw refuse(location, 'wrong-schema', 'its servers are not {server: {tool: {hash, definition}}}');
  const pinned = servers as PinnedServers;
  if (value['integrity'] !== integrityOf(pinned)) throw refuse(location, 'integrity-mismatch', 'its integrity hash does not match its contents, which may indicate tampering');
  for (const [server, tools] of Object.entries(pinned)) {
    for (const [name, p] of Object.entries(tools)) {
      if (definitionHash(p.definition) !== p.hash) throw refuse(location, 'integrity-mismatch', `the pinned definition of ${server}/${name} does not match its hash, which may indicate tampering`);
    }
  }
  return pinned;
}

/** Each tool of a listing pinned under its name. */
const pinAll = (tools: readonly ToolDefinition[]): Record<string, PinnedTool> => Object.fromEntries(tools.map((t) => [t.name, { hash: definitionHash(t), definition: t }]));

/**
 * The listings compared with the pins: a server never seen is pinned as listed (trusted on first use); for a
 * pinned server, every tool whose definition changed, that was added or that is gone is a finding. Pins
 * change only for servers seen the first time.
 */
export function comparePins(pinned: PinnedServers, servers: readonly ServerTools[]): { findings: DefinitionFinding[]; pinned: PinnedServers } {
  const next: PinnedServers = { ...pinned };
  const findings: DefinitionFinding[] = [];
  for (const { server, tools } of servers) {
    const known = pinned[server];
    if (known === undefined) {
      next[server] = pinAll(tools);
      continue;
    }
    const listed = new Set(tools.map((t) => t.name));
    for (const t of tools) {
      const p = known[t.name];
      if (p === undefined) findings.push({ kind: 'tool-added', server, tool: t.name, text: `${server} lists ${t.name}, a tool not approved for this server` });
      else if (p.hash !== definitionHash(t)) {
        const diff = definitionDiff(p.definition, t);
        findings.push({ kind: 'definition-changed', server, tool: t.name, text: `${server}/${t.name} changed since it was approved (${diff.length} ${diff.length === 1 ? 'field' : 'fields'})`, diff });
      }
    }
    for (const name of Object.keys(known)) if (!listed.has(name)) findings.push({ kind: 'tool-removed', server, tool: name, text: `${server} no longer lists ${name}, an approved tool` });
  }
  return { findings, pinned: next };
}

/** The pins with `tools` approved for `server`: every listed tool (or those in `names`) pinned as listed, and approved tools no longer listed dropped. */
export function approvePins(pinned: PinnedServers, server: string, tools: readonly ToolDefinition[], names?: readonly string[]): PinnedServers {
  const chosen = names === undefined ? null : new Set(names);
  const current = { ...(pinned[server] ?? {}) };
  const listed = new Map(tools.map((t) => [t.name, t]));
  for (const name of chosen ?? new Set([...listed.keys(), ...Object.keys(current)])) {
    const t = listed.get(name);
    if (t === undefined) delete current[name];
    else current[name] = { hash: definitionHash(t), definition: t };
  }
  return { ...pinned, [server]: current };
}

/** Tool pins over a store: review listings against them, approve changes. Operations on one instance run one at a time. */
export interface ToolPins {
  /** Findings of the listings against the pins; servers seen the first time are pinned (and the store written). */
  review(servers: readonly ServerTools[]): Promise<DefinitionFinding[]>;
  /** Approves `server`'s listing (all its tools, or those in `names`) and writes the store. */
  approve(server: string, tools: readonly ToolDefinition[], names?: readonly string[]): Promise<void>;
  /** The approved definitions of a server, or null for a server never pinned. */
  approved(server: string): Promise<Record<string, PinnedTool> | null>;
}

/** Tool pins kept in `store`; a store that cannot be read as written rejects every operation with a PinStoreError. */
export function createToolPins(store: PinStore): ToolPins {
  let queue: Promise<unknown> = Promise.resolve();
  const serial = <T>(task: () => Promise<T>): Promise<T> => {
    const run = queue.then(task, task);
    queue = run.catch(() => undefined);
    return run;
  };
  const load = async (): Promise<PinnedServers> => {
    const text = await store.read();
    return text === null ? {} : parsePins(text, store.location);
  };
  return {
    review: (servers) =>
      serial(async () => {
        const before = await load();
        const { findings, pinned } = comparePins(before, servers);
        if (Object.keys(pinned).length !== Object.keys(before).length) await store.write(serializePins(pinned));
        return findings;
      }),
    approve: (server, tools, names) => serial(async () => store.write(serializePins(approvePins(await load(), server, tools, names)))),
    approved: (server) => serial(async () => (await load())[server] ?? null),
  };
}

/** A store in memory, for tests and for clients that pin for one session only. */
export function memoryPinStore(initial: string | null = null): PinStore & { text: string | null } {
  const store = {
    location: 'memory',
    text: initial,
    read: async () => store.text,
    write: async (text: string) => {
      store.text = text;
    },
  };
  return store;
}
