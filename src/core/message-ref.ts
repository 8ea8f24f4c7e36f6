/** How a message is named wherever people read it (the CLI table, --explain, the demo, the extension, errors). */

/**
 * A message as people should read its place: `messages[3]`, the input's own array index from 0, the same number as
 * `flagged[].messageIndex`. "msg 3" or "message 3" reads as the third message, which is messages[2].
 */
export function messageRef(index: number): string {
  return `messages[${index}]`;
}

/** One tool call of an assistant message, counted from 0 as its array is: `messages[1].tool_calls[0]`. */
export function callRef(messageIndex: number, callIndex: number): string {
  return `${messageRef(messageIndex)}.tool_calls[${callIndex}]`;
}

/** Several messages: `messages[2], messages[4]`. */
export function messageRefs(indexes: readonly number[]): string {
  return indexes.map(messageRef).join(', ');
}
