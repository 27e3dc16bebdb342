// Shell completion scripts for `pihost completion bash|zsh`, generated from the live commander tree:
// every visible command, option and `.choices()` value is read from the tree at run time, so a command
// added later is completed without touching this file. Completing never runs pihost or asks the host.
import type { Argument, Command, Option } from "commander";

export const SHELLS = ["bash", "zsh"] as const;
export type Shell = (typeof SHELLS)[number];

/**
 * The one list of values that are paths, by an option's long flag or an argument's `<name>`: the
 * shell completes files (or folders) for them. Every other value is completed only from its
 * `.choices()`; ids are never completed.
 */
export const PATH_VALUES: Readonly<Record<string, "file" | "dir">> = {
  "--script": "file",
  "--prompt-file": "file",
  "--users": "file",
  "--out": "file",
  "--secrets": "file",
  "--root": "dir",
  "<manifest.json>": "file",
};

/** How an option's value is completed. */
type ValueKind =
  | { kind: "choices"; choices: string[] }
  | { kind: "file" }
  | { kind: "dir" }
  | { kind: "none" };

interface OptionSpec {
  /** The short and long flags, e.g. ["-q", "--quiet"]. */
  flags: string[];
  description: string;
  /** null: the option takes no value. */
  value: ValueKind | null;
}

interface ArgumentSpec {
  name: string;
  value: ValueKind;
  variadic: boolean;
}

/** One command of the tree, named by its path of command names below the root ("" is the root). */
interface CommandSpec {
  path: string;
  /** Subcommands by the name to offer, with every name (aliases too) that selects them. */
  subcommands: { name: string; names: string[]; description: string }[];
  /** Its own options, then those of its ancestors (commander parses a parent's options anywhere). */
  options: OptionSpec[];
  arguments: ArgumentSpec[];
}

function optionSpec(o: Option): OptionSpec {
  const flags = [o.short, o.long].filter((f): f is string => f !== undefined);
  let value: ValueKind | null = null;
  if (o.required || o.optional) {
    const pathKind = o.long === undefined ? undefined : PATH_VALUES[o.long];
    value = o.argChoices
      ? { kind: "choices", choices: [...o.argChoices] }
      : pathKind
        ? { kind: pathKind }
        : { kind: "none" };
  }
  return { flags, description: o.description, value };
}

function argumentSpec(a: Argument, choices = a.argChoices): ArgumentSpec {
  const pathKind = PATH_VALUES[`<${a.name()}>`];
  const value: ValueKind = choices
    ? { kind: "choices", choices: [...choices] }
    : pathKind
      ? { kind: pathKind }
      : { kind: "none" };
  return { name: a.name(), value, variadic: a.variadic };
}

/** `own`, then the options of `inherited` whose flags `own` does not use (a nearer option wins). */
function merge(own: OptionSpec[], inherited: OptionSpec[]): OptionSpec[] {
  const taken = new Set(own.flatMap((o) => o.flags));
  return [...own, ...inherited.filter((o) => !o.flags.some((f) => taken.has(f)))];
}

/** Every visible command of the tree under `root`, depth first, with what completes after it. */
export function completionSpec(root: Command): CommandSpec[] {
  const specs: CommandSpec[] = [];
  const walk = (cmd: Command, path: string[], inherited: OptionSpec[]) => {
    const help = cmd.createHelp();
    const options = merge(help.visibleOptions(cmd).map(optionSpec), inherited);
    const visible = help.visibleCommands(cmd);
    specs.push({
      path: path.join(" "),
      subcommands: visible.map((c) => ({
        name: c.name(),
        names: [c.name(), ...c.aliases()],
        description: c.description(),
      })),
      options,
      arguments: cmd.registeredArguments.map((a) => argumentSpec(a)),
    });
    // A parent's own options (not its help flag) stay valid after its subcommand.
    const passDown = merge(cmd.options.filter((o) => !o.hidden).map(optionSpec), inherited);
    for (const sub of visible) {
      if (cmd.commands.includes(sub)) {
        walk(sub, [...path, sub.name()], passDown);
        continue;
      }
      // Commander's implicit `help [command]`: its argument is one of its siblings.
      const siblings = visible.filter((c) => c !== sub).map((c) => c.name());
      specs.push({
        path: [...path, sub.name()].join(" "),
        subcommands: [],
        options: merge(sub.createHelp().visibleOptions(sub).map(optionSpec), passDown),
        arguments: sub.registeredArguments.map((a, i) => argumentSpec(a, i === 0 ? siblings : undefined)),
      });
    }
  };
  walk(root, [], []);
  return specs;
}

