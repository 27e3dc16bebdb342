import { describe, expect, it } from "vitest";
import {
  auditListParams,
  onOff,
  pluginsRegisterParams,
  scheduledCreateParams,
  scheduledUpdateParams,
  settingsSetParams,
  wholeNumber,
} from "./admin-params.ts";
import { UsageError } from "./cli-error.ts";

const usage = (f: () => unknown) => expect(f).toThrow(UsageError);
const base = { name: "n", cron: "0 9 * * *", timezone: "UTC", project: "prj_1", prompt: "go" };

describe("wholeNumber and onOff", () => {
  it("takes whole numbers in range and on/off only", () => {
    expect(wholeNumber("7", "--limit", 1, 10)).toBe(7);
    expect(wholeNumber(" 10", "--limit", 1, 10)).toBe(10);
    for (const bad of ["0", "11", "-1", "1.5", "1e2", "", "x", "0x5"])
      usage(() => wholeNumber(bad, "--limit", 1, 10));
    expect(onOff("on", "--enabled")).toBe(true);
    expect(onOff("off", "--enabled")).toBe(false);
    for (const bad of ["true", "yes", "ON", ""]) usage(() => onOff(bad, "--enabled"));
  });
});

describe("settingsSetParams", () => {
  it("maps each field and refuses bad values, inherit, and nothing", () => {
    expect(settingsSetParams({ defaultMode: "plan" })).toEqual({ defaultMode: "plan" });
    expect(settingsSetParams({ defaultMode: "agent", defaultPermissionMode: "auto" })).toEqual({
      defaultMode: "agent",
      defaultPermissionMode: "auto",
    });
    usage(() => settingsSetParams({ defaultMode: "chat" }));
    expect(() => settingsSetParams({ defaultPermissionMode: "inherit" })).toThrow(/session value only/);
    usage(() => settingsSetParams({ defaultPermissionMode: "yolo" }));
    expect(() => settingsSetParams({})).toThrow(/nothing to change/);
  });
});

describe("scheduledCreateParams", () => {
  it("maps the options; cron and zone go as given", () => {
    expect(scheduledCreateParams({ ...base, cron: "61 * * * *", timezone: "Mars/X" })).toEqual({
      name: "n",
      cron: "61 * * * *",
      timezone: "Mars/X",
      projectId: "prj_1",
      prompt: "go",
    });
    expect(
      scheduledCreateParams({
        ...base,
        mode: "plan",
        permissionMode: "inherit",
        model: "openai/gpt-x",
        enabled: "off",
      }),
    ).toMatchObject({
      mode: "plan",
      permissionMode: "inherit",
      model: { provider: "openai", model: "gpt-x" },
      enabled: false,
    });
  });
  it("takes the prompt from a file and a script as the scripted model", () => {
    const { prompt: _p, ...noPrompt } = base;
    expect(
      scheduledCreateParams(noPrompt, {
        promptFile: { file: "p.txt", text: "from file\n" },
        script: { file: "s.json", steps: [{ text: "hi" }] },
      }),
    ).toMatchObject({
      prompt: "from file\n",
      model: { provider: "scripted", model: "script", script: [{ text: "hi" }] },
    });
  });
  it("names every missing required option and refuses conflicts and bad values", () => {
    expect(() => scheduledCreateParams({})).toThrow(
      /--name, --cron, --timezone, --project, --prompt or --prompt-file/,
    );
    usage(() => scheduledCreateParams(base, { promptFile: { file: "p", text: "x" } }));
    usage(() => scheduledCreateParams({ ...base, model: "a/b" }, { script: { file: "s", steps: [] } }));
    usage(() => scheduledCreateParams({ ...base, prompt: "" }));
    usage(() => scheduledCreateParams({ ...base, mode: "chat" }));
    usage(() => scheduledCreateParams({ ...base, permissionMode: "yolo" }));
    usage(() => scheduledCreateParams({ ...base, model: "nomodel" }));
    usage(() => scheduledCreateParams({ ...base, enabled: "maybe" }));
    usage(() => scheduledCreateParams(base, { script: { file: "s", steps: { not: "array" } } }));
  });
});

describe("scheduledUpdateParams", () => {
  it("sends only what is given and refuses an update that changes nothing", () => {
    expect(scheduledUpdateParams("task_1", { enabled: "off" })).toEqual({ taskId: "task_1", enabled: false });
    expect(scheduledUpdateParams("task_1", { project: "prj_2", cron: "* * * * *" })).toEqual({
      taskId: "task_1",
      projectId: "prj_2",
      cron: "* * * * *",
    });
    expect(() => scheduledUpdateParams("task_1", {})).toThrow(/nothing to change/);
  });
});

describe("auditListParams", () => {
  it("maps the filters and bounds the cursor and limit", () => {
    expect(auditListParams({})).toEqual({});
    expect(auditListParams({ session: "s", project: "p", before: "42", limit: "200" })).toEqual({
      sessionId: "s",
      projectId: "p",
      before: 42,
      limit: 200,
    });
    usage(() => auditListParams({ before: "0" }));
    usage(() => auditListParams({ before: "abc" }));
    usage(() => auditListParams({ limit: "201" }));
  });
});

describe("pluginsRegisterParams", () => {
  it("wraps a manifest, takes a request body as is, refuses what is not an object", () => {
    const m = { id: "echo", tools: [] };
    expect(pluginsRegisterParams(m, "m.json")).toEqual({ manifest: m });
    expect(pluginsRegisterParams({ manifest: m }, "m.json")).toEqual({ manifest: m });
    for (const bad of [null, [], "x", 3]) usage(() => pluginsRegisterParams(bad, "m.json"));
  });
});
