/**
 * The statistics of scores (docs/http-api.md, "Scores"), pure: a sample's count, mean and
 * percentiles, and the difference of two arms' means with Welch's 95 % confidence interval (the
 * t quantile for the Welch–Satterthwaite degrees of freedom, by bisection of the t distribution's
 * CDF through the regularized incomplete beta function). When both arms have zero variance there
 * is no interval to speak of: the difference is significant exactly when the means differ.
 */

export interface Summary {
  count: number;
  mean: number;
  p10: number;
  p50: number;
  p90: number;
}

export function summary(values: readonly number[]): Summary {
  const xs = [...values].sort((a, b) => a - b);
  const n = xs.length;
  const mean = n === 0 ? 0 : xs.reduce((a, b) => a + b, 0) / n;
  return { count: n, mean, p10: quantile(xs, 0.1), p50: quantile(xs, 0.5), p90: quantile(xs, 0.9) };
}

/** The `q` quantile of sorted `xs` (linear interpolation between closest ranks; 0 for none). */
export function quantile(xs: readonly number[], q: number): number {
  if (xs.length === 0) return 0;
  const pos = (xs.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  const a = xs[lo] as number;
  const b = xs[hi] as number;
  return a + (b - a) * (pos - lo);
}

export interface Comparison {
  diff: number;
  ci95: [number, number];
  significant: boolean;
}

/** `a` against `control`: the difference of means, Welch's 95 % interval, and whether it excludes 0. */
export function welch(a: readonly number[], control: readonly number[]): Comparison {
  const ma = mean(a);
  const mc = mean(control);
  const diff = ma - mc;
  const va = variance(a);
  const vc = variance(control);
  if (a.length < 2 || control.length < 2 || (va === 0 && vc === 0)) {
    return {
      diff,
      ci95: [diff, diff],
      significant: a.length > 0 && control.length > 0 && diff !== 0 && va === 0 && vc === 0,
    };
  }
  const sa = va / a.length;
  const sc = vc / control.length;
  const se = Math.sqrt(sa + sc);
  const df = (sa + sc) ** 2 / (sa ** 2 / (a.length - 1) + sc ** 2 / (control.length - 1));
  const t = tQuantile(0.975, df);
  const lo = diff - t * se;
  const hi = diff + t * se;
  return { diff, ci95: [lo, hi], significant: lo > 0 || hi < 0 };
}

function mean(xs: readonly number[]): number {
  return xs.length === 0 ? 0 : xs.reduce((a, b) => a + b, 0) / xs.length;
}

/** Sample variance (n − 1). */
function variance(xs: readonly number[]): number {
  if (xs.length < 2) return 0;
  const m = mean(xs);
  return xs.reduce((a, x) => a + (x - m) ** 2, 0) / (xs.length - 1);
}

/** The `p` quantile (p > 0.5) of Student's t with `df` degrees of freedom. */
export function tQuantile(p: number, df: number): number {
  let lo = 0;
  let hi = 1;
  while (tCdf(hi, df) < p) hi *= 2;
  for (let i = 0; i < 100; i++) {
    const mid = (lo + hi) / 2;
    if (tCdf(mid, df) < p) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}

/** Student's t CDF at `t` ≥ 0. */
export function tCdf(t: number, df: number): number {
  const x = df / (df + t * t);
  return 1 - 0.5 * incompleteBeta(x, df / 2, 0.5);
}

/** The regularized incomplete beta function I_x(a, b) (Numerical Recipes' continued fraction). */
function incompleteBeta(x: number, a: number, b: number): number {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const front = Math.exp(logGamma(a + b) - logGamma(a) - logGamma(b) + a * Math.log(x) + b * Math.log(1 - x));
  if (x < (a + 1) / (a + b + 2)) return (front * betaFraction(x, a, b)) / a;
  return 1 - (front * betaFraction(1 - x, b, a)) / b;
}

function betaFraction(x: number, a: number, b: number): number {
  const tiny = 1e-300;
  let c = 1;
  let d = 1 - ((a + b) * x) / (a + 1);
  if (Math.abs(d) < tiny) d = tiny;
  d = 1 / d;
  let h = d;
  for (let m = 1; m <= 300; m++) {
    const m2 = 2 * m;
    let aa = (m * (b - m) * x) / ((a + m2 - 1) * (a + m2));
    d = 1 + aa * d;
    if (Math.abs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (Math.abs(c) < tiny) c = tiny;
    d = 1 / d;
    h *= d * c;
    aa = (-(a + m) * (a + b + m) * x) / ((a + m2) * (a + m2 + 1));
    d = 1 + aa * d;
    if (Math.abs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (Math.abs(c) < tiny) c = tiny;
    d = 1 / d;
    const del = d * c;
    h *= del;
    if (Math.abs(del - 1) < 3e-16) break;
  }
  return h;
}

/** ln Γ(x) (Lanczos). */
function logGamma(x: number): number {
  const g = [
    676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059, 12.507343278686905,
    -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7,
  ];
  if (x < 0.5) return Math.log(Math.PI / Math.sin(Math.PI * x)) - logGamma(1 - x);
  const z = x - 1;
  let s = 0.99999999999980993;
  for (let i = 0; i < g.length; i++) s += (g[i] as number) / (z + i + 1);
  const t = z + g.length - 0.5;
  return 0.5 * Math.log(2 * Math.PI) + (z + 0.5) * Math.log(t) - t + Math.log(s);
}
