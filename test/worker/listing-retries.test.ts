/**
 * A run's own listing write (src/run/listing-sync.ts): while its shard keeps failing, the retry
 * back-off stays capped so that, once the shard answers, the run is listed within SPEC's 10 s.
 */
import { describe, expect, it } from "vitest";
import type { RunDoc } from "../../src/run/envelope.ts";
import { LISTING_RETRY_MAX_MS, LISTING_RETRY_MS, ListingSync } from "../../src/run/listing-sync.ts";

const doc = {
  run_id: "a".repeat(64),
  status: "complete",
  created_at: new Date().toISOString(),
  finished_at: new Date().toISOString(),
} as RunDoc;

/** An environment whose listing shard cannot be reached. */
const downListing = {
  RUN_INDEX: {
    idFromName: () => {
      throw new Error("the shard is down");
    },
  },
} as unknown as Env;

describe("listing retries", () => {
  it("back off from 3 s but never wait more than 5 s between tries, however long the shard fails", async () => {
    const sync = new ListingSync(
      () => downListing,
      () => ({ doc, workflow: "w" }),
    );
    const waits: number[] = [];
    for (let i = 0; i < 12; i++) {
      expect(await sync.sync()).toBe(false);
      waits.push(sync.retryMs());
    }
    expect(waits[0]).toBe(LISTING_RETRY_MS);
    expect(Math.max(...waits)).toBe(LISTING_RETRY_MAX_MS);
    expect(LISTING_RETRY_MAX_MS).toBeLessThan(10_000);
  });
});
