#!/usr/bin/env node
/** The `workflow-edge` command (package.json `bin`; `npm run cli -- <command>`): see main.ts. */
import { main } from "./main.ts";

process.exitCode = await main(process.argv.slice(2));
