// The one list of system packages (infra/system-packages.txt): .ci/run and the Dockerfile both
// install from it through the one script (infra/host-system.sh), which also creates the sandbox
// user; neither installs a host package of its own; and every program the host's tools look up
// is one the list provides (the image proof, `npm run image:proof`, installs it for real).
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "./support/processes.ts";

const read = (p: string) => readFileSync(path.join(REPO_ROOT, p), "utf8");
/** The list's entries: package and the command (or absolute file) that says it is installed. */
const entries = read("infra/system-packages.txt")
  .split("\n")
  .map((l) => l.replace(/#.*/, "").trim())
  .filter(Boolean)
  .map((l) => {
    const [pkg, check, ...rest] = l.split(/\s+/);
    return { pkg: pkg!, check: check!, rest };
  });

function hostSources(dir: string): string[] {
  return readdirSync(dir).flatMap((e) => {
    const p = path.join(dir, e);
    if (statSync(p).isDirectory()) return hostSources(p);
    return p.endsWith(".ts") && !p.endsWith(".test.ts") ? [p] : [];
  });
}

describe("infra/system-packages.txt", () => {
  it("is one package and one check a line", () => {
    expect(entries.length).toBeGreaterThanOrEqual(6);
    for (const e of entries) {
      expect(e.pkg, e.pkg).toMatch(/^[a-z0-9][a-z0-9+.-]+$/);
      expect(e.check, e.pkg).toMatch(/^(\/[\w./-]+|[\w.+-]+)$/);
      expect(e.rest, e.pkg).toEqual([]);
    }
    const packages = entries.map((e) => e.pkg);
    for (const needed of ["bubblewrap", "slirp4netns", "ripgrep", "acl", "git", "chromium"])
      expect(packages).toContain(needed);
  });

  it("provides every program the host's tools run", () => {
    const provided = new Set(entries.map((e) => path.basename(e.check)));
    const run = new Set<string>();
    for (const file of hostSources(path.join(REPO_ROOT, "services/host"))) {
      const text = readFileSync(file, "utf8");
      for (const m of text.matchAll(/findProgram\("([\w-]+)"\)/g)) run.add(m[1]!);
      for (const m of text.matchAll(/"\/usr\/bin\/([\w-]+)"/g)) run.add(m[1]!);
      for (const m of text.matchAll(/\brun\("([\w-]+)", \[/g)) run.add(m[1]!);
    }
    // From the base system itself (Debian's essential packages and node's image), not the list.
    const base = new Set(["node", "getent", "mkfifo", "id", "ls", "test"]);
    // getfacl comes with setfacl (acl).
    const alongside: Record<string, string> = { getfacl: "setfacl" };
    expect(run.size).toBeGreaterThanOrEqual(5);
    for (const program of run) {
      if (base.has(program)) continue;
      expect(provided.has(alongside[program] ?? program), `${program} in infra/system-packages.txt`).toBe(
        true,
      );
    }
  });
});

describe("the one script", () => {
  it("reads the list beside it, installs only what is missing, creates the sandbox user", () => {
    const script = read("infra/host-system.sh");
    expect(script).toMatch(/list="\$here\/system-packages\.txt"/);
    expect(script).toMatch(/apt-get install -y --no-install-recommends \$missing/);
    expect(script).toMatch(/useradd --system .*--no-create-home --shell \/usr\/sbin\/nologin "\$user"/);
    execFileSync("sh", ["-n", path.join(REPO_ROOT, "infra/host-system.sh")]);
  });

  it("finds everything installed here and says so, changing nothing (this machine ran it through .ci/run)", () => {
    const out = execFileSync("sh", [path.join(REPO_ROOT, "infra/host-system.sh")], { encoding: "utf8" });
    expect(out).toContain(
      `system packages already installed (${entries.length} from infra/system-packages.txt)`,
    );
    expect(out).toMatch(/sandbox user \S+ exists/);
  });
});

describe("both installers use it", () => {
  it(".ci/run runs the script and installs no package itself", () => {
    const ci = read(".ci/run");
    expect(ci).toMatch(/^run sh infra\/host-system\.sh "\$\{ci_packages\[@\]\}"$/m);
    expect(ci).not.toMatch(/apt-get install/);
    expect(ci).not.toMatch(/useradd/);
    // The suite's own packages are not the host's: none of them is in the list.
    const ciOnly =
      /^ci_packages=\((.*)\)$/m
        .exec(ci)?.[1]
        ?.split(/\s+/)
        .map((p) => p.split(":")[0]) ?? [];
    expect(ciOnly).toEqual(["nats-server", "zsh", "tmux"]);
    for (const p of ciOnly) expect(entries.map((e) => e.pkg)).not.toContain(p);
  });

  it("the Dockerfile's runtime copies the list with the script and runs it, installing nothing else", () => {
    const dockerfile = read("Dockerfile");
    const runtime = dockerfile.slice(dockerfile.indexOf("AS runtime"));
    expect(runtime).toContain("COPY infra/system-packages.txt infra/host-system.sh /opt/pihost/setup/");
    expect(runtime).toMatch(
      /RUN PI_SANDBOX_UID=10001 PI_APT_CLEAN=1 sh \/opt\/pihost\/setup\/host-system\.sh/,
    );
    expect(dockerfile).not.toMatch(/apt-get install|useradd/);
    // The image proof builds its root filesystem with the same script and uid.
    const rootfs = read("infra/image-rootfs.sh");
    expect(rootfs).toContain("PI_SANDBOX_UID=10001 PI_APT_CLEAN=1 sh /opt/pihost/setup/host-system.sh");
    expect(rootfs).toContain("cp infra/system-packages.txt infra/host-system.sh");
  });

  it("the image proof is its own command, not part of npm test", () => {
    const pkg = JSON.parse(read("package.json"));
    expect(pkg.scripts["image:proof"]).toContain("infra/image-rootfs.sh");
    expect(pkg.scripts["image:proof"]).toContain("infra/image-proof/vitest.config.ts");
    expect(pkg.scripts.test).not.toMatch(/image/);
    // The integration project's files end in .test.ts; the proof does not.
    expect(readdirSync(path.join(REPO_ROOT, "tests"))).toContain("deploy-image.proof.ts");
  });
});
