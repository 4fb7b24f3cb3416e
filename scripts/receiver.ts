/**
 * `npm run receiver [-- --port N]`: a local stand-in for the services a workflow's webhooks call
 * (a warehouse, a chat, a pager) while you run `npm start`. It answers every request 200 with
 * `{"ok":true}` and prints each one: time, method and path, the headers that say something (the
 * signature, the idempotency key, the workflow's own headers; a credential only by its scheme),
 * and the body. Point a workflow's URL at it with `npm start -- --var NAME:http://127.0.0.1:9100`
 * (docs/walkthrough.md, step 3 "Serve it"). It listens on 127.0.0.1 only; `--port 0` takes any
 * free port. Ctrl-C stops it.
 */
import { createServer } from "node:http";
import { parseArgs } from "node:util";

/** Headers every HTTP client sends: they say nothing about what the workflow sent. */
const TRANSPORT = new Set([
  "host",
  "connection",
  "keep-alive",
  "content-length",
  "transfer-encoding",
  "accept",
  "accept-encoding",
  "accept-language",
  "user-agent",
]);

function usage(message: string): never {
  console.error(`receiver: ${message}\nusage: npm run receiver [-- --port N]   (default 9100)`);
  process.exit(2);
}

let port = 9100;
try {
  const { values } = parseArgs({ options: { port: { type: "string" } } });
  if (values.port !== undefined) {
    port = Number(values.port);
    if (!/^\d+$/.test(values.port) || port > 65535) usage(`--port takes 0 to 65535, not "${values.port}"`);
  }
} catch (e) {
  usage(e instanceof Error ? e.message : String(e));
}

function headerLine(name: string, value: string): string {
  // A credential is shown by its scheme only: this output ends up in terminals and docs.
  const shown = name === "authorization" ? `${value.split(" ")[0]} …` : value;
  return `  ${name}: ${shown}`;
}

function bodyLine(text: string): string {
  if (text === "") return "  (no body)";
  try {
    return `  ${JSON.stringify(JSON.parse(text))}`;
  } catch {
    return `  ${text.replaceAll("\n", "\n  ")}`;
  }
}

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (c: Buffer) => chunks.push(c));
  req.on("end", () => {
    const lines = [`${new Date().toISOString().slice(11, 23)} ${req.method} ${req.url}`];
    for (const [name, value] of Object.entries(req.headers)) {
      if (TRANSPORT.has(name) || name.startsWith("cf-") || name.startsWith("sec-fetch-")) continue;
      lines.push(headerLine(name, Array.isArray(value) ? value.join(", ") : String(value)));
    }
    lines.push(bodyLine(Buffer.concat(chunks).toString("utf8")));
    process.stdout.write(`${lines.join("\n")}\n`);
    res.writeHead(200, { "content-type": "application/json" });
    res.end('{"ok":true}');
  });
});

server.on("error", (e) => {
  console.error(`receiver: ${e.message}`);
  process.exit(1);
});
server.listen(port, "127.0.0.1", () => {
  const address = server.address();
  const bound = typeof address === "object" && address ? address.port : port;
  console.log(
    `receiver: listening on http://127.0.0.1:${bound}, answering 200 to every request (Ctrl-C stops it)`,
  );
});
