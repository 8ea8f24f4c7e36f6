/** The largest guard input within the documented limits, for the benchmark's and the soak's stall measurements. */

/** Deterministic CJK text (a linear congruential sequence over the unified ideographs). */
export function cjk(length: number, seed: number): string {
  const codes = new Uint16Array(length);
  let x = seed;
  for (let i = 0; i < length; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    codes[i] = 0x4e00 + (x % 20_000);
  }
  return new TextDecoder('utf-16le').decode(codes);
}

/** Seven tool results of 999,000 CJK characters before a payment call (issue 22's reproducer). */
export function largestInput() {
  const messages: Array<Record<string, unknown>> = [{ role: 'user', content: 'Summarise my documents, then pay the invoice they mention.' }];
  for (let i = 0; i < 7; i++) {
    messages.push({ role: 'assistant', content: '', tool_calls: [{ name: 'read_doc', arguments: { i } }] }, { role: 'tool', tool_name: 'read_doc', content: cjk(999_000, i + 1) });
  }
  return { messages, action: { name: 'send_money', arguments: { iban: 'DE89370400440532013000', amount: 5 } } };
}
