// comlink ships node-adapter.d.ts beside node-adapter.mjs, but TypeScript looks for .d.mts for an .mjs import.
declare module 'comlink/dist/esm/node-adapter.mjs' {
  import type { Endpoint } from 'comlink';
  export interface NodeEndpoint {
    postMessage(message: unknown, transfer?: readonly unknown[]): void;
    on(type: string, listener: (...args: unknown[]) => void, options?: object): unknown;
    off(type: string, listener: (...args: unknown[]) => void, options?: object): unknown;
    start?: () => void;
  }
  export default function nodeEndpoint(nep: NodeEndpoint): Endpoint;
}
