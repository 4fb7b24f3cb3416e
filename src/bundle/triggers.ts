/**
 * The ways a run starts (docs/triggers.md), one name each. The Worker's table of triggers
 * (src/triggers/index.ts) is keyed by it, so a kind named here without its entry there does not
 * compile (docs/architecture.md, "Add a trigger").
 */
export const TRIGGER_KINDS = ["webhook", "cron", "queue", "email"] as const;

export type TriggerKind = (typeof TRIGGER_KINDS)[number];

/**
 * `invoke.email` (docs/triggers.md, "Email"): the recipient patterns a workflow takes (`*` is a
 * whole local part or a whole domain label) and the senders it accepts (null: any).
 */
export interface CompiledEmail {
  to: string[];
  from: string[] | null;
}
