/**
 * What one workflow's file cannot see (docs/triggers.md): a queue's messages start runs of one
 * workflow only, and an email address belongs to one workflow only, so the trigger never has to
 * choose. Two workflows naming one queue, or two whose `invoke.email.to` patterns share an address
 * (`*@example.com` and `support@example.com`), are a build error at the later file, naming the
 * other and an address both take.
 */
import type { Bundle } from "../../bundle.ts";
import { sharedAddress } from "../../common/email-address.ts";
import type { DiagnosticSink } from "../diagnostics.ts";
import type { SourceFile } from "../yaml-source.ts";

export function checkTriggerOwners(
  bundle: Omit<Bundle, "hash">,
  files: Map<string, SourceFile>,
  sink: DiagnosticSink,
): void {
  const byKey = new Map([...files.values()].map((f) => [f.key, f]));
  const queues = new Map<string, string>();
  const emails: Array<{ key: string; name: string; pattern: string }> = [];
  for (const wf of Object.values(bundle.workflows)) {
    const file = byKey.get(wf.key);
    if (!file) continue;
    if (wf.queue !== null) {
      const other = queues.get(wf.queue);
      if (other !== undefined) {
        sink.error(
          file.display,
          file.at(["invoke", "queue"]),
          `queue \`${wf.queue}\` already starts workflow \`${other}\`: a queue starts one workflow (give this one a queue of its own)`,
        );
      } else queues.set(wf.queue, wf.name);
    }
    wf.email?.to.forEach((pattern, i) => {
      for (const seen of emails) {
        if (seen.key === wf.key) continue;
        const both = sharedAddress(seen.pattern, pattern);
        if (both === null) continue;
        sink.error(
          file.display,
          file.at(["invoke", "email", "to", i]),
          `address pattern \`${pattern}\` overlaps \`${seen.pattern}\` of workflow \`${seen.name}\` (both take \`${both}\`): an address starts one workflow`,
        );
        return;
      }
      emails.push({ key: wf.key, name: wf.name, pattern });
    });
  }
}
