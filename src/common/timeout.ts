/**
 * `work` with a signal that aborts (a TimeoutError) after `ms`, and a timer that goes as soon as
 * the work is done: AbortSignal.timeout's timer stays for the whole timeout, and a pending timer
 * keeps a Durable Object in memory (billed, and not evicted) long after its request ended.
 */
export async function withTimeout<T>(ms: number, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(new DOMException("the request timed out", "TimeoutError")), ms);
  try {
    return await work(abort.signal);
  } finally {
    clearTimeout(timer);
  }
}
