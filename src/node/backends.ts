/**
 * The backend plan of a Node host, and the engine loaded on it: what createNodeGuard, `edgearmor serve-proxy` and
 * the evaluation's reference engine share (the worker's scorer host plans for its own host in worker/service.ts).
 */
import { isMainThread } from 'node:worker_threads';
import { joinReasons, planBackends, type BackendPlan, type BackendRequest } from '../core/backend-plan.js';
import type { ProxyEngine } from '../engine/engine.js';
import { loadPlannedEngine } from '../engine/local-guard.js';
import type { ModelFiles } from '../engine/model-files.js';

/**
 * Plans the backends for this Node thread, or for a child process it starts (`inChildProcess`): a child is a
 * main thread, so onnxruntime-node is safe there even when this is a worker thread.
 */
export function planNodeBackends(request: BackendRequest = 'auto', where: { inChildProcess?: boolean } = {}): Promise<BackendPlan> {
  return planBackends(request, { isNode: true, isWorkerThread: !where.inChildProcess && !isMainThread, gpu: undefined });
}

/** Loads verified model files on the first planned backend that runs them; the reason names every backend passed over. */
export async function loadNodeEngine(files: ModelFiles, request: BackendRequest = 'auto'): Promise<{ engine: ProxyEngine; fallbackReason: string | null }> {
  const plan = await planNodeBackends(request);
  const { engine, fallbackReason } = await loadPlannedEngine(files, plan.backends);
  return { engine, fallbackReason: joinReasons(plan.fallbackReason, fallbackReason) };
}
