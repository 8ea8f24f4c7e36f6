/**
 * Tool pins in the browser: one IndexedDB record holding the store's text, so pins survive a reload and
 * are checked (schema, integrity hash) by the same core code as the Node file.
 */
import { createToolPins, type PinStore, type ToolPins } from '../core/mcp-definitions/pins.js';

/** The IndexedDB database, object store and key that hold the pins. */
export const PIN_DATABASE = { name: 'edgearmor', store: 'tool-pins', key: 'pins' } as const;

function request<T>(r: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error);
  });
}

function open(name: string, store: string): Promise<IDBDatabase> {
  const r = indexedDB.open(name, 1);
  r.onupgradeneeded = () => {
    if (!r.result.objectStoreNames.contains(store)) r.result.createObjectStore(store);
  };
  return request(r);
}

/** A pin store in IndexedDB (default: database "edgearmor", object store "tool-pins", key "pins"). */
export function indexedDbPinStore(options: { database?: string; store?: string; key?: string } = {}): PinStore {
  const name = options.database ?? PIN_DATABASE.name;
  const store = options.store ?? PIN_DATABASE.store;
  const key = options.key ?? PIN_DATABASE.key;
  const withStore = async <T>(mode: IDBTransactionMode, run: (s: IDBObjectStore) => IDBRequest<T>): Promise<T> => {
    const db = await open(name, store);
    try {
      return await request(run(db.transaction(store, mode).objectStore(store)));
    } finally {
      db.close();
    }
  };
  return {
    location: `IndexedDB ${name}/${store}/${key}`,
    read: async () => {
      const value: unknown = await withStore('readonly', (s) => s.get(key));
      // Anything but text under the key is a store this code did not write: the core refuses it as not JSON.
      return value === undefined ? null : typeof value === 'string' ? value : `(not text: ${typeof value})`;
    },
    write: async (text) => {
      await withStore('readwrite', (s) => s.put(text, key));
    },
  };
}

/** Tool pins kept in IndexedDB. */
export function createBrowserToolPins(options?: Parameters<typeof indexedDbPinStore>[0]): ToolPins {
  return createToolPins(indexedDbPinStore(options));
}
