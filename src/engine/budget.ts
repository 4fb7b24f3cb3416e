/**
 * The per-run cost ledger that makes `model_policy.cost_budget_usd` a hard cap.
 *
 * Every LLM call first reserves its worst case, and the reservation is replaced by the actual
 * cost once the provider reports usage. Because reservations count against the cap while they
 * are outstanding, concurrent steps cannot together overspend it: a call that does not fit
 * waits for other reservations to settle (they usually settle lower than their worst case),
 * and fails with `budget_exceeded` only when nothing is left outstanding that could free room.
 *
 * Sub-workflows get a child ledger. Each child reservation is also a reservation in the parent,
 * so siblings running at the same time share the parent's remainder instead of each seeing all
 * of it. Pure TypeScript: the run Durable Object persists `LedgerState` through `onChange`.
 */
import { type BudgetLedger, type BudgetReservation, StepError } from "./types.ts";

/** What the run persists. JSON-serialisable. */
export interface LedgerState {
  /** USD actually spent (settled reservations). */
  spent: number;
  /** Reservation id -> reserved worst case (USD), for calls in flight. */
  outstanding: Record<string, number>;
  /**
   * Keyed child ledgers (sub-workflows), by the key given to `child`, with the cap they got when
   * first created: a resumed run must not hand a sub-workflow its whole budget again.
   */
  children?: Record<string, ChildLedgerState>;
}

export interface ChildLedgerState {
  cap: number | null;
  spent: number;
  outstanding: Record<string, number>;
}

export interface Ledger extends BudgetLedger {
  /**
   * A ledger for a sub-workflow: cap = min(this ledger's remainder now, `capUsd`). With a `key`
   * (the workflow step's slash path), its cap and spend are persisted in the run's state, and
   * a later `child` call with the same key (after the run resumed) continues from them.
   */
  child(capUsd: number | null, key?: string): Ledger;
  snapshot(): LedgerState;
  spentUsd(): number;
}

/** Shared by a root ledger and all its descendants: where keyed child states live. */
interface LedgerStore {
  children: Map<string, ChildLedgerState>;
  persist(): void;
}

/**
 * Float sums of prices drift by ulps (0.1 + 0.2 > 0.3); a reservation that is over the cap by
 * less than a billionth of a cent is taken as fitting.
 */
const EPSILON_USD = 1e-12;

function sumValues(m: Map<string, number>): number {
  let s = 0;
  for (const v of m.values()) s += v;
  return s;
}

function usd(n: number): string {
  // Enough digits for per-token prices without printing float noise.
  return `$${Number(n.toPrecision(6))}`;
}

/**
 * Creates a run's ledger. `initial` restores a persisted state: reservations that were
 * outstanding when the object was evicted are charged at their worst case, because their calls
 * may have reached the provider and been billed; the resumed step reserves again.
 */
/**
 * Adds two dollar amounts without binary floating-point noise in what users read
 * (`0.1 + 0.2` is `0.30000000000000004`): sums are kept to the pico-dollar, far below any price.
 */
export function addUsd(a: number, b: number): number {
  return Math.round((a + b) * 1e12) / 1e12;
}

export function createLedger(
  capUsd: number | null,
  initial?: LedgerState | null,
  onChange?: (s: LedgerState) => void,
): Ledger {
  const store: LedgerStore = {
    children: new Map(Object.entries(initial?.children ?? {})),
    persist: () => onChange?.(root.snapshot()),
  };
  const root = makeLedger(capUsd, initial ? charged(initial) : 0, null, store, { root: true });
  return root;
}

/** What a restored state has cost at most: its spend plus every reservation that was in flight. */
function charged(state: { spent: number; outstanding: Record<string, number> }): number {
  let total = state.spent;
  for (const v of Object.values(state.outstanding)) total += v;
  return total;
}

