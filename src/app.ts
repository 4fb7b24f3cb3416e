/** HTTP routes. Every error leaves as application/problem+json through one handler. */
import { Hono } from "hono";

export const app = new Hono<{ Bindings: Env }>();

app.get("/health", (c) => c.json({ status: "ok" }));