/** A word in single quotes, safe for bash and zsh whatever it contains. */
const q = (s: string) => `'${s.replace(/'/g, "'\\''")}'`;
const words = (xs: string[]) => xs.map(q).join(" ");
/** zsh's _describe entries: `name:description`, a colon in the name escaped. */
const described = (name: string, description: string) =>
  q(`${name.replace(/:/g, "\\:")}:${description.replace(/\s+/g, " ").trim()}`);

/** The shell function name for a program name (`pihost` → `_pihost`). */
const fnName = (program: string) => `_${program.replace(/[^A-Za-z0-9_]/g, "_")}`;

function rootOf(cmd: Command): Command {
  let c = cmd;
  while (c.parent) c = c.parent;
  return c;
}

/** The tree as four lookup functions of case statements (the same in both shells but for zsh's descriptions). */
function lookupFunctions(fn: string, specs: CommandSpec[], shell: Shell): string {
  const spec = specs.map((s) => {
    const subs =
      shell === "zsh"
        ? s.subcommands.map((c) => described(c.name, c.description)).join(" ")
        : words(s.subcommands.map((c) => c.name));
    const opts =
      shell === "zsh"
        ? s.options.flatMap((o) => o.flags.map((f) => described(f, o.description))).join(" ")
        : words(s.options.flatMap((o) => o.flags));
    const vals = words(s.options.filter((o) => o.value !== null).flatMap((o) => o.flags));
    return `    ${q(s.path)}) subs=(${subs}); opts=(${opts}); vals=(${vals}); nargs=${s.arguments.length}; variadic=${s.arguments.at(-1)?.variadic ? 1 : 0} ;;`;
  });
  const sub = specs.flatMap((s) =>
    s.subcommands.flatMap((c) =>
      c.names.map(
        (n) => `    ${q(`${s.path}|${n}`)}) REPLY=${q(s.path ? `${s.path} ${c.name}` : c.name)} ;;`,
      ),
    ),
  );
  const set = (v: ValueKind) =>
    v.kind === "choices" ? `kind=choices; choices=(${words(v.choices)})` : `kind=${v.kind}`;
  const values = specs.flatMap((s) =>
    s.options.flatMap(({ flags, value }) =>
      value === null || value.kind === "none"
        ? []
        : flags.map((f) => `    ${q(`${s.path}|${f}`)}) ${set(value)} ;;`),
    ),
  );
  const args = specs.flatMap((s) =>
    // Earlier patterns win, so a variadic last argument's `*` takes only the indexes after the others.
    s.arguments.map(
      (a, i) =>
        `    ${a.variadic ? `${q(`${s.path}|`)}*` : q(`${s.path}|${i}`)}) argname=${q(a.name)}; ${set(a.value)} ;;`,
    ),
  );
  return `# Sets subs, opts, vals (the options that take a value), nargs and variadic for command path $1.
${fn}_spec() {
  subs=(); opts=(); vals=(); nargs=0; variadic=0
  case $1 in
${spec.join("\n")}
  esac
}

# Sets REPLY to the command path that word $2 selects under command path $1; fails if it is none.
${fn}_sub() {
  case "$1|$2" in
${sub.join("\n")}
    *) return 1 ;;
  esac
}

# Sets kind (choices, file, dir or none) and choices for the value of option $2 of command path $1.
${fn}_values() {
  kind=none; choices=()
  case "$1|$2" in
${values.join("\n")}
  esac
}

# Sets argname, kind and choices for positional argument $2 (from 0) of command path $1.
${fn}_arg() {
  argname=''; kind=none; choices=()
  case "$1|$2" in
${args.join("\n")}
  esac
}`;
}

