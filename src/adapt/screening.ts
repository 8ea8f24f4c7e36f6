/**
 * Screening the training traffic with the base guard (docs/adapt.md, step 4): a call blocked at the screening
 * point is never a user-driven example, and its conversation is language-modelling data only up to it. On the
 * CPU, training runs meanwhile: each batch of screened conversations is handed to model/adapt.py as a file
 * ({@link ScreenedHandover}), so training starts as soon as there is screened data instead of after screening.
 */
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { blockedAt, evidenceOf, type OperatingThresholds } from '../core/calibration.js';
import type { ResolvedGuardOptions } from '../core/options.js';
import type { ConductorGuard } from '../core/conductor.js';
import { inputSize, Pace } from './holdout.js';
import { conversationRecord, jsonl } from './planting.js';
import type { CallSite, Conversation } from './traffic.js';
import type { ScreenedCall } from './types.js';

/** What one screening pass found. */
export interface Screening {
  /** Conversations screened (or, with screening off, taken as they are), in the order they were reached. */
  used: Conversation[];
  /** Per conversation, its calls blocked at the screening point ([message index, call index]). */
  excluded: Map<Conversation, Array<[number, number]>>;
  blockedCalls: ScreenedCall[];
}

export interface ScreenOptions {
  guard: ConductorGuard;
  /** The training conversations, in the order to screen them. */
  train: readonly Conversation[];
  sitesOf: ReadonlyMap<Conversation, CallSite[]>;
  /** The guard's options, which turn a verdict into evidence at another point. */
  guardOptions: ResolvedGuardOptions;
  point: OperatingThresholds;
  /** 'off': every conversation is used unscreened. */
  off: boolean;
  /** No conversation starts that would, at the pace so far, end past this time (ms). */
  endMs: number;
  onCheck: () => void;
  /** Each conversation screened, with its blocked calls, as soon as it is. */
  onConversation?: (conversation: Conversation, excluded: Array<[number, number]>) => void;
  /** Stops before the next conversation when true (training failed beside it). */
  stop?: () => boolean;
  signal?: AbortSignal;
}

/** Screens the training traffic a conversation at a time (every call of one in one run of the model, `checkMany`) until its time ends. */
export async function screenTraffic(o: ScreenOptions): Promise<Screening> {
  const out: Screening = { used: [], excluded: new Map(), blockedCalls: [] };
  const pace = new Pace();
  for (const conversation of o.train) {
    if (o.off) {
      out.used.push(conversation);
      continue;
    }
    // A deadline that has come is spent: a budget of 0 screens nothing, however fast the first check would be.
    if (Date.now() >= o.endMs || o.signal?.aborted || o.stop?.()) break;
    const sites = o.sitesOf.get(conversation)!;
    // A conversation that would run past screening's end at the pace so far is left unscreened; a shorter one after it may fit.
    const size = sites.reduce((n, site) => n + inputSize(site.input), 0);
    if (!pace.fits(size, o.endMs)) continue;
    const verdicts = await o.guard.checkMany(
      sites.map((site) => site.input),
      o.signal ? { signal: o.signal } : {},
    );
    const blocked: Array<[number, number]> = [];
    sites.forEach((site, i) => {
      const verdict = verdicts[i]!;
      o.onCheck();
      const evidence = evidenceOf(verdict, o.guardOptions, site.input.messages.every((m) => m.role !== 'tool'));
      if (blockedAt(evidence, o.point)) {
        out.blockedCalls.push({ line: conversation.line, conversation: conversation.id, messageIndex: site.messageIndex, callIndex: site.callIndex, tool: site.input.action.name, reason: verdict.reason });
        blocked.push([site.messageIndex, site.callIndex]);
      }
    });
    if (blocked.length > 0) out.excluded.set(conversation, blocked);
    out.used.push(conversation);
    o.onConversation?.(conversation, blocked);
    pace.done(size);
  }
  return out;
}

/** The record model/adapt.py trains on: the conversation and the calls the screen blocked in it. */
export const screenedRecord = (c: Conversation, excluded: ReadonlyArray<[number, number]>) => ({ ...conversationRecord(c), ...(excluded.length > 0 ? { excluded_calls: excluded } : {}) });

/** How often screened conversations are handed to training, at most. */
const HANDOVER_EVERY_MS = 5000;

/**
 * Screened conversations handed to a running model/adapt.py (`--screened-dir`): NNNNNN.jsonl files written
 * aside and renamed into place, so training never reads half a file, then `done` once screening has ended.
 */
export class ScreenedHandover {
  private pending: unknown[] = [];
  private files = 0;
  private last = Date.now();

  constructor(readonly dir: string) {
    mkdirSync(dir, { recursive: true });
  }

  add(conversation: Conversation, excluded: ReadonlyArray<[number, number]>): void {
    this.pending.push(screenedRecord(conversation, excluded));
    // The first one at once: training has nothing else to start on.
    if (this.files === 0 || Date.now() - this.last >= HANDOVER_EVERY_MS) this.flush();
  }

  /** Hands over what is pending and says screening has ended. */
  finish(): void {
    this.flush();
    writeFileSync(join(this.dir, 'done'), '');
  }

  private flush(): void {
    this.last = Date.now();
    if (this.pending.length === 0) return;
    const name = `${String(++this.files).padStart(6, '0')}.jsonl`;
    writeFileSync(join(this.dir, `${name}.part`), jsonl(this.pending));
    renameSync(join(this.dir, `${name}.part`), join(this.dir, name));
    this.pending = [];
  }
}
