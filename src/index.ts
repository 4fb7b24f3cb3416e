/** Worker entry: the Hono app as default export, and the run Durable Object class. */
import { app } from "./app.ts";

export { RunIndex } from "./run/run-index.ts";
export { RunObject } from "./run/run-object.ts";
export default app;