function bashScript(program: string, fn: string, specs: CommandSpec[]): string {
  return `# bash completion for ${program}, generated by \`${program} completion bash\` from its command tree.
# Load it with: source <(${program} completion bash)
# Ids are not completed (that would need the host); files are, for the options that take one.

${lookupFunctions(fn, specs, "bash")}

# Offers the words of the remaining arguments that start with $cur, each with $prefix before it.
${fn}_offer() {
  local c
  for c in "$@"; do [[ $c == "$cur"* ]] && COMPREPLY+=("$prefix$c"); done
  return 0
}

# Completes $cur as the value kind and choices describe (set by ${fn}_values or ${fn}_arg).
${fn}_value() {
  local c
  case $kind in
    choices) ${fn}_offer "\${choices[@]}" ;;
    file | dir)
      compopt -o filenames 2>/dev/null
      while IFS= read -r c; do COMPREPLY+=("$prefix$c"); done < <(compgen "-\${kind:0:1}" -- "$cur")
      ;;
  esac
  return 0
}

${fn}() {
  local cur=\${COMP_WORDS[COMP_CWORD]} cpath='' w want='' prefix='' REPLY kind argname c
  local -i i=1 npos=0 ddash=0 nargs variadic
  local -a subs opts vals choices
  COMPREPLY=()
  while (( i < COMP_CWORD )); do
    w=\${COMP_WORDS[i]}
    if (( ddash )); then
      npos+=1
    elif [[ $w == -- ]]; then
      ddash=1
    elif [[ $w == -?* ]]; then
      ${fn}_spec "$cpath"
      if [[ $w != *=* ]] && [[ " \${vals[*]} " == *" $w "* ]]; then
        # Its value is the next word, or the word after "=" when COMP_WORDBREAKS split --opt=value.
        if [[ \${COMP_WORDS[i+1]} == = ]]; then
          if (( i + 1 == COMP_CWORD )); then want=$w; cur=''; break; fi
          i+=1
        fi
        if (( i + 1 == COMP_CWORD )); then want=$w; break; fi
        i+=1
      fi
    elif (( npos == 0 )) && ${fn}_sub "$cpath" "$w"; then
      cpath=$REPLY
    else
      npos+=1
    fi
    i+=1
  done
  if [[ -z $want ]] && (( ! ddash )) && [[ $cur == --*=* ]]; then
    want=\${cur%%=*}; prefix="$want="; cur=\${cur#*=}
  fi
  if [[ -n $want ]]; then
    ${fn}_values "$cpath" "$want"
    ${fn}_value
    return 0
  fi
  ${fn}_spec "$cpath"
  if (( ! ddash )) && [[ $cur == -* ]]; then
    ${fn}_offer "\${opts[@]}"
  elif (( npos == 0 && \${#subs[@]} > 0 )); then
    ${fn}_offer "\${subs[@]}"
  elif (( npos < nargs || variadic )); then
    ${fn}_arg "$cpath" "$npos"
    ${fn}_value
  elif (( ! ddash )); then
    ${fn}_offer "\${opts[@]}"
  fi
  return 0
}

complete -F ${fn} ${program}
`;
}

function zshScript(program: string, fn: string, specs: CommandSpec[]): string {
  return `#compdef ${program}
# zsh completion for ${program}, generated by \`${program} completion zsh\` from its command tree.
# Install it as a file named ${fn} in a folder of $fpath (before compinit runs), or source it after compinit.
# Ids are not completed (that would need the host); files are, for the options that take one.

${lookupFunctions(fn, specs, "zsh")}

# Completes the value kind and choices describe (set by ${fn}_values or ${fn}_arg); $1 names it.
${fn}_value() {
  case $kind in
    choices) compadd -a choices ;;
    file) _files ;;
    dir) _files -/ ;;
    *) _message "$1" ;;
  esac
}

${fn}() {
  local cpath='' w want='' REPLY kind argname
  local -i i=2 npos=0 ddash=0 nargs variadic
  local -a subs opts vals choices
  while (( i < CURRENT )); do
    w=\${words[i]}
    if (( ddash )); then
      npos+=1
    elif [[ $w == -- ]]; then
      ddash=1
    elif [[ $w == -?* ]]; then
      ${fn}_spec "$cpath"
      if [[ $w != *=* ]] && (( \${vals[(Ie)$w]} )); then
        if (( i + 1 == CURRENT )); then want=$w; break; fi
        i+=1
      fi
    elif (( npos == 0 )) && ${fn}_sub "$cpath" "$w"; then
      cpath=$REPLY
    else
      npos+=1
    fi
    i+=1
  done
  if [[ -z $want ]] && (( ! ddash )) && [[ $PREFIX == --*=* ]]; then
    want=\${PREFIX%%=*}
    compset -P '*='
  fi
  if [[ -n $want ]]; then
    ${fn}_values "$cpath" "$want"
    ${fn}_value "value of $want"
    return
  fi
  ${fn}_spec "$cpath"
  if (( ! ddash )) && [[ $PREFIX == -* ]]; then
    _describe -t options option opts
  elif (( npos == 0 && \${#subs} > 0 )); then
    _describe -t commands command subs
  elif (( npos < nargs || variadic )); then
    ${fn}_arg "$cpath" "$npos"
    ${fn}_value "$argname"
  elif (( ! ddash )); then
    _describe -t options option opts
  fi
}

# Autoloaded from $fpath the file is the function's body: complete now; sourced, register it.
if [[ \${zsh_eval_context[-1]} == loadautofunc ]]; then
  ${fn} "$@"
else
  compdef ${fn} ${program}
fi
`;
}

/**
 * The completion script for `shell` of the program `cmd` belongs to (any command of the tree: the
 * root is found from it). The script holds the tree as data and never runs the program.
 */
export function completionScript(cmd: Command, shell: Shell): string {
  const root = rootOf(cmd);
  const specs = completionSpec(root);
  const fn = fnName(root.name());
  return shell === "bash" ? bashScript(root.name(), fn, specs) : zshScript(root.name(), fn, specs);
}
