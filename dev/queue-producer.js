/**
 * A producer Worker to run beside workflow-edge locally (docs/triggers.md, "Queues"):
 * `npm run start:queues` (scripts/start-queues.ts) runs workflow-edge as `npm start` does, with this
 * Worker beside it; workflow-edge serves the port and hands `/queues/...` here. It sends to local
 * queues through real producer bindings (the binding of queue `stock-updates` is `STOCK_UPDATES`:
 * upper case, `-` as `_`) and keeps what reaches the queues it consumes (the dead-letter queues).
 * A request it cannot take is a 4xx with a line saying why. The workers tests run it beside the
 * Worker under test too (vitest.config.ts).
 *
 *   POST /queues/{queue}         the body as one message (JSON when it parses, text otherwise)
 *   POST /queues/{queue}/batch   a JSON array: one message per item, in one sendBatch
 *   GET  /queues/{queue}/received  what this Worker consumed from {queue} (a dead-letter queue)
 */
const received = new Map();

const bindingOf = (queue) => queue.toUpperCase().replace(/-/g, "_");

/** A message body as the producer sends it: JSON when the text parses, the text otherwise. */
function message(text) {
  try {
    return { body: JSON.parse(text), contentType: "json" };
  } catch {
    return { body: text, contentType: "text" };
  }
}

/** 202 with how many messages went, or 400 with why the queue refused them (too large, among others). */
async function sent(count, send) {
  try {
    await send();
  } catch (e) {
    return new Response(`the queue refused the message: ${e instanceof Error ? e.message : String(e)}\n`, {
      status: 400,
    });
  }
  return Response.json({ sent: count }, { status: 202 });
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const m = /^\/queues\/([a-z0-9-]+)(\/batch|\/received)?$/.exec(url.pathname);
    if (!m)
      return new Response("not found: POST /queues/{queue} or /queues/{queue}/batch\n", { status: 404 });
    const [, queue, what] = m;
    if (request.method === "GET" && what === "/received") return Response.json(received.get(queue) ?? []);
    if (request.method !== "POST" || what === "/received") return new Response("use POST", { status: 405 });
    const producer = env[bindingOf(queue)];
    if (!producer) {
      return new Response(
        `no producer binding ${bindingOf(queue)} for queue ${queue} in dev/producer.toml\n`,
        {
          status: 404,
        },
      );
    }
    const text = await request.text();
    if (what === "/batch") {
      let items;
      try {
        items = JSON.parse(text);
      } catch {
        items = null;
      }
      if (!Array.isArray(items)) return new Response("a batch is a JSON array\n", { status: 400 });
      if (items.length === 0 || items.length > 100) {
        return new Response("a batch holds 1 to 100 messages\n", { status: 400 });
      }
      return sent(items.length, () =>
        producer.sendBatch(items.map((body) => ({ body, contentType: "json" }))),
      );
    }
    const { body, contentType } = message(text);
    return sent(1, () => producer.send(body, { contentType }));
  },

  async queue(batch) {
    const list = received.get(batch.queue) ?? [];
    for (const msg of batch.messages) {
      list.push({ id: msg.id, body: msg.body, attempts: msg.attempts, timestamp: msg.timestamp });
      msg.ack();
    }
    received.set(batch.queue, list);
  },
};
