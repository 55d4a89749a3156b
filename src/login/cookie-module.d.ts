// Types for the `cookie` package (jshttp/cookie 0.7, which ships none; 1.x ships its own with the
// same parse/serialize signatures). Only what src/login uses is declared.
declare module "cookie" {
  export interface SerializeOptions {
    maxAge?: number;
    path?: string;
    httpOnly?: boolean;
    secure?: boolean;
    sameSite?: boolean | "lax" | "strict" | "none";
  }
  export function parse(str: string): Record<string, string | undefined>;
  export function serialize(name: string, value: string, options?: SerializeOptions): string;
}
