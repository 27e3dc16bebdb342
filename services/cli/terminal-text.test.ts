import { describe, expect, it } from "vitest";
import { colourEnabled, painter, printable } from "./terminal-text.ts";

describe("printable", () => {
  it("shows escape sequences, carriage returns and bidi overrides instead of obeying them", () => {
    expect(printable("a\u001b[2J\u001b]0;pwned\u0007b")).toBe("a\\u{1b}[2J\\u{1b}]0;pwned\\u{7}b");
    expect(printable("ok\rFAKE")).toBe("ok\\u{d}FAKE");
    expect(printable("x\u202ey\u2066")).toBe("x\\u{202e}y\\u{2066}");
    expect(printable("tab\tand\nnewline stay, é and 東京 too")).toBe(
      "tab\tand\nnewline stay, é and 東京 too",
    );
  });
});

describe("colour", () => {
  it("only on a TTY, never with NO_COLOR set to anything but empty", () => {
    expect(colourEnabled(true, {})).toBe(true);
    expect(colourEnabled(true, { NO_COLOR: "" })).toBe(true);
    expect(colourEnabled(true, { NO_COLOR: "1" })).toBe(false);
    expect(colourEnabled(false, {})).toBe(false);
    expect(colourEnabled(undefined, {})).toBe(false);
  });
  it("paints with SGR codes when enabled, and not at all otherwise", () => {
    expect(painter(true)("red", "x")).toBe("\u001b[31mx\u001b[39m");
    expect(painter(false)("red", "x")).toBe("x");
    expect(painter(true)(null, "x")).toBe("x");
  });
});
