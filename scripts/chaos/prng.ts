/**
 * The chaos run's one source of randomness (docs/operations.md, "Chaos"): a seeded PRNG
 * (mulberry32), so that `npm run chaos -- --seed N` makes the same schedule of loads, faults and
 * kills again. Timing still varies between machines; the seed fixes every choice.
 */
export class Prng {
  private state: number;
  constructor(seed: number) {
    this.state = seed >>> 0;
  }
  /** A float in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }
  /** One of `items`, by their weights. */
  pick<T>(items: ReadonlyArray<readonly [T, number]>): T {
    const total = items.reduce((n, [, w]) => n + w, 0);
    let r = this.next() * total;
    for (const [item, w] of items) {
      r -= w;
      if (r < 0) return item;
    }
    return (items[items.length - 1] as readonly [T, number])[0];
  }
  /** A new generator for one part of the run (its own sequence, from this one). */
  fork(): Prng {
    return new Prng(Math.floor(this.next() * 2 ** 32));
  }
}
