/** Placeholder: replaced by the real programmable webhook target. */
export async function startWebhookTarget(): Promise<{ port: number; close(): Promise<void> }> {
  return { port: 1, close: async () => {} };
}
