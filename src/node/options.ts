/**
 * createNodeGuard's own options (besides the guard's and the runtime's): where the model is and where
 * fetched files are cached, the backend, isolation and its grace. Declared with the Node shell; what it shares with
 * createGuard's (page/options.ts) is one declaration in core/shell-options.ts.
 */
import * as v from 'valibot';
import type { OrtBackend } from '../core/backend-plan.js';
import { group, nonBlank, oneOf, option, type OptionsInput } from '../core/option-schema.js';
import { BACKEND_OPTION, MODEL_DIR_OPTION, MODEL_URL_OPTION, ON_PROGRESS_OPTION, STUCK_GRACE_OPTION } from '../core/shell-options.js';

/** createNodeGuard's own options (besides the guard's and the runtime's). */
export const NODE_OPTIONS = group(
  {
    modelDir: MODEL_DIR_OPTION,
    modelUrl: MODEL_URL_OPTION,
    cacheDir: option(v.nullable(nonBlank('a directory path, or null')), null, {
      summary: 'where files fetched from modelUrl are streamed and cached by SHA-256, weights loaded from there by path (docs/proxies.md, "Weights of any size"); null keeps each file in memory, at most 2 GiB',
      defaultText: '`$XDG_CACHE_HOME/edgearmor` or `~/.cache/edgearmor`',
    }),
    backend: BACKEND_OPTION,
    backends: option(
      v.custom<OrtBackend[]>((x) => Array.isArray(x), 'a list of backends'),
      null,
      { summary: 'alias of `backend` kept for existing callers: the backends to try, in order (e.g. `["node", "wasm"]`); give one of the two', defaultText: 'none' },
    ),
    onProgress: ON_PROGRESS_OPTION,
    isolation: option(oneOf(['none', 'process']), 'none', {
      summary:
        "`process`: onnxruntime-node in a child process (status.backend `node-process`): a native crash or kill costs one check, not the host, and the host's event loop stays free (where no process can start: wasm in a worker thread, else here, with the reason); `none`: in this process",
    }),
    stuckWorkerGraceMs: STUCK_GRACE_OPTION,
  },
  "createNodeGuard's own options",
);

/** createNodeGuard's own options as callers give them. */
export type NodeShellOptions = OptionsInput<typeof NODE_OPTIONS>;
