/** Placeholder: replaced by the real OpenAI/Anthropic-compatible model stub. */
export async function startModelStub(): Promise<{ port: number; close(): Promise<void> }> {
  return { port: 1, close: async () => {} };
}
