/**
 * When a schedule entry in a time zone fires (docs/triggers.md, "Schedules in local time"), shared
 * by the compiler (the UTC crons that cover an entry, an entry that never fires), the cron handler
 * (which entries are due at an event's time) and `GET /workflows/{name}/schedules` (the next fire
 * times). Cloudflare's cron triggers are UTC; a run must start at a wall-clock time in a zone all
 * year, across its daylight-saving changes.
 *
 * The cron pattern is matched against local wall-clock times by croner (read as UTC, so croner does
 * no zone arithmetic of its own); the platform's `Intl` says which instants a local time is in the
 * zone (no offset table here). The rules for the days clocks change are this module's:
 * - an entry with a fixed hour (no `*` and no step in the hour field) fires once per local time it
 *   names: at the first pass of a repeated time (fall back), and at the same minute one hour later
 *   for a skipped time (spring forward);
 * - an entry whose hour is `*` or a step follows the clock as it runs: every local time that exists,
 *   both passes of a repeated hour, nothing for a skipped one.
 * An entry in UTC (the default) keeps Cloudflare's own reading of its cron: it is due when its cron
 * is the event's.
 */
import { Cron } from "croner";
import { closest } from "./did-you-mean.ts";

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** A schedule entry as far as its fire times go. */
export interface LocalCron {
  cron: string;
  /** An IANA zone name; `UTC` by default. */
  timezone: string;
}

/** The zone names read as UTC itself: the entry's cron is a Cloudflare cron trigger as written. */
export function isUtc(timezone: string): boolean {
  return timezone === "UTC" || timezone === "Etc/UTC";
}

// ---- zones --------------------------------------------------------------------------------

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timezone: string): Intl.DateTimeFormat {
  let f = formatters.get(timezone);
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", {
      timeZone: timezone,
      hourCycle: "h23",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric",
    });
    formatters.set(timezone, f);
  }
  return f;
}

/**
 * Null when `timezone` is an IANA zone name this platform knows, else what is wrong (with the
 * closest known name when one is close).
 */
