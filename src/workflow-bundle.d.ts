/** The compiled workflows (wrangler.toml `[alias]`; tests alias it to their fixture bundle). */
declare module "workflow-bundle" {
  import type { Bundle } from "./bundle.ts";

  const bundle: Bundle;
  export default bundle;
}
