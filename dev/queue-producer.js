/**
 * A producer Worker to run beside workflow-edge locally (docs/triggers.md, "Queues"):
 * `npm run start:queues` runs `wrangler dev -c dev/producer.toml -c wrangler.toml`, this Worker
 * first, so it serves the port. It sends to local queues through real producer bindings (the
 * binding of queue `stock-updates` is `STOCK_UPDATES`: upper case, `-` as `_`), keeps what reaches
 * the queues it consumes (the dead-letter queues), and hands every other request to workflow-edge
 * (the `WORKFLOW_EDGE` service binding), so the API and the pages answer on the same port.
 * The workers tests run it beside the Worker under test too (vitest.config.ts).
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

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const m = /^\/queues\/([a-z0-9-]+)(\/batch|\/received)?$/.exec(url.pathname);
    if (!m) {
      if (env.WORKFLOW_EDGE) return env.WORKFLOW_EDGE.fetch(request);
      return new Response("not found", { status: 404 });
    }
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
      const items = JSON.parse(text);
      if (!Array.isArray(items)) return new Response("a batch is a JSON array\n", { status: 400 });
      await producer.sendBatch(items.map((body) => ({ body, contentType: "json" })));
      return Response.json({ sent: items.length }, { status: 202 });
    }
    await producer.send(message(text).body, { contentType: message(text).contentType });
    return Response.json({ sent: 1 }, { status: 202 });
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
