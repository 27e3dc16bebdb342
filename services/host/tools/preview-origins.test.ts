// Where a BrowserPreview URL goes, as tables: every spelling of the machine itself is loopback (the
// browser sandbox's own) and never fetched by the host, listed or not; a listed origin elsewhere is
// fetched; anything else is refused.
import { describe, expect, it } from "vitest";
import { isFetchable, isHostItself, isLoopbackUrl, previewTarget } from "./preview-origins.ts";

describe("isHostItself", () => {
  it.each([
    ["127.0.0.1", true],
    ["127.200.0.9", true],
    ["0.0.0.0", true],
    ["::1", true],
    ["[::1]", true],
    ["::", true],
    ["::ffff:127.0.0.1", true],
    ["::ffff:7f00:1", true],
    ["0:0:0:0:0:0:0:1", true],
    ["10.0.0.1", false],
    ["192.0.2.2", false],
    ["fd00::2", false],
    ["::ffff:a00:1", false],
    ["1::1", false],
    ["localhost", false],
  ])("%s: %s", (address, own) => {
    expect(isHostItself(address)).toBe(own);
  });
});

describe("isLoopbackUrl and isFetchable", () => {
  const listed = ["http://127.0.0.1:3000", "http://192.0.2.2:8080", "http://localhost:3000"];
  it.each([
    "http://127.0.0.1:3000/",
    "http://127.1:3000/",
    "http://2130706433:3000/",
    "http://0x7f.0.0.1:3000/",
    "http://localhost:3000/",
    "http://LOCALHOST.:3000/",
    "http://app.localhost:3000/",
    "https://[::1]/",
    "http://[::ffff:127.0.0.1]:3000/",
    "http://0.0.0.0:3000/",
    "http://[::]:3000/",
    "http://0:3000/",
  ])("%s is loopback and never fetched by the host, even listed", (url) => {
    const u = new URL(url);
    expect(isLoopbackUrl(u)).toBe(true);
    expect(isFetchable(u, listed)).toBe(false);
  });

  it("fetches a listed origin elsewhere by exact origin, and nothing unlisted", () => {
    expect(isFetchable(new URL("http://192.0.2.2:8080/a"), listed)).toBe(true);
    expect(isFetchable(new URL("http://192.0.2.2:8081/a"), listed)).toBe(false);
    expect(isFetchable(new URL("https://192.0.2.2:8080/a"), listed)).toBe(false);
    expect(isLoopbackUrl(new URL("http://example.com/"))).toBe(false);
    expect(isLoopbackUrl(new URL("file:///tmp/x"))).toBe(false);
  });
});

describe("previewTarget", () => {
  const ctx = {
    readWorkspaceFile: async (p: string) => ({ rel: p.replace(/^\/ws\//, "") }),
    allowedOrigins: ["http://127.0.0.1:3000", "http://192.0.2.2:8080"],
  };
  it("sends loopback to the sandbox, listed origins to the host, files to Read, the rest away", async () => {
    await expect(previewTarget("http://127.0.0.1:3000/", ctx)).resolves.toEqual({
      kind: "sandbox",
      url: "http://127.0.0.1:3000/",
    });
    await expect(previewTarget("http://192.0.2.2:8080/x", ctx)).resolves.toEqual({
      kind: "fetched",
      url: "http://192.0.2.2:8080/x",
    });
    await expect(previewTarget("file:///ws/site/a.html", ctx)).resolves.toEqual({
      kind: "workspace",
      rel: "site/a.html",
    });
    for (const url of ["http://10.0.0.1/", "ftp://127.0.0.1/", "data:text/html,x"])
      await expect(previewTarget(url, ctx)).rejects.toMatchObject({ code: "BROWSER_URL_NOT_ALLOWED" });
    await expect(previewTarget("http://localhost:9464/", ctx, ["127.0.0.1:9464"])).rejects.toMatchObject({
      code: "BROWSER_URL_NOT_ALLOWED",
    });
  });
});
