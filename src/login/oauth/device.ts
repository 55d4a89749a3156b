// The OAuth 2.0 device authorization grant (RFC 8628): ask the device authorization endpoint for a
// user code, then poll the token endpoint. Every request goes through our guarded fetch (https or
// loopback outside production, timeout on the clock, capped body); failures name the step, a
// status and the standard error token, never the device code, a token or a body. The links the
// user is shown are held to the issuer's origin (or an allowed one), both to the same origin.
import { z } from "zod";
import type { Clock } from "../../clock/clock.js";
import type { Service } from "../../config/registry.js";
import type { DeviceGrant, DeviceGrantFactory, DevicePoll } from "../ports.js";
import { DEVICE_GRANT_TYPE, type DeviceEndpoints, fetchDeviceEndpoints } from "./discovery.js";
import { OAuthError } from "./errors.js";
import { checkDiscovered, checkEndpoint, guardedFetch, type HttpOptions, vendorErrorOf } from "./http.js";
import type { OAuthTokens } from "./token-client.js";

/** RFC 8628 §3.2: poll every 5 s unless the server says otherwise; never faster than 1 s. */
const DEFAULT_INTERVAL_S = 5;

const authorizationResponse = z
  .object({
    device_code: z.string().min(1).max(2048),
    user_code: z.string().min(1).max(64),
    verification_uri: z.string().min(1).max(2048),
    verification_uri_complete: z.string().max(2048).optional(),
    expires_in: z.number().int().positive().max(86_400),
    interval: z.number().int().min(1).max(600).optional(),
  })
  .loose();

const tokenResponse = z
  .object({
    access_token: z.string().min(1),
    token_type: z.string().min(1).default("Bearer"),
    refresh_token: z.string().min(1).optional(),
    expires_in: z.number().nonnegative().finite().optional(),
    scope: z.string().optional(),
  })
  .loose();

/** Settings of the device grant client. */
export interface DeviceGrantSettings extends HttpOptions {
  readonly clock: Clock;
}

type DeviceCapture = Extract<Service["entry"]["capture"], { strategy: "device" }>["device"];

/** POSTs a form to `endpoint` through the guarded fetch; the status, the vendor error and the JSON body. */
async function postForm(
  endpoint: string,
  form: Record<string, string>,
  step: string,
  opts: DeviceGrantSettings,
): Promise<{ status: number; vendorError: string | undefined; json: unknown }> {
  const url = checkEndpoint(endpoint, `${step} endpoint`, opts);
  const http = guardedFetch(opts, step);
  const res = await http.fetchFn(url, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
    body: new URLSearchParams(form).toString(),
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text) as unknown;
  } catch {
    json = undefined;
  }
  return { status: res.status, vendorError: vendorErrorOf(json), json };
}

/**
 * The links the user is shown (RFC 8628 §3.2): `verification_uri` is the text, `verification_uri_complete`
 * the link it opens. Each is a discovered URL of `from` (the issuer, or the configured device endpoint
 * that answered): https when it is, on its origin or an allowed one, never javascript: or data:. Both
 * must be on the same origin, so the host the page shows is the host the link opens.
 */
export function verificationLinks(
  a: { verification_uri: string; verification_uri_complete?: string | undefined },
  from: URL,
  opts: HttpOptions & { allowedOrigins?: readonly string[] },
): { verificationUri: string; verificationUriComplete?: string } {
  const shown = checkDiscovered(a.verification_uri, "verification_uri", from, opts);
  if (a.verification_uri_complete === undefined) return { verificationUri: shown.href };
  const opened = checkDiscovered(a.verification_uri_complete, "verification_uri_complete", from, opts);
  if (opened.origin !== shown.origin) {
    throw new OAuthError(
      "insecure_endpoint",
      `verification_uri_complete opens ${opened.origin} while verification_uri shows ${shown.origin}: both must be on one origin`,
    );
  }
  return { verificationUri: shown.href, verificationUriComplete: opened.href };
}

/**
 * The registry's endpoints when it configures them, else the ones the issuer's metadata names
 * (RFC 8414), read afresh at each login and held to the issuer's origin (or an allowed one).
 * Either way each is checked by `checkEndpoint` again before every request.
 */
export async function deviceEndpoints(c: DeviceCapture, opts: HttpOptions): Promise<DeviceEndpoints> {
  if (c.deviceAuthorizationEndpoint !== undefined && c.tokenEndpoint !== undefined)
    return { deviceAuthorizationEndpoint: c.deviceAuthorizationEndpoint, tokenEndpoint: c.tokenEndpoint };
  // The registry schema requires one or the other; a document that slipped past it fails closed.
  if (c.issuer === undefined)
    throw new OAuthError("client_unknown", "device login names neither its endpoints nor an issuer");
  return fetchDeviceEndpoints(c.issuer, { ...opts, allowedOrigins: c.allowedOrigins });
}

