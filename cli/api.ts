/**
 * The CLI's one way to the deployment: the HTTP API (docs/cli.md), with the global options' URL,
 * token and headers. An API error is thrown as ApiError with the problem's `code` and `detail`
 * (a body that is not a problem still gets a code: `http_<status>`); a server that cannot be
 * reached is `unreachable`.
 */

export interface Connection {
  url: string;
  token: string | null;
  headers: Array<[string, string]>;
}

export class ApiError extends Error {
  readonly code: string;
  readonly status: number;
  readonly body: unknown;
  constructor(code: string, detail: string, status: number, body: unknown) {
    super(detail);
    this.code = code;
    this.status = status;
    this.body = body;
  }
}

export interface Answer {
  status: number;
  headers: Headers;
  body: unknown;
}

function headersOf(conn: Connection, extra: Record<string, string>): Headers {
  const h = new Headers({ "user-agent": "workflow-edge-cli" });
  if (conn.token) h.set("authorization", `Bearer ${conn.token}`);
  for (const [name, value] of conn.headers) h.set(name, value);
  for (const [name, value] of Object.entries(extra)) h.set(name, value);
  return h;
}

/** One request; JSON in and out. Non-2xx answers throw ApiError. */
export async function request(
  conn: Connection,
  method: string,
  path: string,
  opts: { body?: unknown; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const extra = {
    ...(opts.body !== undefined ? { "content-type": "application/json" } : {}),
    ...opts.headers,
  };
  let res: Response;
  try {
    res = await fetch(new URL(path, conn.url), {
      method,
      headers: headersOf(conn, extra),
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
    });
  } catch (e) {
    const cause = e instanceof Error && e.cause instanceof Error ? e.cause.message : String(e);
    throw new ApiError("unreachable", `${conn.url} did not answer (${cause})`, 0, null);
  }
  const text = await res.text();
  let body: unknown = text;
  try {
    body = text === "" ? null : JSON.parse(text);
  } catch {
    // Not JSON: kept as text.
  }
  if (!res.ok) {
    const p = (body && typeof body === "object" ? body : {}) as { code?: unknown; detail?: unknown };
    const code = typeof p.code === "string" ? p.code : `http_${res.status}`;
    const detail = typeof p.detail === "string" ? p.detail : `${res.status} ${res.statusText}`;
    throw new ApiError(code, detail, res.status, body);
  }
  return { status: res.status, headers: res.headers, body };
}

/** Follows a Server-Sent Events stream, calling `onEvent` with each event's JSON data until it ends. */
export async function follow(
  conn: Connection,
  path: string,
  onEvent: (type: string, data: Record<string, unknown>) => void,
  post?: { body: unknown; headers?: Record<string, string> },
): Promise<void> {
  let res: Response;
  try {
    res = await fetch(
      new URL(path, conn.url),
      post
        ? {
            method: "POST",
            headers: headersOf(conn, {
              accept: "text/event-stream",
              "content-type": "application/json",
              ...post.headers,
            }),
            body: JSON.stringify(post.body),
          }
        : { headers: headersOf(conn, { accept: "text/event-stream" }) },
    );
  } catch (e) {
    throw new ApiError("unreachable", `${conn.url} did not answer (${String(e)})`, 0, null);
  }
  if (!res.ok || !res.body) {
    const text = await res.text();
    let body: { code?: string; detail?: string } = {};
    try {
      body = JSON.parse(text);
    } catch {
      // not a problem body
    }
    throw new ApiError(body.code ?? `http_${res.status}`, body.detail ?? text, res.status, body);
  }
  const decoder = new TextDecoder();
  let buffer = "";
  for await (const chunk of res.body) {
    buffer += decoder.decode(chunk as Uint8Array, { stream: true });
    for (let cut = buffer.indexOf("\n\n"); cut >= 0; cut = buffer.indexOf("\n\n")) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      let type = "message";
      const data: string[] = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) type = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
      }
      if (data.length === 0) continue;
      try {
        onEvent(type, JSON.parse(data.join("\n")) as Record<string, unknown>);
      } catch {
        // A data line that is not JSON is not one of ours.
      }
    }
  }
}

/**
 * A listing of the API (`GET /runs`, `GET /deliveries`): its first page, or with `all` every page
 * (following `next_cursor`). `items` are the pages' `key` arrays in order; `json` is what `--json`
 * prints: the page as the API answered it, or every item with no cursor left.
 */
export async function listPages(
  conn: Connection,
  path: string,
  query: Record<string, string | undefined>,
  key: string,
  all: boolean,
): Promise<{ items: unknown[]; json: Record<string, unknown>; more: boolean }> {
  const items: unknown[] = [];
  let cursor: string | null = null;
  let last: Record<string, unknown> = {};
  do {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v) q.set(k, v);
    if (cursor) q.set("cursor", cursor);
    last = (await request(conn, "GET", `${path}?${q}`)).body as Record<string, unknown>;
    items.push(...((last[key] as unknown[]) ?? []));
    cursor = all ? ((last.next_cursor as string | null) ?? null) : null;
  } while (cursor);
  return {
    items,
    json: all ? { [key]: items, next_cursor: null } : last,
    more: !all && Boolean(last.next_cursor),
  };
}