function makeLedger(
  cap: number | null,
  initialSpent: number,
  parent: Ledger | null,
  store: LedgerStore,
  role: { root: true } | { root: false; key: string | null },
): Ledger {
  let spent = initialSpent;
  let nextId = 1;
  const outstanding = new Map<string, number>();
  /** Re-check callbacks of reservations waiting for room, in arrival order. */
  const waiters = new Set<() => void>();

  const snapshot = (): LedgerState => {
    const own: LedgerState = { spent, outstanding: Object.fromEntries(outstanding) };
    if (role.root && store.children.size > 0) own.children = Object.fromEntries(store.children);
    return own;
  };
  const changed = () => {
    if (role.root) return store.persist();
    if (role.key === null) return; // Not persisted: the parent's reservations cover its spend.
    store.children.set(role.key, { cap, spent, outstanding: Object.fromEntries(outstanding) });
    store.persist();
  };
  const wakeWaiters = () => {
    for (const w of [...waiters]) w();
  };

  const fits = (amount: number) =>
    // Stryker disable next-line EqualityOperator: landing exactly on cap + 1e-12 takes float noise that sums do not make
    cap === null || spent + sumValues(outstanding) + amount <= cap + EPSILON_USD;

  const grant = (amount: number): BudgetReservation => {
    // Stryker disable next-line UpdateOperator: counting down names each reservation as uniquely
    const id = `r${nextId++}`;
    outstanding.set(id, amount);
    changed();
    return {
      settle(actualUsd: number) {
        if (!outstanding.has(id)) return;
        outstanding.delete(id);
        // A provider that reports more than the worst case is still what was spent: record it.
        spent = addUsd(spent, Math.max(0, Number.isFinite(actualUsd) ? actualUsd : amount));
        changed();
        wakeWaiters();
      },
    };
  };

  const exceeded = (amount: number) => {
    // Stryker disable next-line ConditionalExpression: an uncapped ledger never refuses, so never says what is left
    const left = cap === null ? 0 : Math.max(0, cap - spent);
    return new StepError(
      "budget_exceeded",
      `the next LLM call needs up to ${usd(amount)}, ${usd(left)} left of the ${usd(cap ?? 0)} budget`,
    );
  };

  /** Resolves with a granted reservation; the room is claimed in the same check that found it. */
  const reserveHere = (amount: number, signal: AbortSignal): Promise<BudgetReservation> =>
    new Promise<BudgetReservation>((resolve, reject) => {
      const check = () => {
        // An aborted signal always has a reason (an AbortError DOMException when none was given).
        if (signal.aborted) return finish(() => reject(signal.reason));
        if (fits(amount)) return finish(() => resolve(grant(amount)));
        if (outstanding.size === 0) return finish(() => reject(exceeded(amount)));
        // Still waiting: the next settle calls check again.
      };
      const onAbort = () => check();
      const finish = (done: () => void) => {
        waiters.delete(check);
        signal.removeEventListener("abort", onAbort);
        done();
      };
      waiters.add(check);
      signal.addEventListener("abort", onAbort);
      check();
    });

  const ledger: Ledger = {
    capUsd: cap,
    async reserve(worstCaseUsd: number, signal: AbortSignal): Promise<BudgetReservation> {
      const amount = Math.max(0, worstCaseUsd);
      const local = await reserveHere(amount, signal);
      if (!parent) return local;
      let upstream: BudgetReservation;
      try {
        upstream = await parent.reserve(amount, signal);
      } catch (e) {
        local.settle(0);
        throw e;
      }
      return {
        settle(actualUsd: number) {
          local.settle(actualUsd);
          upstream.settle(actualUsd);
        },
      };
    },
    child(childCap: number | null, key?: string): Ledger {
      // Stryker disable next-line ConditionalExpression: no child is stored under an undefined key
      const saved = key === undefined ? undefined : store.children.get(key);
      if (saved)
        return makeLedger(saved.cap, charged(saved), ledger, store, { root: false, key: key ?? null });
      const remainder = cap === null ? null : Math.max(0, cap - spent - sumValues(outstanding));
      const effective =
        remainder === null ? childCap : childCap === null ? remainder : Math.min(remainder, childCap);
      return makeLedger(effective, 0, ledger, store, { root: false, key: key ?? null });
    },
    snapshot,
    spentUsd: () => spent,
  };
  return ledger;
}
