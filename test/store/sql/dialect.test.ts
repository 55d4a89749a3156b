import { describe, expect, it } from "vitest";
import { POSTGRES, SQLITE, stmt } from "../../../src/store/sql/dialect.js";

// The shared statements are assembled from parts; their values must follow the text, whatever
// order the parts were built in, or a query would bind a caller where a team belongs.

describe("stmt", () => {
  it("puts the values in the order their placeholders appear in the text", () => {
    const s = stmt((p) => {
      const later = `b = ${p("second")}`;
      const first = `a = ${p("first")}`;
      return `SELECT 1 WHERE ${first} AND ${later} AND c = ${p(3)}`;
    });
    expect(s).toEqual({ text: "SELECT 1 WHERE a = ? AND b = ? AND c = ?", values: ["first", "second", 3] });
  });

  it("numbers PostgreSQL's placeholders in text order; SQLite keeps `?`", () => {
    const s = stmt((p) => `x = ${p(1)} OR y IN (${POSTGRES.list.sql.replace("?", p(POSTGRES.list.value(["a"])))})`);
    expect(POSTGRES.placeholders(s.text)).toBe("x = $1 OR y IN (SELECT unnest(CAST($2 AS text[])))");
    expect(s.values).toEqual([1, ["a"]]);
    expect(SQLITE.placeholders("x = ?")).toBe("x = ?");
    expect(SQLITE.list.value(["a", "b"])).toBe('["a","b"]');
  });
});
