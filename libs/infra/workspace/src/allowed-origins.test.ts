import { describe, expect, it } from "vitest";
import { workspaceRecords } from "./apply-file.js";
import { describeIssues, isWebOrigin, sourceAllowsOrigin, workspaceFileSchema } from "./schema.js";

describe("a source's allowedOrigins in the workspace file", () => {
  it("takes web origins as browsers send them, and nothing else", () => {
    for (const origin of ["https://shop.example", "http://127.0.0.1:3000", "https://xn--bcher-kva.example", "http://[::1]:8080"]) {
      expect({ origin, ok: isWebOrigin(origin) }).toEqual({ origin, ok: true });
    }
    for (const origin of [
      "https://shop.example/",
      "https://shop.example/path",
      "*",
      "null",
      "shop.example",
      "ftp://shop.example",
      "HTTPS://SHOP.EXAMPLE",
    ]) {
      expect({ origin, ok: isWebOrigin(origin) }).toEqual({ origin, ok: false });
    }
  });

  it("names the field and the rule for a bad entry, and keeps good ones in the KV record", () => {
    const bad = workspaceFileSchema.safeParse({
      sources: [{ id: "web", writeKeys: ["wk_12345678"], allowedOrigins: ["https://a.example/x"] }],
    });
    expect(bad.success).toBe(false);
    expect(describeIssues(bad.error!)).toEqual([expect.stringMatching(/^sources\.0\.allowedOrigins\.0: must be a web origin/)]);

    const good = workspaceFileSchema.parse({ sources: [{ id: "web", writeKeys: ["wk_12345678"], allowedOrigins: ["https://a.example"] }] });
    expect(workspaceRecords(good).get("source.web")).toMatchObject({ id: "web", allowedOrigins: ["https://a.example"] });
    const open = workspaceFileSchema.parse({ sources: [{ id: "web", writeKeys: ["wk_12345678"] }] });
    expect(workspaceRecords(open).get("source.web")).not.toHaveProperty("allowedOrigins");
  });

  it("allows any origin when unset, and only the listed ones otherwise", () => {
    expect(sourceAllowsOrigin({}, "https://anyone.example")).toBe(true);
    expect(sourceAllowsOrigin({ allowedOrigins: ["https://a.example"] }, "https://a.example")).toBe(true);
    expect(sourceAllowsOrigin({ allowedOrigins: ["https://a.example"] }, "https://b.example")).toBe(false);
    expect(sourceAllowsOrigin({ allowedOrigins: [] }, "https://a.example")).toBe(false);
  });
});