/** Starts one device login (RFC 8628 §3.1-3.2) and returns how to poll it (§3.4-3.5). Throws OAuthError. */
export async function startDeviceGrant(c: DeviceCapture, opts: DeviceGrantSettings): Promise<DeviceGrant> {
  const step = "device authorization";
  const e = await deviceEndpoints(c, opts);
  const host = new URL(e.deviceAuthorizationEndpoint).host;
  const r = await postForm(
    e.deviceAuthorizationEndpoint,
    { client_id: c.clientId, ...(c.scopes.length ? { scope: c.scopes.join(" ") } : {}) },
    step,
    opts,
  );
  if (r.status < 200 || r.status >= 300) {
    throw new OAuthError(
      r.vendorError === "access_denied" ? "access_denied" : r.status >= 500 ? "server_error" : "invalid_request",
      `${step} failed at ${host} (HTTP ${r.status}${r.vendorError ? `, ${r.vendorError}` : ""})`,
      { status: r.status, ...(r.vendorError ? { vendorError: r.vendorError } : {}) },
    );
  }
  const parsed = authorizationResponse.safeParse(r.json);
  if (!parsed.success)
    throw new OAuthError("invalid_response", `${step}: ${host} returned an unexpected response`, { status: r.status });
  const a = parsed.data;
  // The links are the issuer's (configured device endpoints: the endpoint that answered).
  const links = verificationLinks(a, new URL(c.issuer ?? e.deviceAuthorizationEndpoint), {
    ...opts,
    allowedOrigins: c.allowedOrigins,
  });
  const deviceCode = a.device_code;
  const tokenHost = new URL(e.tokenEndpoint).host;
  return {
    ...links,
    userCode: a.user_code,
    intervalMs: (a.interval ?? DEFAULT_INTERVAL_S) * 1000,
    expiresAt: opts.clock.now() + a.expires_in * 1000,
    async poll(): Promise<DevicePoll> {
      const issuedAt = opts.clock.now();
      const t = await postForm(
        e.tokenEndpoint,
        { grant_type: DEVICE_GRANT_TYPE, device_code: deviceCode, client_id: c.clientId },
        "device token poll",
        opts,
      );
      if (t.status >= 200 && t.status < 300 && !t.vendorError) {
        const tok = tokenResponse.safeParse(t.json);
        if (!tok.success)
          throw new OAuthError("invalid_response", `device token poll: ${tokenHost} returned an unexpected response`, {
            status: t.status,
          });
        return { tokens: toTokens(tok.data, issuedAt, { tokenEndpoint: e.tokenEndpoint, clientId: c.clientId }) };
      }
      switch (t.vendorError) {
        case "authorization_pending":
          return "pending";
        case "slow_down":
          return "slow_down";
        case "expired_token":
        case "access_denied":
          throw new OAuthError(t.vendorError, `device token poll ended at ${tokenHost} (${t.vendorError})`, {
            status: t.status,
            vendorError: t.vendorError,
          });
        default:
          throw new OAuthError(
            t.status >= 500 ? "server_error" : "invalid_grant",
            `device token poll failed at ${tokenHost} (HTTP ${t.status}${t.vendorError ? `, ${t.vendorError}` : ""})`,
            { status: t.status, ...(t.vendorError ? { vendorError: t.vendorError } : {}) },
          );
      }
    },
  };
}

/** Tokens as the vault stores them, with the client they were issued to (a refresh needs it). */
function toTokens(
  r: z.output<typeof tokenResponse>,
  issuedAt: number,
  client: { tokenEndpoint: string; clientId: string },
): OAuthTokens {
  return {
    kind: "oauth",
    accessToken: r.access_token,
    tokenType: r.token_type.toLowerCase() === "bearer" ? "Bearer" : r.token_type,
    ...(r.refresh_token ? { refreshToken: r.refresh_token } : {}),
    ...(r.expires_in !== undefined ? { expiresAt: issuedAt + Math.floor(r.expires_in) * 1000 } : {}),
    ...(r.scope ? { scope: r.scope } : {}),
    client,
  };
}

/** The DeviceGrantFactory port for the login service: endpoints and client from the registry. */
export function deviceGrants(settings: DeviceGrantSettings): DeviceGrantFactory {
  return async (service: Service): Promise<DeviceGrant> => {
    const c = service.entry.capture;
    if (c.strategy !== "device")
      throw new OAuthError("client_unknown", `service "${service.name}" does not use device login`);
    return startDeviceGrant(c.device, settings);
  };
}
