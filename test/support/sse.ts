/** Server-Sent Events read whole: the events of a stream the server closes (GET /runs/{id}/events). */
import { expect } from "vitest";

export interface Sse {
  id: string;
  event: string;
  data: Record<string, unknown>;
}

/** Every event of `res`, once the server has closed the stream. */
export async function readAllEvents(res: Response): Promise<Sse[]> {
  expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
  const text = await res.text(); // resolves only when the server closes the stream
  return text
    .split("\n\n")
    .filter((b) => b.trim() !== "")
    .map((block) => {
      const fields = Object.fromEntries(
        block
          .split("\n")
          .map((line) => [line.slice(0, line.indexOf(":")), line.slice(line.indexOf(":") + 2)]),
      );
      return { id: fields.id, event: fields.event, data: JSON.parse(fields.data ?? "null") } as Sse;
    });
}
