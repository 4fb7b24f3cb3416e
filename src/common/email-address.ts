/**
 * Address patterns of `invoke.email` (docs/triggers.md, "Email"): `local@domain` where `*` stands
 * for a whole local part (`*@tickets.example.com`) or a whole domain label
 * (`support@*.example.com`, one label: it does not match `support@a.b.example.com`). Compared
 * without regard to case; a local part's `+tag` is part of it. The compiler checks patterns and
 * refuses two workflows whose patterns share an address; the email trigger finds its workflow
 * with `matchesAddress`.
 */

/** Why `pattern` is not an address pattern, or null when it is one. */
export function patternProblem(pattern: string): string | null {
  const at = pattern.lastIndexOf("@");
  if (at <= 0 || at === pattern.length - 1) return "an address pattern is `local@domain`";
  const local = pattern.slice(0, at);
  const labels = pattern.slice(at + 1).split(".");
  if (/\s/.test(pattern)) return "an address has no white space";
  if (local.includes("*") && local !== "*") return "`*` stands for a whole local part (`*@example.com`)";
  if (labels.length < 2) return "the domain needs a dot (`example.com`)";
  for (const label of labels) {
    if (label === "") return "the domain has an empty label";
    if (label.includes("*") && label !== "*") return "`*` stands for a whole domain label (`*.example.com`)";
  }
  if (labels[labels.length - 1] === "*") return "the top-level domain cannot be `*`";
  return null;
}

interface Parts {
  local: string;
  labels: string[];
}

function parts(address: string): Parts {
  const lower = address.trim().toLowerCase();
  const at = lower.lastIndexOf("@");
  return { local: lower.slice(0, at), labels: lower.slice(at + 1).split(".") };
}

const fits = (pattern: string, value: string) => pattern === "*" || pattern === value;

/** Whether `address` (an envelope address, `a@b.c`) is one `pattern` takes. */
export function matchesAddress(pattern: string, address: string): boolean {
  if (!address.includes("@")) return false;
  const p = parts(pattern);
  const a = parts(address);
  return (
    fits(p.local, a.local) &&
    p.labels.length === a.labels.length &&
    p.labels.every((label, i) => fits(label, a.labels[i] ?? ""))
  );
}

/** An address both patterns take (`x` for a `*` both have), or null when they share none. */
export function sharedAddress(a: string, b: string): string | null {
  const pa = parts(a);
  const pb = parts(b);
  if (pa.labels.length !== pb.labels.length) return null;
  const one = (x: string, y: string) => (x === "*" ? (y === "*" ? "x" : y) : y === "*" || y === x ? x : null);
  const local = one(pa.local, pb.local);
  const labels = pa.labels.map((l, i) => one(l, pb.labels[i] ?? ""));
  if (local === null || labels.some((l) => l === null)) return null;
  return `${local}@${labels.join(".")}`;
}
