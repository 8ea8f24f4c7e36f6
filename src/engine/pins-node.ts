/**
 * Tool pins in a file (Node): by default tool-pins.json in the cache directory (~/.cache/edgearmor, or
 * $XDG_CACHE_HOME/edgearmor), where model files are cached too. Written whole to a temporary file and
 * renamed over the old one, so a crash mid-write leaves the previous pins, never half a file.
 */
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { createToolPins, type PinStore, type ToolPins } from '../core/mcp-definitions/pins.js';
import { defaultCacheDir } from './files-node.js';

/** The pin file's name in the cache directory. */
export const PIN_FILE_NAME = 'tool-pins.json';

/** A pin store in the file `path` (default: tool-pins.json in the cache directory). */
export function filePinStore(path: string = join(defaultCacheDir(), PIN_FILE_NAME)): PinStore {
  return {
    location: path,
    async read() {
      try {
        return await readFile(path, 'utf8');
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
        throw e;
      }
    },
    async write(text) {
      await mkdir(dirname(path), { recursive: true });
      const temporary = `${path}.${process.pid}.tmp`;
      await writeFile(temporary, text, { mode: 0o600 });
      await rename(temporary, path);
    },
  };
}

/** Tool pins kept in the file `path` (default: tool-pins.json in the cache directory). */
export function createNodeToolPins(path?: string): ToolPins {
  return createToolPins(filePinStore(path));
}
