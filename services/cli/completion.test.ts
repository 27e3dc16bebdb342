// The generated completion scripts run in real shells: bash through COMP_WORDS/COMPREPLY, zsh through
// its completion system in a pseudo-terminal (zpty), so what is tested is what a user's TAB offers.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Command, Option } from "commander";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { APPROVE_MODES, OPERATING_MODES, PERMISSION_MODES } from "./cli-params.ts";
import { runCli } from "./cli-program.ts";
import type { CliDeps, Run } from "./cli-run.ts";
import { addCompletionCommand } from "./commands/completion.ts";
import { completionScript, PATH_VALUES } from "./completion.ts";

async function cli(args: string[]) {
  let stdout = "";
  let stderr = "";
  let connected = false;
  const deps: CliDeps = {
    env: {},
    cwd: "/",
    osUserName: "alice",
    stdout: (t) => {
      stdout += t;
    },
    stderr: (t) => {
      stderr += t;
    },
    connect: async () => {
      connected = true;
      throw new Error("completion must not connect");
    },
    readFile: async () => {
      throw new Error("completion must not read files");
    },
  };
  const code = await runCli(args, deps);
  return { code, stdout, stderr, connected };
}

let dir: string;
/** A working folder with files and a folder, for the path options. */
let work: string;
const scripts: { bash: string; zsh: string } = { bash: "", zsh: "" };

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), "pihost-completion-"));
  work = path.join(dir, "work");
  mkdirSync(path.join(work, "plans-dir"), { recursive: true });
  writeFileSync(path.join(work, "steps.json"), "[]");
  writeFileSync(path.join(work, "team.yaml"), "");
  for (const shell of ["bash", "zsh"] as const) {
    const r = await cli(["completion", shell]);
    expect(r).toMatchObject({ code: 0, stderr: "", connected: false });
    scripts[shell] = r.stdout;
    writeFileSync(path.join(dir, `pihost.${shell}`), r.stdout);
  }
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Completes the last word of `words` (after `pihost`) as bash would, and returns COMPREPLY. */
function bash(words: string[], script = path.join(dir, "pihost.bash")): string[] {
  const driver = `source "$1"; shift
COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); COMP_LINE="$*"; COMP_POINT=\${#COMP_LINE}
_pihost pihost "\${COMP_WORDS[COMP_CWORD]}" "\${COMP_WORDS[COMP_CWORD-1]}"
printf '%s\\n' "\${COMPREPLY[@]}"`;
  const r = spawnSync("bash", ["--norc", "--noprofile", "-c", driver, "bash", script, "pihost", ...words], {
    cwd: work,
    encoding: "utf8",
  });
  expect(r.stderr).toBe("");
  expect(r.status).toBe(0);
  return r.stdout.split("\n").filter((l) => l !== "");
}

/** The names under "Commands:" in `pihost <path> --help`: what commander itself says exists. */
async function helpCommands(cmdPath: string[]): Promise<string[]> {
  const { stdout } = await cli([...cmdPath, "--help"]);
  const section = stdout.split(/^Commands:$/m)[1]?.split("\n\n")[0];
  if (section === undefined) return [];
  return [...section.matchAll(/^ {2}(\S+)/gm)].map((m) => m[1] as string);
}

