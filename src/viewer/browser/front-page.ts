/**
 * The front page (GET /); see src/viewer/front-page.ts. Its only script: the Run forms.
 * Bundled with common.ts into the page's inline script at build time.
 */
import { wireRunForms } from "./run-form.ts";

wireRunForms();