export function zoneProblem(timezone: string): string | null {
  // Offsets such as `+05:30` are valid for Intl, but they are not zones: they have no daylight saving.
  const named = /^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+)*$/.test(timezone);
  if (named) {
    try {
      formatter(timezone);
      return null;
    } catch {
      // falls through: unknown name
    }
  }
  const near = closest(timezone, Intl.supportedValuesOf("timeZone"));
  return `unknown time zone \`${timezone}\` (an IANA name such as \`Europe/Berlin\`)${near ? `; did you mean \`${near}\`?` : ""}`;
}

/** The zone's offset from UTC at instant `t`, in ms (east positive). */
export function offsetAt(t: number, timezone: string): number {
  const parts: Record<string, number> = {};
  for (const p of formatter(timezone).formatToParts(new Date(t))) {
    if (p.type !== "literal") parts[p.type] = Number(p.value);
  }
  const local = Date.UTC(
    parts.year ?? 1970,
    (parts.month ?? 1) - 1,
    parts.day ?? 1,
    parts.hour ?? 0,
    parts.minute ?? 0,
    parts.second ?? 0,
  );
  // The parts have whole seconds: compare with `t` to the second.
  return local - (t - (((t % 1000) + 1000) % 1000));
}

/** The wall-clock time at instant `t`, as epoch ms of that time read as UTC ("naive"). */
function wallClock(t: number, timezone: string): number {
  return t + offsetAt(t, timezone);
}

/**
 * The instants at which the zone's clocks show `naive` (a wall-clock time as epoch ms read as UTC):
 * one, two (a repeated time, in order) or none (a skipped time).
 */
function instantsOf(naive: number, timezone: string): number[] {
  const offsets = new Set([offsetAt(naive - DAY, timezone), offsetAt(naive + DAY, timezone)]);
  const found: number[] = [];
  for (const o of offsets) {
    const t = naive - o;
    if (wallClock(t, timezone) === naive && !found.includes(t)) found.push(t);
  }
  return found.sort((a, b) => a - b);
}

// ---- patterns -----------------------------------------------------------------------------

const patterns = new Map<string, Cron>();

/** The cron read by croner against wall-clock times (epoch ms read as UTC). Throws when croner cannot read it. */
function pattern(cron: string): Cron {
  let p = patterns.get(cron);
  if (!p) {
    p = new Cron(cron, { utcOffset: 0, mode: "5-part" });
    patterns.set(cron, p);
  }
  return p;
}

/**
 * Null when croner reads `cron` (so its fire times can be worked out), else why not. The cron's
 * syntax is checked before (src/compiler/triggers/cron/cron.ts); croner lacks two of Cloudflare's forms.
 */
export function patternProblem(cron: string): string | null {
  const [, , dom = "", , dow = ""] = cron.trim().split(/\s+/);
  if (/L-/.test(dom)) return "the day-of-month form `L-n`";
  if (dow.split(",").includes("L")) return "a day-of-week `L` alone";
  try {
    pattern(cron);
    return null;
  } catch (e) {
    return (e instanceof Error ? e.message : String(e)).replace(/^CronPattern: /, "");
  }
}

/** Whether the entry follows the clock as it runs (hour `*` or a step) rather than a fixed hour. */
function followsClock(cron: string): boolean {
  const hour = cron.trim().split(/\s+/)[1] ?? "*";
  return hour.includes("*") || hour.includes("/");
}

/** The instants a matching wall-clock time `naive` fires at, by the rules above. */
function firingsOf(naive: number, entry: LocalCron): number[] {
  const at = instantsOf(naive, entry.timezone);
  const clock = followsClock(entry.cron);
  if (at.length > 0) return clock ? at : at.slice(0, 1);
  if (clock) return [];
  // A skipped time: the same minute one hour later (where the clocks jumped to).
  const later = instantsOf(naive + HOUR, entry.timezone)[0];
  return [later ?? naive + HOUR - offsetAt(naive + DAY, entry.timezone)];
}

/**
 * Whether the entry (in a zone other than UTC) fires at instant `t` (to the minute): the wall-clock
 * time then, or one hour before it (a skipped time fires an hour later), matches its cron and fires
 * at `t`.
 */
export function firesAt(entry: LocalCron, t: number): boolean {
  const instant = Math.floor(t / MINUTE) * MINUTE;
  const naive = wallClock(instant, entry.timezone);
  const p = pattern(entry.cron);
  return [naive, naive - HOUR].some((n) => p.match(new Date(n)) && firingsOf(n, entry).includes(instant));
}

/** Enough wall-clock time past a firing that no earlier instant can still come (a repeated hour, a shift). */
const SETTLE_MS = 3 * HOUR;
/** A bound on the wall-clock times looked at for one answer (every minute, 50 times: about 230, three hours past them). */
const MAX_STEPS = 100_000;

/** The next `count` instants after `from` (epoch ms, ascending) at which the entry fires. */
export function nextFires(entry: LocalCron, from: number, count: number): number[] {
  const p = pattern(entry.cron);
  const utc = isUtc(entry.timezone);
  const found = new Set<number>();
  let naive: number = utc ? from : wallClock(from, entry.timezone) - SETTLE_MS;
  for (let step = 0; step < MAX_STEPS; step++) {
    const next = p.nextRun(new Date(naive))?.getTime();
    if (next === undefined) break;
    naive = next;
    if (found.size >= count) {
      const sorted = [...found].sort((a, b) => a - b);
      const last = sorted[count - 1] as number;
      if (utc || naive - SETTLE_MS > wallClock(last, entry.timezone)) break;
    }
    for (const t of utc ? [naive] : firingsOf(naive, entry)) if (t > from) found.add(t);
  }
  return [...found].sort((a, b) => a - b).slice(0, count);
}

// ---- the UTC crons that cover an entry --------------------------------------------------------

/** How far ahead the build looks at a zone's offsets and clock changes. */
const HORIZON_MS = 3 * 366 * DAY;

interface ZoneChanges {
  offsets: Set<number>;
  /** Forward changes: at instant `at` the offset goes from `before` to `after`. */
  gaps: Array<{ at: number; before: number; after: number }>;
}

/** One build asks once per zone and day (a project's entries often share a zone). */
const changesSeen = new Map<string, ZoneChanges>();

/** The zone's offsets from the day of `from` to the horizon, and its forward clock changes (gaps). */
function zoneChanges(timezone: string, from: number): ZoneChanges {
  const day = Math.floor(from / DAY) * DAY;
  const key = `${timezone}@${day}`;
  let changes = changesSeen.get(key);
  if (!changes) {
    changes = scanZone(timezone, day);
    changesSeen.set(key, changes);
  }
  return changes;
}

function scanZone(timezone: string, from: number): ZoneChanges {
  const offsets = new Set<number>();
  const gaps: ZoneChanges["gaps"] = [];
  const stepMs = 6 * HOUR;
  let prev = offsetAt(from, timezone);
  offsets.add(prev);
  for (let t = from + stepMs; t <= from + HORIZON_MS; t += stepMs) {
    const o = offsetAt(t, timezone);
    if (o === prev) continue;
    offsets.add(o);
    // The change happened in (t - step, t]: find its minute.
    let lo = t - stepMs;
    let hi = t;
    while (hi - lo > MINUTE) {
      const mid = lo + Math.floor((hi - lo) / 2 / MINUTE) * MINUTE;
      if (offsetAt(mid, timezone) === prev) lo = mid;
      else hi = mid;
    }
    if (o > prev) gaps.push({ at: hi, before: prev, after: o });
    prev = o;
  }
  return { offsets, gaps };
}

/** The values 0..limit-1 a one-field cron (`<field> * * * *` or `<m> <field> * * *`) takes, by croner. */
function fieldValues(cron: string, unitMs: number, limit: number): number[] {
  const p = pattern(cron);
  const values: number[] = [];
  for (let v = 0; v < limit; v++) if (p.match(new Date(v * unitMs))) values.push(v);
  return values;
}

function list(values: number[]): string {
  return values.length === 0 ? "*" : values.join(",");
}

/**
 * The UTC crons that together fire at every instant the entry fires (and maybe more: the handler
 * starts only what is due), for the zone's offsets from `from` over the next three years. An entry
 * in UTC, or in a zone at UTC all that time, is covered by its own cron.
 */
export function coveringCrons(entry: LocalCron, from: number): string[] {
  if (isUtc(entry.timezone)) return [entry.cron];
  const fields = entry.cron.trim().split(/\s+/);
  const [minuteField = "*", hourField = "*", dom = "*", month = "*", dow = "*"] = fields;
  const { offsets, gaps } = zoneChanges(entry.timezone, from);
  if (offsets.size === 1 && offsets.has(0)) return [entry.cron];
  const minutes = fieldValues(`${minuteField} * * * *`, MINUTE, 60);
  if (followsClock(entry.cron)) {
    const utcMinutes = new Set<number>();
    for (const m of minutes) for (const o of offsets) utcMinutes.add((((m - o / MINUTE) % 60) + 60) % 60);
    const all = utcMinutes.size === 60;
    return [`${all ? "*" : list([...utcMinutes].sort((a, b) => a - b))} * * * *`];
  }
  const hours = fieldValues(`0 ${hourField} * * *`, HOUR, 24);
  // Minutes of the UTC day each local minute of the entry can fire at.
  const utcTimes = new Set<number>();
  let crossesMidnight = false;
  const add = (minuteOfDay: number) => {
    if (minuteOfDay < 0 || minuteOfDay >= 1440) crossesMidnight = true;
    utcTimes.add(((minuteOfDay % 1440) + 1440) % 1440);
  };
  for (const h of hours) {
    for (const m of minutes) {
      const local = h * 60 + m;
      for (const o of offsets) add(local - o / MINUTE);
      for (const g of gaps) {
        // A local time the clocks skip fires at the same minute one hour later, in the new offset.
        const start = ((((g.at + g.before) % DAY) + DAY) % DAY) / MINUTE;
        const length = (g.after - g.before) / MINUTE;
        const into = (((local - start) % 1440) + 1440) % 1440;
        if (into < length) add(local + 60 - g.after / MINUTE);
      }
    }
  }
  // One cron per set of minutes, with the UTC hours that have it.
  const byHour = new Map<number, number[]>();
  for (const t of [...utcTimes].sort((a, b) => a - b)) {
    const h = Math.floor(t / 60);
    byHour.set(h, [...(byHour.get(h) ?? []), t % 60]);
  }
  const byMinutes = new Map<string, number[]>();
  for (const [h, ms] of byHour) byMinutes.set(list(ms), [...(byMinutes.get(list(ms)) ?? []), h]);
  const days = crossesMidnight ? "* * *" : `${dom} ${month} ${dow}`;
  return [...byMinutes].map(([ms, hs]) => `${ms} ${list(hs)} ${days}`);
}