describe("pihost completion", () => {
  it("without a shell, or with an unknown one, is a usage error (exit 2) and prints no script", async () => {
    for (const args of [["completion"], ["completion", "fish"], ["--json", "completion"]]) {
      const r = await cli(args);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe("");
      expect(r.connected).toBe(false);
    }
    expect((await cli(["completion"])).stderr).toBe("error USAGE: missing required argument 'shell'\n");
    expect((await cli(["completion", "fish"])).stderr).toMatch(/^error USAGE: .*'fish'.*bash, zsh\.\n$/);
    expect(JSON.parse((await cli(["--json", "completion"])).stderr)).toMatchObject({
      error: { code: "USAGE", retriable: false },
    });
  });

  it("says how to install the script in its help", async () => {
    const r = await cli(["completion", "--help"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("source <(pihost completion bash)");
    expect(r.stdout).toContain("pihost completion zsh > ~/.zfunc/_pihost");
    expect(r.stdout).toContain("fpath=(~/.zfunc $fpath)");
    expect(r.stdout).toContain("source <(pihost completion zsh)");
  });

  it("prints the same script with --json (the script is the output)", async () => {
    expect((await cli(["--json", "completion", "bash"])).stdout).toBe(scripts.bash);
  });
});

describe("bash", () => {
  it("offers every top-level command and every subcommand commander lists in its help", async () => {
    const top = await helpCommands([]);
    expect(top).toEqual(expect.arrayContaining(["hello", "session", "plans", "completion", "help"]));
    expect(bash([""])).toEqual(top);
    let groups = 0;
    for (const group of top.filter((c) => c !== "help")) {
      const subs = await helpCommands([group]);
      if (subs.length === 0) continue; // a leaf: TAB offers its arguments' values or its options
      groups += 1;
      expect(bash([group, ""]), group).toEqual(subs);
      for (const sub of subs.filter((c) => c !== "help")) {
        const subsubs = await helpCommands([group, sub]);
        if (subsubs.length > 0) expect(bash([group, sub, ""]), `${group} ${sub}`).toEqual(subsubs);
      }
    }
    expect(groups).toBeGreaterThanOrEqual(4);
    expect(bash(["pl"])).toEqual(["plans", "plugins"]);
    expect(bash(["plans", "ap"])).toEqual(["approve"]);
    expect(bash(["help", "sess"])).toEqual(["session"]);
  });

  it("offers a command's options, its parents' options (--json, --version) and the short flags", () => {
    const opts = bash(["session", "create", "-"]);
    for (const f of ["--project", "--mode", "--permission-mode", "--script", "--approver", "-q", "--quiet"])
      expect(opts).toContain(f);
    for (const f of ["--json", "-V", "--version", "-h", "--help"]) expect(opts).toContain(f);
    expect(bash(["session", "create", "--perm"])).toEqual(["--permission-mode"]);
    expect(bash(["--js"])).toEqual(["--json"]);
    // An option's value is not taken for a subcommand or an argument.
    expect(bash(["plans", "approve", "--mode", "auto", "X", "--w"])).toEqual(["--wait"]);
  });

  it("offers exactly the approve modes after `plans approve X --mode`, whichever way the value is written", () => {
    const modes = [...APPROVE_MODES];
    expect(bash(["plans", "approve", "X", "--mode", ""])).toEqual(modes);
    expect(bash(["plans", "approve", "X", "--json", "--mode", ""])).toEqual(modes);
    expect(bash(["plans", "approve", "--mode", ""])).toEqual(modes);
    // --mode=<TAB>: bash splits the word at "=" (COMP_WORDBREAKS).
    expect(bash(["plans", "approve", "X", "--mode", "="])).toEqual(modes);
    expect(bash(["plans", "approve", "X", "--mode", "=", "a"]).sort()).toEqual([
      "accept-edits",
      "ask",
      "auto",
    ]);
    // ... unless "=" was taken out of COMP_WORDBREAKS: the whole word is replaced.
    expect(bash(["plans", "approve", "X", "--mode=ac"])).toEqual(["--mode=accept-edits"]);
  });

  it("offers every .choices() value: modes, permission modes, shells", () => {
    expect(bash(["session", "create", "--mode", ""])).toEqual([...OPERATING_MODES]);
    expect(bash(["session", "create", "--permission-mode", ""])).toEqual([...PERMISSION_MODES]);
    expect(bash(["session", "create", "--permission-mode", "a"])).toEqual(["ask", "accept-edits", "auto"]);
    expect(bash(["completion", ""])).toEqual(["bash", "zsh"]);
  });

  it("does not complete ids (that would need the host), and offers options once the arguments are given", () => {
    expect(bash(["plans", "approve", ""])).toEqual([]);
    expect(bash(["session", "show", ""])).toEqual([]);
    expect(bash(["prompt", "S1", ""])).toEqual([]);
    expect(bash(["plans", "approve", "X", ""])).toContain("--mode");
    expect(bash(["session", "create", "--project", ""])).toEqual([]);
    // After `--` nothing is an option.
    expect(bash(["plans", "approve", "--", "-"])).toEqual([]);
  });

  it("completes files for the path options and folders for --root", () => {
    expect(Object.keys(PATH_VALUES)).toEqual(
      expect.arrayContaining(["--script", "--users", "--out", "--secrets"]),
    );
    expect(bash(["session", "create", "--script", "st"])).toEqual(["steps.json"]);
    expect(bash(["nats-config", "--users", ""]).sort()).toEqual(["plans-dir", "steps.json", "team.yaml"]);
    expect(bash(["nats-config", "--users", "t", "--out", "", "--secrets", "s"])).toEqual(["steps.json"]);
    expect(bash(["project", "create", "--root", ""])).toEqual(["plans-dir"]);
    expect(bash(["session", "create", "--script=st"])).toEqual(["--script=steps.json"]);
  });

  it("completes a command added to the tree later, with no change to the generator", async () => {
    const program = new Command("pihost").option("--json");
    const widgets = program.command("widgets").description("a group that does not exist yet");
    widgets
      .command("frob")
      .alias("fr")
      .argument("<widgetId>")
      .addOption(new Option("--color <color>", "its color").choices(["red", "green"]))
      .option("--out <file>", "where to write it");
    let script = "";
    const run = { deps: { stdout: (t: string) => (script += t) } } as unknown as Run;
    addCompletionCommand(program, run);
    await program.parseAsync(["completion", "bash"], { from: "user" });
    expect(script).toBe(completionScript(widgets, "bash"));
    const file = path.join(dir, "later.bash");
    writeFileSync(file, script);
    expect(bash([""], file)).toEqual(["widgets", "completion", "help"]);
    expect(bash(["widgets", ""], file)).toEqual(["frob", "help"]);
    expect(bash(["widgets", "fr", "W1", "--color", ""], file)).toEqual(["red", "green"]);
    expect(bash(["widgets", "frob", "W1", "-"], file)).toEqual([
      "--color",
      "--out",
      "-h",
      "--help",
      "--json",
    ]);
    expect(bash(["widgets", "frob", "W1", "--out", "st"], file)).toEqual(["steps.json"]);
  });
});

const hasZsh = spawnSync("zsh", ["-f", "-c", "true"]).status === 0;

/**
 * Types `line` and TAB into an interactive `zsh -f` in a pseudo-terminal and returns every match the
 * completion system added. The script is installed as _pihost in $fpath before compinit, or sourced
 * after it; compadd is wrapped to record the matches, after zsh's own matching against the word.
 */
function zsh(line: string, install: "fpath" | "source" = "fpath"): string[] {
  const out = path.join(dir, `zsh-${Math.random().toString(36).slice(2)}`);
  const fp = path.join(dir, "fpath");
  mkdirSync(fp, { recursive: true });
  writeFileSync(path.join(fp, "_pihost"), scripts.zsh);
  const init = path.join(dir, "init.zsh");
  writeFileSync(
    init,
    `PROMPT='' RPROMPT=''
${install === "fpath" ? `fpath=(${fp} $fpath)` : ""}
autoload -U compinit && compinit -u -D
${install === "source" ? `source ${path.join(dir, "pihost.zsh")}` : ""}
bindkey '^I' complete-word
compadd() {
  if [[ \${@[1,(i)(-|--)]} == *-(O|A|D)\\ * ]]; then builtin compadd "$@"; return; fi
  local -a __hits
  builtin compadd -A __hits "$@"
  (( $#__hits )) && print -rl -- $__hits >> $ZT_OUT
  builtin compadd "$@"
}
_zt_done() { print -r -- "\${_comps[pihost]}" > $ZT_OUT.done }
comppostfuncs=(_zt_done)
print ready > $ZT_OUT.ready
`,
  );
  const driver = `zmodload zsh/zpty
zpty z "ZT_OUT=$2 HOME=$3 ZDOTDIR=$3 zsh -f -i"
zpty -w z "source $1"
integer n=0
while [[ ! -e $2.ready ]] && (( n++ < 200 )); do zpty -r -t z junk; sleep 0.05; done
zpty -n -w z "$4"$'\\t'
n=0
while [[ ! -e $2.done ]] && (( n++ < 200 )); do zpty -r -t z junk; sleep 0.05; done
zpty -d z
[[ -e $2.done ]] || { print -u2 "no completion ran"; exit 1 }
[[ $(<$2.done) == _pihost ]] || { print -u2 "pihost is completed by '$(<$2.done)'"; exit 1 }`;
  const r = spawnSync("zsh", ["-f", "-c", driver, "zsh", init, out, dir, line], {
    cwd: work,
    encoding: "utf8",
    timeout: 30_000,
  });
  expect(r.stderr).toBe("");
  expect(r.status).toBe(0);
  let text = "";
  try {
    text = spawnSync("cat", [out], { encoding: "utf8" }).stdout;
  } finally {
    rmSync(out, { force: true });
    rmSync(`${out}.done`, { force: true });
    rmSync(`${out}.ready`, { force: true });
  }
  return text.split("\n").filter((l) => l !== "");
}

describe.skipIf(!hasZsh && !process.env.CI)("zsh", () => {
  it("parses (zsh -n) and registers _pihost for pihost through compinit", () => {
    const file = path.join(dir, "pihost.zsh");
    expect(spawnSync("zsh", ["-n", file]).status).toBe(0);
    expect(scripts.zsh.split("\n")[0]).toBe("#compdef pihost");
    const r = spawnSync(
      "zsh",
      ["-f", "-c", `autoload -U compinit && compinit -u -D && source ${file} && print -r -- $_comps[pihost]`],
      { encoding: "utf8", env: { ...process.env, HOME: dir, ZDOTDIR: dir } },
    );
    expect(r.stderr).toBe("");
    expect(r.stdout).toBe("_pihost\n");
  });

  it("offers exactly the approve modes after `plans approve X --mode`, installed in $fpath or sourced", () => {
    const modes = [...APPROVE_MODES];
    expect(zsh("pihost plans approve X --mode ")).toEqual(modes);
    expect(zsh("pihost plans approve X --mode ", "source")).toEqual(modes);
    expect(zsh("pihost plans approve X --mode=au")).toEqual(["auto"]);
  });

  it("offers commands, subcommands, options and choices", async () => {
    expect(zsh("pihost pl")).toEqual(["plans", "plugins"]);
    expect(zsh("pihost plans ").sort()).toEqual((await helpCommands(["plans"])).sort());
    expect(zsh("pihost session create --perm")).toEqual(["--permission-mode"]);
    expect(zsh("pihost session create --permission-mode ").sort()).toEqual([...PERMISSION_MODES].sort());
    expect(zsh("pihost completion ")).toEqual(["bash", "zsh"]);
  });

  it("completes files for --script and nothing for ids", () => {
    expect(zsh("pihost session create --script st")).toEqual(["steps.json"]);
    expect(zsh("pihost plans approve ")).toEqual([]);
  });
});
