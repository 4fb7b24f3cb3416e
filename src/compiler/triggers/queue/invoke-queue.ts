/**
 * Compiles `invoke.queue` (docs/triggers.md, "Queues"): the Cloudflare Queue whose messages each
 * start a run of this workflow. The name must be one Cloudflare accepts, and wrangler.toml must
 * consume the queue (`[[queues.consumers]]`; the error shows the block to add), or no message
 * would ever reach the Worker. A consumer without a `dead_letter_queue` is a warning: after its
 * retries, a message whose body never passes is deleted instead of kept. Root workflows only;
 * one workflow per queue is checked across the project (trigger-owners.ts).
 */
import { queueConsumerBlock } from "../../wrangler-config.ts";
import type { InvokeContext, Report } from "../invoke-context.ts";

/** Cloudflare's rule for queue names. */
const QUEUE_NAME = /^[a-z0-9][a-z0-9-]{0,62}$/;

export function compileQueue(
  invoke: Record<string, unknown>,
  ctx: InvokeContext,
  err: Report,
): string | null {
  const queue = invoke.queue;
  if (typeof queue !== "string") return null;
  const at = ["invoke", "queue"];
  if (!ctx.invocable) {
    err(
      at,
      "`invoke.queue` is for invocable workflows (files directly in workflows/ named *.workflow.yaml)",
      "key",
    );
    return null;
  }
  if (!QUEUE_NAME.test(queue)) {
    err(
      at,
      `queue name \`${queue}\` is not one Cloudflare accepts: lower-case letters, digits and \`-\`, at most 63`,
    );
    return null;
  }
  const facts = ctx.wrangler();
  const consumer = facts.queueConsumers.get(queue);
  if (!consumer) {
    err(
      at,
      facts.found
        ? `queue \`${queue}\` is not consumed by this Worker: ${facts.display} has no \`[[queues.consumers]]\` for it; add:\n${queueConsumerBlock(queue)}`
        : `queue \`${queue}\` needs ${facts.display}, which does not exist; consume the queue there:\n${queueConsumerBlock(queue)}`,
    );
  } else if (consumer.deadLetterQueue === null) {
    ctx.sink.warning(
      ctx.file.display,
      ctx.file.at(at),
      `queue \`${queue}\`'s consumer in ${facts.display} has no \`dead_letter_queue\`: a message whose body never passes is deleted after its retries; add \`dead_letter_queue = "${queue}-dead"\``,
    );
  }
  return queue;
}
