/**
 * Mock keys of workflow tests are slash paths (`notify/post`, `analyze/2`,
 * `risk/tools/get-sum`): the most specific key that names a path wins, and a fan-out item's
 * index may be left out of a key (`analyze` answers every item, `analyze/2` only the third).
 */

function isItemIndex(segment: string): boolean {
  return /^\d+$/.test(segment);
}

/** Whether `key` names `path`, reading item indexes of `path` as optional. */
export function keyMatches(key: string, path: string): boolean {
  const k = key.split("/");
  const p = path.split("/");
  let j = 0;
  for (const seg of p) {
    if (j < k.length && k[j] === seg) j++;
    else if (!isItemIndex(seg)) return false;
  }
  return j === k.length;
}

/** The most specific mock key for a step path (most segments), or null. */
export function mockKeyFor(keys: Iterable<string>, path: string): string | null {
  let best: string | null = null;
  let bestLength = -1;
  for (const key of keys) {
    if (!keyMatches(key, path)) continue;
    const length = key.split("/").length;
    if (length > bestLength || (length === bestLength && best !== null && key > best)) {
      best = key;
      bestLength = length;
    }
  }
  return best;
}
