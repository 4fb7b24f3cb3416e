/** One Durable Object per run: persists the run, drives the engine, enforces the deadline. */
import { DurableObject } from "cloudflare:workers";

export class RunObject extends DurableObject<Env> {}
