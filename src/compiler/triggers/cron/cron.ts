/**
 * Syntax of a Cloudflare Cron Trigger expression, checked at build time so a typo fails the
 * build instead of the deploy (or worse, a schedule that never fires). Five fields, UTC:
 * minute, hour, day of month, month, day of week, with `*`, lists `,`, ranges `-` and steps `/`;
 * months and weekdays also as three-letter names; `L` and `W` in the day of month, `L` and `#`
 * in the day of week (the extensions Cloudflare documents).
 */

interface Field {
  name: string;
  min: number;
  max: number;
  names?: string[];
  /** Extra forms besides numbers, names, ranges and steps. */
  special?: RegExp;
}

const MONTHS = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"];
const DAYS = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];

const FIELDS: Field[] = [
  { name: "minute", min: 0, max: 59 },
  { name: "hour", min: 0, max: 23 },
  // L (last day), LW (last weekday), 15W (weekday nearest the 15th), L-3 (3 days before the last).
  { name: "day of month", min: 1, max: 31, special: /^(L|LW|L-\d{1,2}|\d{1,2}W)$/ },
  { name: "month", min: 1, max: 12, names: MONTHS },
  // 5L / FRIL (last Friday), FRI#2 / 6#2 (second Friday); 0 and 7 are both Sunday.
  {
    name: "day of week",
    min: 0,
    max: 7,
    names: DAYS,
    special: /^(L|([0-7]|SUN|MON|TUE|WED|THU|FRI|SAT)(L|#[1-5]))$/i,
  },
];

/** null when `cron` is a valid expression, else what is wrong with it. */
export function cronProblem(cron: string): string | null {
  const parts = cron.trim().split(/\s+/);
  if (cron.trim() === "" || parts.length !== 5) {
    return `a cron has five fields (minute hour day-of-month month day-of-week), got ${cron.trim() === "" ? 0 : parts.length}`;
  }
  for (let i = 0; i < 5; i++) {
    const field = FIELDS[i] as Field;
    const text = parts[i] as string;
    for (const item of text.split(",")) {
      const problem = itemProblem(item, field);
      if (problem) return `${field.name} \`${text}\`: ${problem}`;
    }
  }
  return null;
}

function itemProblem(item: string, f: Field): string | null {
  if (item === "") return "empty list item";
  if (f.special?.test(item)) return null;
  const [range, step, ...rest] = item.split("/");
  if (rest.length > 0) return "more than one `/`";
  if (step !== undefined && !/^\d+$/.test(step)) return `step \`${step}\` is not a number`;
  if (step !== undefined && Number(step) === 0) return "a step of 0";
  if (range === "*") return null;
  const bounds = (range ?? "").split("-");
  if (bounds.length > 2) return `\`${range}\` is not a value or a range`;
  const values: number[] = [];
  for (const b of bounds) {
    const v = fieldValue(b, f);
    if (v === null) {
      const allowed = f.names
        ? `${f.min}-${f.max} or ${f.names[0]}-${f.names[f.names.length - 1]}`
        : `${f.min}-${f.max}`;
      return `\`${b}\` is not in ${allowed}`;
    }
    values.push(v);
  }
  if (values.length === 2 && (values[0] as number) > (values[1] as number)) {
    return `range \`${range}\` runs backwards`;
  }
  return null;
}

function fieldValue(text: string, f: Field): number | null {
  if (/^\d{1,2}$/.test(text)) {
    const n = Number(text);
    return n >= f.min && n <= f.max ? n : null;
  }
  const i = f.names?.indexOf(text.toUpperCase()) ?? -1;
  if (i < 0) return null;
  return f === FIELDS[3] ? i + 1 : i;
}
