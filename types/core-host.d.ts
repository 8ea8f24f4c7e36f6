/**
 * Everything src/core takes from its host, and nothing more: `tsconfig.core.json` compiles the core
 * against ES2022 and these declarations alone (no DOM, no Node types), so a page, a worker and Node all
 * provide them, and a core module that reaches for anything else (document, process, fetch, Buffer)
 * fails to compile. Shapes follow the DOM's, reduced to what the core uses.
 */

/** The timer behind the deadline and the yields (core/deadline.ts, core/long-texts.ts). */
declare function setTimeout(handler: () => void, ms?: number): unknown;
declare function clearTimeout(id: unknown): void;

/** The deadline's and the caller's abort. */
interface AbortSignal {
  readonly aborted: boolean;
  readonly reason: unknown;
  throwIfAborted(): void;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}
declare var AbortSignal: {
  prototype: AbortSignal;
  abort(reason?: unknown): AbortSignal;
  any(signals: AbortSignal[]): AbortSignal;
};
declare class AbortController {
  readonly signal: AbortSignal;
  abort(reason?: unknown): void;
}

/** Option checks (remoteProxy.url). */
declare class URL {
  constructor(url: string, base?: string);
  readonly protocol: string;
  readonly host: string;
  readonly href: string;
}

/** Plain-data copies of inputs and verdicts. */
declare function structuredClone<T>(value: T): T;

/** Timings on verdicts (Date.now() where a host has no performance clock). */
declare var performance: { now(): number } | undefined;
