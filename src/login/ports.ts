// The ports of the login flow: the confined browser, the notifier and OAuth (adapters in src/login/browser, src/slack, src/login/oauth).
import type { Service } from "../config/registry.js";
import type { Connection, LoginSession } from "../store/records.js";
import type { CredentialInput } from "../vault/credential.js";

/** The part of the confined browser the login flow drives (src/login/browser). */
export interface LoginBrowser {
  mouse(e: {
    type: "move" | "down" | "up";
    x: number;
    y: number;
    button?: "left" | "right" | "middle";
    clickCount?: number;
  }): Promise<void>;
  wheel(e: { x: number; y: number; deltaX: number; deltaY: number }): Promise<void>;
  key(e: { type: "down" | "up"; key: string }): Promise<void>;
  text(s: string): Promise<void>;
  cookies(): Promise<
    {
      name: string;
      value: string;
      domain: string;
      path: string;
      expires?: number;
      httpOnly?: boolean;
      secure?: boolean;
      sameSite?: "Strict" | "Lax" | "None";
    }[]
  >;
  close(): Promise<void>;
}

/** Options the flow gives the browser factory. */
export interface LoginBrowserRequest {
  readonly startUrl: string;
  readonly allowedHosts: readonly string[];
  readonly viewport: { width: number; height: number };
  readonly onFrame: (f: { data: Buffer; width: number; height: number; popup: boolean }) => void;
  readonly onBlockedNavigation: (url: string) => void;
  readonly intercept?: { prefix: string; onHit(url: string): void };
}

/** Launches confined browsers (the port to Chromium). */
export type LoginBrowserFactory = (req: LoginBrowserRequest) => Promise<LoginBrowser>;

/** Tells a user their connection is ready (Slack DM in production). */
export interface LoginNotifier {
  connectionReady(session: LoginSession, connection: Connection, service: Service): Promise<void>;
}

/** An OAuth flow for one login: the authorize URL to open and how to turn the intercepted redirect into a credential. */
export interface OAuthFlow {
  readonly authorizeUrl: string;
  readonly redirectPrefix: string;
  complete(redirectUrl: string): Promise<CredentialInput>;
}

/** Starts an OAuth flow for a service (PKCE, discovery, registration: src/login/oauth). */
export type OAuthFlowFactory = (service: Service, session: LoginSession) => Promise<OAuthFlow>;

/** One poll of the device grant's token endpoint: keep waiting, wait longer, or the tokens. Throws OAuthError when it ended. */
export type DevicePoll = "pending" | "slow_down" | { tokens: CredentialInput };

/** A started device login (RFC 8628): what the user is shown and how the broker polls. */
export interface DeviceGrant {
  readonly verificationUri: string;
  readonly verificationUriComplete?: string;
  /** Shown only on the connecting user's private login page. */
  readonly userCode: string;
  readonly intervalMs: number;
  readonly expiresAt: number;
  poll(): Promise<DevicePoll>;
}

/** Starts a device login for a service (src/login/oauth/device.ts). */
export type DeviceGrantFactory = (service: Service) => Promise<DeviceGrant>;
