/**
 * Compiles `invoke.auth` (docs/triggers.md): a credential header (`raw`, `bearer`) or a sender's
 * signature scheme, each with the fields it needs and no others, its secrets as env references
 * (several while a secret is rotated).
 */
import {
  type CompiledAuth,
  SIGNATURE_SCHEMES,
  type SignatureAuth,
  type SignatureScheme,
} from "../../../bundle.ts";
import { isObject } from "../../../common/guards.ts";
import { envRefName, envShorthandName, envShorthandWarning } from "../../env-refs.ts";
import type { DataPath } from "../../yaml-source.ts";
import type { InvokeContext, Report } from "../invoke-context.ts";

type Obj = Record<string, unknown>;

/** Each signature scheme's signature headers, and which optional fields it takes. */
const SCHEME_FIELDS: Record<SignatureScheme, { signatureHeaders: string[]; fields: string[] }> = {
  hmac: { signatureHeaders: [], fields: ["header", "prefix", "algorithm", "encoding"] },
  github: { signatureHeaders: ["x-hub-signature-256", "x-hub-signature"], fields: [] },
  stripe: { signatureHeaders: ["stripe-signature"], fields: ["tolerance_s"] },
  slack: { signatureHeaders: ["x-slack-signature"], fields: ["tolerance_s"] },
  "standard-webhooks": { signatureHeaders: ["webhook-signature"], fields: ["tolerance_s"] },
  shopify: { signatureHeaders: ["x-shopify-hmac-sha256"], fields: [] },
  linear: { signatureHeaders: ["linear-signature"], fields: ["tolerance_s"] },
  twilio: { signatureHeaders: ["x-twilio-signature"], fields: ["url"] },
  discord: { signatureHeaders: ["x-signature-ed25519"], fields: ["tolerance_s", "public_key"] },
};
const OPTIONAL_FIELDS = ["header", "prefix", "algorithm", "encoding", "tolerance_s", "url", "public_key"];
const DEFAULT_TOLERANCE_S = 300;

/** The headers that carry a scheme's signature (never recorded by `invoke.headers`). */
export function signatureHeaders(sig: SignatureAuth): string[] {
  return [...SCHEME_FIELDS[sig.scheme].signatureHeaders, ...(sig.hmac ? [sig.hmac.header] : [])];
}

export function compileAuth(raw: unknown, ctx: InvokeContext, err: Report): CompiledAuth | null {
  if (!isObject(raw)) return null;
  const at = (k: string): DataPath => ["invoke", "auth", k];
  const header = typeof raw.header === "string" ? raw.header.toLowerCase() : null;
  const scheme =
    typeof raw.scheme === "string"
      ? raw.scheme
      : header === null || header === "authorization"
        ? "bearer"
        : "raw";
  const isSignature = (SIGNATURE_SCHEMES as readonly string[]).includes(scheme);
  if (!isSignature && scheme !== "raw" && scheme !== "bearer") return null; // the format check reported it

  // Secrets: one reference or a list.
  const secretEnvs: string[] = [];
  const refs: Array<[unknown, DataPath]> = Array.isArray(raw.secret)
    ? raw.secret.map((s, i) => [s, ["invoke", "auth", "secret", i]])
    : raw.secret !== undefined
      ? [[raw.secret, at("secret")]]
      : [];
  for (const [v, p] of refs) {
    const n = envRefName(v);
    if (n === null) continue; // the format check reported the shape
    ctx.useEnv(n, p);
    if (envShorthandName(v) !== null && ctx.declared.some((e) => e.name === n)) {
      ctx.sink.warning(ctx.file.display, ctx.file.at(p), envShorthandWarning(n));
    }
    if (secretEnvs.includes(n)) err(p, `\`env.${n}\` is listed twice in \`invoke.auth.secret\``);
    else secretEnvs.push(n);
  }

  // Fields that belong to another scheme.
  const allowed = isSignature ? SCHEME_FIELDS[scheme as SignatureScheme].fields : ["header"];
  for (const f of OPTIONAL_FIELDS) {
    if (raw[f] === undefined || allowed.includes(f)) continue;
    const owners = [
      ...(f === "header" ? ["raw", "bearer"] : []),
      ...SIGNATURE_SCHEMES.filter((s) => SCHEME_FIELDS[s].fields.includes(f)),
    ];
    err(
      at(f),
      `\`invoke.auth.${f}\` does not apply to scheme \`${scheme}\` (only to ${owners.map((o) => `\`${o}\``).join(", ")})`,
      "key",
    );
  }

  if (scheme === "discord") {
    if (raw.secret !== undefined) {
      err(
        at("secret"),
        "scheme `discord` verifies with the application's public key, not a shared secret; did you mean `public_key`?",
        "key",
      );
    }
    let publicKey: SignatureAuth["publicKey"] = null;
    if (typeof raw.public_key === "string") {
      const env = envRefName(raw.public_key);
      if (env !== null) {
        ctx.useEnv(env, at("public_key"));
        publicKey = { env };
      } else if (/^[0-9a-fA-F]{64}$/.test(raw.public_key.trim())) {
        publicKey = { hex: raw.public_key.trim().toLowerCase() };
      } else {
        err(
          at("public_key"),
          "`invoke.auth.public_key` must be the application's public key as 64 hex digits, or `{{ env.NAME }}`",
        );
      }
    } else if (raw.public_key === undefined) {
      err(
        ["invoke", "auth"],
        "scheme `discord` needs `public_key` (the application's public key, hex)",
        "key",
      );
    }
    return signature("discord", [], raw, { publicKey });
  }

  if (raw.secret === undefined) {
    const wrong = raw.public_key !== undefined ? "; `public_key` is for scheme `discord`" : "";
    err(
      ["invoke", "auth"],
      `scheme \`${scheme}\` needs \`secret\` (\`{{ env.NAME }}\`, or a list of them)${wrong}`,
      "key",
    );
  }
  if (!isSignature) {
    if (secretEnvs.length === 0) return null;
    return { scheme: scheme as "raw" | "bearer", header: header ?? "authorization", secretEnvs };
  }
  if (scheme === "hmac") {
    if (header === null) {
      err(
        ["invoke", "auth"],
        "scheme `hmac` needs `header`: the request header that carries the signature",
        "key",
      );
    }
    return signature("hmac", secretEnvs, raw, {
      hmac: {
        header: header ?? "",
        prefix: typeof raw.prefix === "string" ? raw.prefix : "",
        algorithm: raw.algorithm === "sha1" || raw.algorithm === "sha512" ? raw.algorithm : "sha256",
        encoding: raw.encoding === "base64" ? "base64" : "hex",
      },
    });
  }
  return signature(scheme as SignatureScheme, secretEnvs, raw, {
    url: scheme === "twilio" && typeof raw.url === "string" ? raw.url : null,
  });
}

function signature(
  scheme: SignatureScheme,
  secretEnvs: string[],
  raw: Obj,
  rest: Partial<SignatureAuth>,
): SignatureAuth {
  return {
    scheme,
    secretEnvs,
    toleranceS: typeof raw.tolerance_s === "number" ? raw.tolerance_s : DEFAULT_TOLERANCE_S,
    hmac: null,
    url: null,
    publicKey: null,
    ...rest,
  };
}
