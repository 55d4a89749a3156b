import { describe, expect, it } from "vitest";
import { ConfinedBrowserError } from "../../../src/login/browser/errors.js";
import { HostAllowlist } from "../../../src/login/browser/host-allowlist.js";
import { jpegSize } from "../../../src/login/browser/jpeg-size.js";

describe("HostAllowlist.allowsUrl", () => {
  const allow = HostAllowlist.parse([
    "idp.example.com",
    "*.corp.example",
    "127.0.0.1:4567",
    "[::1]:8080",
    "tls.example.org:443",
  ]);
  const table: [string, boolean][] = [
    ["https://idp.example.com/login", true],
    ["http://idp.example.com/login", true],
    ["https://idp.example.com:443/", true],
    ["wss://idp.example.com/socket", true],
    ["https://IDP.Example.COM/", true],
    ["https://idp.example.com:8443/", false],
    ["http://idp.example.com:443/", false],
    ["https://evil.idp.example.com/", false],
    ["https://idp.example.com.evil.net/", false],
    ["https://example.com/", false],
    ["https://user:pw@idp.example.com/", false],
    ["https://a.corp.example/", true],
    ["https://a.b.corp.example/", true],
    ["https://corp.example/", false],
    ["https://xcorp.example/", false],
    ["http://127.0.0.1:4567/callback", true],
    ["http://127.0.0.1/", false],
    ["http://127.0.0.1:4568/", false],
    ["http://localhost:4567/", false],
    ["http://[::1]:8080/", true],
    ["http://[::1]:8081/", false],
    ["https://tls.example.org/", true],
    ["http://tls.example.org/", false],
    ["ftp://idp.example.com/", false],
    ["file:///etc/passwd", false],
    ["javascript:alert(1)", false],
    ["data:text/html,hi", false],
    ["not a url", false],
  ];
  it.each(table)("%s → %s", (url, allowed) => {
    expect(allow.allowsUrl(url)).toBe(allowed);
  });
});

describe("HostAllowlist.allowsCookieDomain", () => {
  const allow = HostAllowlist.parse(["idp.example.com", "*.corp.example", "127.0.0.1:4567"]);
  const table: [string, boolean][] = [
    ["idp.example.com", true],
    [".idp.example.com", true],
    [".example.com", true], // a domain cookie sent to idp.example.com
    ["example.com", false], // host-only: never sent to idp.example.com
    ["other.example.com", false],
    [".other.example.com", false],
    ["a.corp.example", true],
    [".a.b.corp.example", true],
    [".corp.example", true],
    ["corp.example", false],
    ["127.0.0.1", true],
    ["127.0.0.2", false],
    ["evil.net", false],
    [".", false],
    ["", false],
  ];
  it.each(table)("%s → %s", (domain, allowed) => {
    expect(allow.allowsCookieDomain(domain)).toBe(allowed);
  });
});

describe("HostAllowlist.parse", () => {
  it.each([
    [[]],
    [[""]],
    [["*"]],
    [["*.com"]],
    [["http://idp.example.com"]],
    [["idp.example.com/path"]],
    [["idp.example.com:0"]],
    [["idp.example.com:70000"]],
    [["idp..example.com"]],
    [["a*.example.com"]],
    [["*.[::1]"]],
    [["idp.example.com", "bad host"]],
  ])("refuses %j", (patterns) => {
    expect(() => HostAllowlist.parse(patterns)).toThrow(ConfinedBrowserError);
  });

  it("renders Chromium's proxy-bypass list and host-resolver rules from the same patterns", () => {
    const allow = HostAllowlist.parse(["idp.example.com", "*.corp.example", "127.0.0.1:4567", "[::1]:8080"]);
    expect(allow.proxyBypassList()).toBe(
      "<-loopback>;idp.example.com:80;idp.example.com:443;*.corp.example:80;*.corp.example:443;127.0.0.1:4567;[::1]:8080",
    );
    expect(allow.hostResolverRules()).toBe(
      "MAP * ~NOTFOUND, EXCLUDE idp.example.com, EXCLUDE *.corp.example, EXCLUDE 127.0.0.1, EXCLUDE [::1], EXCLUDE ::1",
    );
  });
});

describe("jpegSize", () => {
  // SOI, an APP0 segment, then SOF0 with height 600 and width 800.
  const app0 = [
    0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01, 0x01, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00,
  ];
  const sof0 = [
    0xff, 0xc0, 0x00, 0x11, 0x08, 0x02, 0x58, 0x03, 0x20, 0x03, 0x01, 0x22, 0x00, 0x02, 0x11, 0x01, 0x03, 0x11, 0x01,
  ];
  const jpeg = Buffer.from([0xff, 0xd8, ...app0, ...sof0, 0xff, 0xd9]);

  it("reads the size from the start-of-frame header", () => {
    expect(jpegSize(jpeg)).toEqual({ width: 800, height: 600 });
  });

  it("rejects what is not a JPEG or is cut short", () => {
    expect(jpegSize(Buffer.from("\x89PNG\r\n\x1a\n", "binary"))).toBeUndefined();
    expect(jpegSize(jpeg.subarray(0, 25))).toBeUndefined();
    expect(jpegSize(Buffer.from([0xff, 0xd8, 0xff, 0xd9]))).toBeUndefined();
    expect(jpegSize(Buffer.alloc(0))).toBeUndefined();
  });
});
