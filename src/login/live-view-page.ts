// The live-view page's assets: HTML, JS and CSS files under static/login/ in the package, read once
// at start-up. The page is locked down by a per-response nonce CSP; its script and stylesheet are
// separate files loaded with that nonce and their SRI hash, and the per-session values travel in a
// JSON data element (not executed, so no inline script is ever allowed).
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";

/** static/login/ of the package: two levels up from both src/login/ (tsx) and dist/login/ (compiled). */
export const LOGIN_ASSETS_DIR = new URL("../../static/login/", import.meta.url);

/** One file served under /login/assets/. */
export interface StaticAsset {
  readonly body: Buffer;
  readonly contentType: string;
  /** The SRI value ("sha256-…") the page pins it with. */
  readonly integrity: string;
  /** A short content hash for cache busting (`?v=`). */
  readonly version: string;
}

const ASSET_TYPES = {
  "live-view.js": "text/javascript; charset=utf-8",
  "live-view.css": "text/css; charset=utf-8",
} as const;

/** Names of the files served under /login/assets/ (an allowlist: nothing else is ever read). */
export type AssetName = keyof typeof ASSET_TYPES;

/** The live-view page and its assets, loaded from `dir`; throws at start-up when a file is missing. */
export class LiveViewAssets {
  private readonly pageTemplate: string;
  private readonly refusalTemplate: string;
  private readonly assets: ReadonlyMap<string, StaticAsset>;

  constructor(dir: URL = LOGIN_ASSETS_DIR) {
    const read = (name: string) => readFileSync(new URL(name, dir));
    this.pageTemplate = read("live-view.html").toString("utf8");
    this.refusalTemplate = read("refusal.html").toString("utf8");
    const assets = new Map<string, StaticAsset>();
    for (const [name, contentType] of Object.entries(ASSET_TYPES)) {
      const body = read(name);
      const digest = createHash("sha256").update(body).digest();
      assets.set(name, {
        body,
        contentType,
        integrity: `sha256-${digest.toString("base64")}`,
        version: digest.toString("hex").slice(0, 16),
      });
    }
    this.assets = assets;
  }

  /** The asset called `name`, if it is one of the served files. */
  asset(name: string): StaticAsset | undefined {
    return this.assets.get(name);
  }

  /** The HTML of the live-view page for one session; `nonce` must be the one in the response's CSP. */
  page(opts: { sessionId: string; serviceName: string; nonce: string }): string {
    const js = this.required("live-view.js");
    const css = this.required("live-view.css");
    return fill(this.pageTemplate, {
      service: escapeHtml(opts.serviceName),
      nonce: escapeHtml(opts.nonce),
      "session-json": jsonForHtml({ sessionId: opts.sessionId }),
      "js-version": js.version,
      "js-integrity": js.integrity,
      "css-version": css.version,
      "css-integrity": css.integrity,
    });
  }

  /** The page shown when a link cannot be opened. */
  refusal(title: string, message: string): string {
    return fill(this.refusalTemplate, { title: escapeHtml(title), message: escapeHtml(message) });
  }

  private required(name: AssetName): StaticAsset {
    const a = this.assets.get(name);
    if (!a) throw new Error(`live-view asset ${name} was not loaded`);
    return a;
  }
}

/** Replaces every `{{name}}` of `template`; a placeholder without a value is a bug, so it throws. */
function fill(template: string, values: Record<string, string>): string {
  return template.replace(/\{\{([a-z-]+)\}\}/g, (_m, key: string) => {
    const v = values[key];
    if (v === undefined) throw new Error(`live-view template has no value for {{${key}}}`);
    return v;
  });
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
}

/** JSON safe inside a <script type="application/json"> element: nothing in it can close the element. */
function jsonForHtml(value: unknown): string {
  return JSON.stringify(value).replace(
    /[<>&\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}
